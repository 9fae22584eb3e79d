import type { Realm, User } from '../db/tables.js';
import type { ActionServices } from '../services.js';
import { badRequest } from '../errors.js';
import { fetchStreamById } from '../db/repos/streams.js';
import { fetchUsersByIds } from '../db/repos/users.js';
import { accessMessage } from '../lib/access/messages.js';
import { REPORT_MESSAGE_REASONS } from '../lib/format/settings.js';
import { messageReportContent, messageReportTopic } from '../lib/message_report.js';
import { realmSettings } from '../lib/realm_settings.js';
import { fetchSystemBot } from '../lib/system_bots.js';
import { realmUrl } from '../lib/urls.js';
import { checkSendMessage, doSendMessage, type PreparedMessage } from './messages.js';

/**
 * Every check of POST /messages/{id}/report (Zulip's report_message_backend): a known
 * reason, notes for "other", a moderation request channel, a message the reporter can read
 * (their own included); then the Notification Bot's message, checked as any message is, so a
 * report that could not be delivered is an error rather than lost.
 */
export async function checkReportMessage(
  services: ActionServices,
  realm: Realm,
  reporter: User,
  messageId: number,
  reportType: string,
  description: string,
): Promise<PreparedMessage> {
  const db = services.db.kysely;
  if (!(reportType in REPORT_MESSAGE_REASONS)) throw badRequest('Invalid report_type');
  if (reportType === 'other' && description === '') throw badRequest('An explanation is required.');
  const channelId = realmSettings(realm).moderation_request_channel_id;
  const channel = channelId === -1 ? undefined : await fetchStreamById(db, realm.id, channelId);
  if (!channel || channel.deactivated) throw badRequest('Message reporting is not enabled in this organization.');
  const { message } = await accessMessage(db, realm, reporter, messageId);
  const participantIds = message.dm_key ? message.dm_key.split(',').map(Number) : [];
  const people = new Map((await fetchUsersByIds(db, realm.id, [message.sender_id, ...participantIds])).map((u) => [u.id, u]));
  const sender = people.get(message.sender_id)!;
  const stream = message.type === 'stream' ? await fetchStreamById(db, realm.id, message.stream_id!) : undefined;
  const content = messageReportContent(
    {
      reporter,
      message,
      sender,
      stream,
      participants: participantIds.map((id) => people.get(id)!),
      realmUrl: realmUrl(services.config, realm),
    },
    reportType,
    description,
  );
  const settings = realmSettings(realm);
  const policy = channel.topics_policy === 'inherit' ? settings.topics_policy : channel.topics_policy;
  const bot = await fetchSystemBot(db, services.config, realm, 'notification');
  return checkSendMessage(services, realm, bot, {
    type: 'stream',
    to: String(channel.id),
    topic: messageReportTopic(sender, policy === 'empty_topic_only'),
    content,
    client: 'Internal',
  });
}

export async function doReportMessage(services: ActionServices, prepared: PreparedMessage): Promise<void> {
  await doSendMessage(services, prepared);
}
