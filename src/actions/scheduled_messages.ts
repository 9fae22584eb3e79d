import type { Insertable, Updateable } from 'kysely';
import { now, transaction, type Tx } from '../db/index.js';
import type { Message, Realm, ScheduledMessageTable, User } from '../db/tables.js';
import {
  REMIND,
  SEND_LATER,
  claimScheduledMessage,
  deleteScheduledMessageRow,
  fetchDueScheduledMessageIds,
  fetchUserScheduledMessage,
  insertScheduledMessage,
  markScheduledMessageDelivered,
  markScheduledMessageFailed,
  updateUndeliveredScheduledMessage,
  type ScheduledMessageRow,
} from '../db/repos/scheduled_messages.js';
import { fetchRealmById } from '../db/repos/realms.js';
import { fetchStreamById } from '../db/repos/streams.js';
import { fetchUserById, fetchUsersByIds } from '../db/repos/users.js';
import { JsonableError, badRequest } from '../errors.js';
import { accessMessage } from '../lib/access/messages.js';
import { formatReminder, formatScheduledMessage } from '../lib/format/scheduled_messages.js';
import { realmSettings } from '../lib/realm_settings.js';
import { normalizeReminderNote, reminderContent } from '../lib/reminders.js';
import { fetchSystemBot } from '../lib/system_bots.js';
import { realmUrl } from '../lib/urls.js';
import type { Services } from '../services.js';
import { checkSendMessage, defaultReadBySender, doSendMessage, type PreparedMessage } from './messages.js';

/** Zulip's SCHEDULED_MESSAGE_LATE_CUTOFF_MINUTES: a message more than this late is not sent. */
export const SCHEDULED_MESSAGE_LATE_CUTOFF_SECONDS = 10 * 60;
/** How long a process holds a due row while it delivers it; another process may retry after. */
const CLAIM_SECONDS = 60;

const scheduledMessageDoesNotExist = (): JsonableError => new JsonableError('Scheduled message does not exist', 'BAD_REQUEST', 404);
const reminderDoesNotExist = (): JsonableError => new JsonableError('Reminder does not exist', 'BAD_REQUEST', 404);

/** Zulip's DeliveryTimeNotInFutureError. */
export function checkDeliveryTimeInFuture(timestamp: number): void {
  if (timestamp <= Date.now() / 1000) throw badRequest('Scheduled delivery time must be in the future.');
}

/** Zulip's extract_stream_id: the `to` of a scheduled channel message is one channel ID. */
export function extractStreamId(raw: string): number {
  if (!/^\s*[+-]?\d+\s*$/.test(raw)) throw badRequest('Invalid data type for channel ID');
  return Number(raw.trim());
}

/** Zulip's extract_direct_message_recipient_ids: a JSON list of user IDs, without repeats. */
export function extractDirectMessageRecipientIds(raw: string): number[] {
  let data: unknown = raw;
  try {
    data = JSON.parse(raw);
  } catch {
    // Not JSON: Zulip keeps the raw string, which is no list.
  }
  if (!Array.isArray(data)) throw badRequest('Invalid data type for recipients');
  for (const id of data) if (!Number.isSafeInteger(id)) throw badRequest('Recipient list may only contain user IDs');
  return [...new Set(data as number[])];
}

export async function accessScheduledMessage(services: Services, user: User, id: number): Promise<ScheduledMessageRow> {
  const row = await fetchUserScheduledMessage(services.db.kysely, user.id, id, SEND_LATER);
  if (!row) throw scheduledMessageDoesNotExist();
  return row;
}

export async function accessReminder(services: Services, user: User, id: number): Promise<ScheduledMessageRow> {
  const row = await fetchUserScheduledMessage(services.db.kysely, user.id, id, REMIND);
  if (!row) throw reminderDoesNotExist();
  return row;
}

/** What a checked message would be addressed to, as stored in a scheduled_messages row. */
function addressFields(p: PreparedMessage): { type: string; stream_id: number | null; topic: string; to_user_ids: string } {
  const t = p.target;
  if (t.kind === 'stream') return { type: 'stream', stream_id: t.stream.id, topic: t.topic, to_user_ids: '[]' };
  const others = t.participants.filter((u) => u.id !== p.sender.id).map((u) => u.id);
  return { type: 'private', stream_id: null, topic: '', to_user_ids: JSON.stringify(others.length ? others : [p.sender.id]) };
}

export interface ScheduleRequest {
  type: 'stream' | 'private';
  /** The raw `to` parameter. */
  to: string;
  topic: string | undefined;
  content: string;
  client: string;
}

/** Every check of sending the message now (Zulip's check_message), with `to` read as Zulip's scheduled-message endpoints read it. */
async function checkScheduledSend(services: Services, realm: Realm, sender: User, req: ScheduleRequest): Promise<PreparedMessage> {
  const to = req.type === 'stream' ? String(extractStreamId(req.to)) : JSON.stringify(extractDirectMessageRecipientIds(req.to));
  return checkSendMessage(services, realm, sender, { type: req.type, to, topic: req.topic, content: req.content, client: req.client });
}

export interface PreparedSchedule {
  sender: User;
  fields: Insertable<ScheduledMessageTable>;
}

/** Zulip's check_schedule_message: the message must be sendable now; it is checked again when it is due. */
export async function checkScheduleMessage(
  services: Services,
  realm: Realm,
  sender: User,
  req: ScheduleRequest,
  deliverAt: number,
  readBySender: boolean | undefined,
): Promise<PreparedSchedule> {
  checkDeliveryTimeInFuture(deliverAt);
  const p = await checkScheduledSend(services, realm, sender, req);
  const address = addressFields(p);
  const toSelf = p.target.kind === 'private' && p.target.participants.length === 1;
  return {
    sender,
    fields: {
      realm_id: realm.id,
      sender_id: sender.id,
      delivery_type: SEND_LATER,
      ...address,
      content: p.content,
      rendered_content: p.rendered.html,
      scheduled_timestamp: deliverAt,
      request_timestamp: now(),
      // Zulip's legacy default: read for its sender when sent from a full client, unless to oneself.
      read_by_sender: (readBySender ?? (defaultReadBySender(req.client) && !toSelf)) ? 1 : 0,
      sending_client: req.client,
      reminder_target_message_id: null,
      reminder_note: null,
    },
  };
}

async function insertScheduled(services: Services, prepared: PreparedSchedule): Promise<ScheduledMessageRow> {
  const { sender, fields } = prepared;
  const row = await transaction(services.db, async (tx, afterCommit) => {
    const inserted = await insertScheduledMessage(tx, fields);
    afterCommit(() => {
      const event =
        fields.delivery_type === REMIND
          ? { type: 'reminders', op: 'add', reminders: [formatReminder(inserted)] }
          : { type: 'scheduled_messages', op: 'add', scheduled_messages: [formatScheduledMessage(inserted)] };
      services.events.send(sender.realm_id, event, [sender.id]);
    });
    return inserted;
  });
  services.scheduler?.wake(Number(fields.scheduled_timestamp));
  return row;
}

export async function doScheduleMessage(services: Services, prepared: PreparedSchedule): Promise<ScheduledMessageRow> {
  return insertScheduled(services, prepared);
}

export interface ScheduledMessageEdit {
  type?: 'stream' | 'private';
  to?: string;
  topic?: string;
  content?: string;
  deliverAt?: number;
  client: string;
}

/** Zulip's edit_scheduled_message checks: the changed message must still be sendable. */
export async function checkEditScheduledMessage(
  services: Services,
  realm: Realm,
  sender: User,
  row: ScheduledMessageRow,
  edit: ScheduledMessageEdit,
): Promise<Updateable<ScheduledMessageTable>> {
  if (row.delivered) throw badRequest('Scheduled message was already sent');
  if (row.failed && edit.deliverAt === undefined) throw badRequest('Scheduled delivery time must be in the future.');
  const changes: Updateable<ScheduledMessageTable> = { sending_client: edit.client };
  const existingType = row.type as 'stream' | 'private';
  const recipientChanged = edit.type !== undefined || edit.to !== undefined;
  const topicChanged = edit.topic !== undefined && existingType === 'stream' && !recipientChanged;
  if (recipientChanged || edit.content !== undefined || topicChanged) {
    const type = edit.type ?? existingType;
    const to = edit.to ?? (existingType === 'stream' ? String(row.stream_id) : row.to_user_ids);
    const p = await checkScheduledSend(services, realm, sender, {
      type,
      to,
      topic: edit.topic ?? row.topic,
      content: edit.content ?? row.content,
      client: edit.client,
    });
    const address = addressFields(p);
    if (recipientChanged) Object.assign(changes, address);
    else if (topicChanged) changes.topic = address.topic;
    if (edit.content !== undefined) {
      changes.content = p.content;
      changes.rendered_content = p.rendered.html;
    }
  }
  if (edit.deliverAt !== undefined) changes.scheduled_timestamp = edit.deliverAt;
  if (row.failed) {
    changes.failed = 0;
    changes.failure_message = null;
  }
  // A delivery attempt in progress loses its claim, so it cannot send the old version.
  changes.claimed_until = null;
  return changes;
}

export async function doEditScheduledMessage(services: Services, sender: User, row: ScheduledMessageRow, changes: Updateable<ScheduledMessageTable>): Promise<void> {
  const updated = await transaction(services.db, async (tx, afterCommit) => {
    const r = await updateUndeliveredScheduledMessage(tx, row.id, changes);
    // Delivered between the check and this update.
    if (!r) throw badRequest('Scheduled message was already sent');
    afterCommit(() => services.events.send(sender.realm_id, { type: 'scheduled_messages', op: 'update', scheduled_message: formatScheduledMessage(r) }, [sender.id]));
    return r;
  });
  services.scheduler?.wake(Number(updated.scheduled_timestamp));
}

export async function doDeleteScheduledMessage(services: Services, sender: User, row: ScheduledMessageRow): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await deleteScheduledMessageRow(tx, row.id);
    const event =
      row.delivery_type === REMIND
        ? { type: 'reminders', op: 'remove', reminder_id: row.id }
        : { type: 'scheduled_messages', op: 'remove', scheduled_message_id: row.id };
    afterCommit(() => services.events.send(sender.realm_id, event, [sender.id]));
  });
}

// ---------------------------------------------------------------------------------------------
// Reminders.

/** The reminder's text for `message`, read through `db` (a transaction's, on import). */
export async function reminderText(db: Tx, config: Services['config'], realm: Realm, message: Message, note: string | null): Promise<string> {
  // Users are deactivated, never deleted: a message's sender always exists.
  const [sender] = await fetchUsersByIds(db, realm.id, [message.sender_id]);
  const stream = message.stream_id !== null ? await fetchStreamById(db, realm.id, message.stream_id) : undefined;
  const participantIds = message.dm_key ? message.dm_key.split(',').map(Number) : [];
  const others = participantIds.filter((id) => id !== message.sender_id);
  const otherUsers = others.length ? await fetchUsersByIds(db, realm.id, others) : [];
  return reminderContent(
    {
      message,
      sender: sender!,
      stream: stream ? { id: stream.id, name: stream.name } : undefined,
      otherRecipients: otherUsers.sort((a, b) => a.id - b.id),
      realmUrl: realmUrl(config, realm),
      emptyTopicDisplayName: realmSettings(realm).empty_topic_display_name,
    },
    note,
  );
}

/** Zulip's schedule_reminder_for_message: the reminder text is fixed now, and refreshed when it is sent. */
export async function checkCreateReminder(
  services: Services,
  realm: Realm,
  user: User,
  messageId: number,
  deliverAt: number,
  note: string | undefined,
  client: string,
): Promise<PreparedSchedule> {
  checkDeliveryTimeInFuture(deliverAt);
  const { message } = await accessMessage(services.db.kysely, realm, user, messageId);
  const cleanNote = note === undefined ? null : normalizeReminderNote(note) || null;
  const content = await reminderText(services.db.kysely, services.config, realm, message, cleanNote);
  // The reminder is a direct message to oneself: check that the user could send it.
  const p = await checkSendMessage(services, realm, user, { type: 'private', to: JSON.stringify([user.id]), topic: undefined, content, client });
  return {
    sender: user,
    fields: {
      realm_id: realm.id,
      sender_id: user.id,
      delivery_type: REMIND,
      type: 'private',
      stream_id: null,
      topic: '',
      to_user_ids: JSON.stringify([user.id]),
      content: p.content,
      rendered_content: p.rendered.html,
      scheduled_timestamp: deliverAt,
      request_timestamp: now(),
      read_by_sender: 0,
      sending_client: client,
      reminder_target_message_id: message.id,
      reminder_note: cleanNote,
    },
  };
}

export async function doCreateReminder(services: Services, prepared: PreparedSchedule): Promise<ScheduledMessageRow> {
  return insertScheduled(services, prepared);
}

// ---------------------------------------------------------------------------------------------
// Delivery.

/** Failures after which Zulip tells nobody: the organization or the sender's account is gone. */
class SilentFailure extends JsonableError {}

/** The row was delivered, edited, deleted or taken over by another process meanwhile. */
class ClaimLost extends Error {}

function sendWithin(services: Services, row: ScheduledMessageRow, p: PreparedMessage): Promise<{ id: number }> {
  const claimedUntil = row.claimed_until!;
  p.inTransaction = async (tx: Tx, message: Message) => {
    if (!(await markScheduledMessageDelivered(tx, row.id, message.id, claimedUntil))) throw new ClaimLost();
  };
  return doSendMessage(services, p);
}

/** Zulip's send_scheduled_message / send_reminder: every send rule applies as of now. */
async function sendScheduledMessage(services: Services, row: ScheduledMessageRow): Promise<void> {
  const db = services.db.kysely;
  const realm = await fetchRealmById(db, row.realm_id);
  if (!realm || realm.deactivated) throw new SilentFailure('This organization has been deactivated', 'REALM_DEACTIVATED', 401);
  const sender = await fetchUserById(db, realm.id, row.sender_id);
  if (!sender || !sender.is_active) throw new SilentFailure('Account is deactivated', 'USER_DEACTIVATED', 401);

  if (row.delivery_type === REMIND) {
    let content = row.content;
    try {
      const { message } = await accessMessage(db, realm, sender, Number(row.reminder_target_message_id));
      content = await reminderText(db, services.config, realm, message, row.reminder_note);
    } catch (e) {
      // No longer readable: the reminder keeps the text it was created with.
      if (!(e instanceof JsonableError)) throw e;
    }
    const bot = await fetchSystemBot(db, services.config, realm, 'notification');
    const p = await checkSendMessage(services, realm, bot, { type: 'private', to: JSON.stringify([sender.id]), topic: undefined, content, client: 'Internal' });
    await sendWithin(services, row, p);
    services.events.send(realm.id, { type: 'reminders', op: 'remove', reminder_id: row.id }, [sender.id]);
    return;
  }

  if (now() > Number(row.scheduled_timestamp) + SCHEDULED_MESSAGE_LATE_CUTOFF_SECONDS) {
    throw badRequest('Message could not be sent at the scheduled time.');
  }
  const p = await checkSendMessage(services, realm, sender, {
    type: row.type as 'stream' | 'private',
    to: row.type === 'stream' ? String(row.stream_id) : row.to_user_ids,
    topic: row.topic,
    content: row.content,
    client: row.sending_client,
    readBySender: !!row.read_by_sender,
  });
  await sendWithin(services, row, p);
  services.events.send(realm.id, { type: 'scheduled_messages', op: 'remove', scheduled_message_id: row.id }, [sender.id]);
}

/** Zulip's datetime_to_global_time: a <time:...> Markdown timestamp in UTC. */
function globalTime(timestamp: number): string {
  return `<time:${new Date(timestamp * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00')}>`;
}

/**
 * Zulip's failure path of try_deliver_one_scheduled_message: the row is marked failed with the
 * error's message; for a scheduled message (not a reminder) whose sender still exists, an update
 * event and a Notification Bot direct message tell them.
 */
async function failScheduledMessage(services: Services, row: ScheduledMessageRow, error: unknown): Promise<void> {
  const message = error instanceof JsonableError ? error.message : 'Internal server error';
  if (error instanceof JsonableError) services.log.info({ scheduledMessageId: row.id }, `Failed with message: ${message}`);
  else services.log.error({ err: error, scheduledMessageId: row.id }, 'Unexpected error sending scheduled message');
  const db = services.db.kysely;
  const failed = await markScheduledMessageFailed(db, row.id, message);
  if (!failed || failed.delivery_type === REMIND || error instanceof SilentFailure) return;
  const realm = await fetchRealmById(db, failed.realm_id);
  const sender = realm ? await fetchUserById(db, realm.id, failed.sender_id) : undefined;
  if (!realm || !sender || sender.is_system_bot) return;
  services.events.send(realm.id, { type: 'scheduled_messages', op: 'update', scheduled_message: formatScheduledMessage(failed) }, [sender.id]);
  const content =
    `The message you scheduled for ${globalTime(Number(failed.scheduled_timestamp))} was not sent because of the following error:` +
    `\n\n> ${message}\n\n[View scheduled messages](#scheduled)`;
  const bot = await fetchSystemBot(db, services.config, realm, 'notification');
  const p = await checkSendMessage(services, realm, bot, { type: 'private', to: JSON.stringify([sender.id]), topic: undefined, content, client: 'Internal' });
  await doSendMessage(services, p);
}

/**
 * One delivery attempt: claim the row (so one process works on it), send it through the normal
 * send path with the row marked delivered in the message's own transaction, or mark it failed.
 * Returns whether this process made the attempt.
 */
export async function deliverScheduledMessage(services: Services, id: number): Promise<boolean> {
  const at = now();
  const row = await claimScheduledMessage(services.db.kysely, id, at, at + CLAIM_SECONDS);
  if (!row) return false;
  services.log.info({ scheduledMessageId: row.id, senderId: row.sender_id }, 'Sending scheduled message');
  try {
    await sendScheduledMessage(services, row);
  } catch (e) {
    if (e instanceof ClaimLost) return true;
    await failScheduledMessage(services, row, e);
  }
  return true;
}

/** Attempts every due message, oldest first; returns how many this process attempted. */
export async function deliverDueScheduledMessages(services: Services): Promise<number> {
  let attempted = 0;
  for (;;) {
    const ids = await fetchDueScheduledMessageIds(services.db.kysely, now(), 100);
    for (const id of ids) if (await deliverScheduledMessage(services, id)) attempted++;
    if (ids.length < 100) return attempted;
  }
}
