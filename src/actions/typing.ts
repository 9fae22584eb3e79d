import type { Realm, User } from '../db/tables.js';
import type { ActionServices } from '../services.js';
import { badRequest } from '../errors.js';
import { fetchUsersByIds } from '../db/repos/users.js';
import { fetchFanoutSubscriptions } from '../db/repos/subscriptions.js';
import { ChannelCaller, accessStreamById, accessStreamForSend } from '../lib/access/streams.js';
import { realmSettings } from '../lib/realm_settings.js';
import { mapEmptyTopicAliases } from '../lib/topics.js';
import { userSettings } from '../lib/user_settings.js';
import { accessMessage } from '../lib/access/messages.js';
import { checkCanEditContent } from './messages.js';

/** Zulip's typing protocol intervals, sent to clients at register (server_typing_*). */
export const TYPING_STARTED_EXPIRY_PERIOD_MILLISECONDS = 45_000;
export const TYPING_STOPPED_WAIT_PERIOD_MILLISECONDS = 12_000;
export const TYPING_STARTED_WAIT_PERIOD_MILLISECONDS = 30_000;
/** Channels with more subscribers get no typing notifications (they would flood the event queues). */
export const MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS = 100;

export type TypingOp = 'start' | 'stop';

const person = (u: Pick<User, 'id' | 'email'>): { user_id: number; email: string } => ({ user_id: u.id, email: u.email });

/**
 * Direct-message typing (Zulip's check_send_typing_notification): the sender is added to
 * the recipients; one unknown ID rejects the whole request, since a partial list would
 * name a different conversation.
 */
export async function checkSendTypingNotification(services: ActionServices, realm: Realm, sender: User, to: number[], op: TypingOp): Promise<void> {
  if (to.length === 0) throw badRequest("Empty 'to' list");
  if (!userSettings(sender).send_private_typing_notifications) {
    throw badRequest('User has disabled typing notifications for direct messages');
  }
  const ids = to.includes(sender.id) ? [...to] : [...to, sender.id];
  const found = new Map((await fetchUsersByIds(services.db.kysely, realm.id, ids)).map((u) => [u.id, u]));
  const recipients: User[] = [];
  for (const id of ids) {
    const u = found.get(id);
    if (!u) throw badRequest(`Invalid user ID ${id}`);
    recipients.push(u);
  }
  doSendTypingNotification(services, realm, sender, recipients, op);
}

export function doSendTypingNotification(services: ActionServices, realm: Realm, sender: User, recipients: User[], op: TypingOp): void {
  const event = { type: 'typing', op, message_type: 'direct', sender: person(sender), recipients: recipients.map(person) };
  const notify = recipients.filter((u) => u.is_active && userSettings(u).receives_typing_notifications).map((u) => u.id);
  services.events.send(realm.id, event, notify);
}

/**
 * Channel-topic typing: the sender must be able to post to the channel; subscribers get
 * the event unless the channel is too large for typing notifications.
 */
export async function checkSendStreamTypingNotification(
  services: ActionServices,
  realm: Realm,
  sender: User,
  streamId: number,
  topic: string,
  op: TypingOp,
): Promise<void> {
  if (!userSettings(sender).send_stream_typing_notifications) {
    throw badRequest('User has disabled typing notifications for channel messages');
  }
  const caller = new ChannelCaller(services.db.kysely, realm, sender);
  await accessStreamById(caller, streamId);
  await accessStreamForSend(caller, { id: streamId });
  const topicName = mapEmptyTopicAliases(topic.trim(), realmSettings(realm).empty_topic_display_name);
  await doSendStreamTypingNotification(services, realm, sender, streamId, topicName, op);
}

export async function doSendStreamTypingNotification(
  services: ActionServices,
  realm: Realm,
  sender: User,
  streamId: number,
  topic: string,
  op: TypingOp,
): Promise<void> {
  const db = services.db.kysely;
  const subscribers = await fetchFanoutSubscriptions(db, streamId);
  if (subscribers.length > MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS) return;
  const users = await fetchUsersByIds(db, realm.id, subscribers.map((s) => s.user_id));
  const notify = users.filter((u) => userSettings(u).receives_typing_notifications).map((u) => u.id);
  const event = { type: 'typing', op, message_type: 'stream', sender: person(sender), stream_id: streamId, topic };
  services.events.send(realm.id, event, notify);
}

/**
 * Message-edit typing (Zulip's send_message_edit_notification_backend): only someone who may
 * edit the message's content now (no grace period) announces editing it, to whoever would see
 * the edit: the channel's subscribers (unless the channel is too large for typing
 * notifications) or the conversation's participants.
 */
export async function checkSendMessageEditTypingNotification(services: ActionServices, realm: Realm, editor: User, messageId: number, op: TypingOp): Promise<void> {
  const db = services.db.kysely;
  const { message } = await accessMessage(db, realm, editor, messageId);
  checkCanEditContent(realm, editor, message, 0);
  if (message.type === 'stream') {
    if (!userSettings(editor).send_stream_typing_notifications) {
      throw badRequest('User has disabled typing notifications for channel messages');
    }
    const subscribers = await fetchFanoutSubscriptions(db, message.stream_id!);
    if (subscribers.length > MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS) return;
    const users = await fetchUsersByIds(db, realm.id, subscribers.map((s) => s.user_id));
    const notify = users.filter((u) => userSettings(u).receives_typing_notifications).map((u) => u.id);
    const recipient = { type: 'channel', channel_id: message.stream_id!, topic: message.topic };
    services.events.send(realm.id, { type: 'typing_edit_message', op, sender_id: editor.id, message_id: message.id, recipient }, notify);
    return;
  }
  if (!userSettings(editor).send_private_typing_notifications) {
    throw badRequest('User has disabled typing notifications for direct messages');
  }
  // Zulip lists the editor first in a one-to-one conversation, the group's members otherwise.
  const ids = message.dm_key!.split(',').map(Number);
  const ordered = ids.length === 2 ? [editor.id, ...ids.filter((id) => id !== editor.id)] : ids;
  const found = new Map((await fetchUsersByIds(db, realm.id, ordered)).map((u) => [u.id, u]));
  const notify = ordered.filter((id) => {
    const u = found.get(id);
    return u !== undefined && u.is_active && userSettings(u).receives_typing_notifications;
  });
  const recipient = { type: 'direct', user_ids: notify };
  services.events.send(realm.id, { type: 'typing_edit_message', op, sender_id: editor.id, message_id: message.id, recipient }, notify);
}
