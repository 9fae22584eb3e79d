import { REMIND, SEND_LATER, fetchUndeliveredScheduledMessages } from '../../db/repos/scheduled_messages.js';
import { formatReminder, formatScheduledMessage } from '../../lib/format/scheduled_messages.js';
import type { StateFetcher } from './types.js';

/** POST /register keys scheduled_messages and reminders: the user's undelivered ones, failed ones included. */
export const fetchScheduledMessagesState: StateFetcher = async ({ services, user, want }) => {
  const db = services.db.kysely;
  const out: Record<string, unknown> = {};
  if (want('scheduled_messages')) out.scheduled_messages = (await fetchUndeliveredScheduledMessages(db, user.id, SEND_LATER)).map(formatScheduledMessage);
  if (want('reminders')) out.reminders = (await fetchUndeliveredScheduledMessages(db, user.id, REMIND)).map(formatReminder);
  return out;
};
