import type { Config } from '../../config.js';
import type { Message, Realm, User } from '../../db/tables.js';
import { avatarUrl } from '../avatar.js';
import type { NotificationTrigger } from '../notification_data.js';
import { realmUrl } from '../urls.js';


/** Zulip truncates push content to 200 characters plus an ellipsis. */
const MAX_PUSH_CONTENT = 200;
/** Zulip's MAX_APNS_MESSAGE_IDS: a remove names the newest 200, within APNs' 4 KB. */
const MAX_REMOVE_IDS = 200;

function truncateContent(content: string): { content: string; truncated: boolean } {
  const chars = [...content];
  if (chars.length <= MAX_PUSH_CONTENT) return { content, truncated: false };
  return { content: `${chars.slice(0, MAX_PUSH_CONTENT).join('')}\u2026`, truncated: true };
}

export interface PushMessage {
  message: Pick<Message, 'id' | 'type' | 'stream_id' | 'topic' | 'dm_key' | 'content' | 'date_sent'>;
  sender: Pick<User, 'id' | 'email' | 'full_name' | 'avatar_source' | 'avatar_version' | 'delivery_email' | 'realm_id'>;
  /** The channel's name, for channel messages. */
  streamName: string | null;
  /** Full names of a direct-message conversation's participants (the recipient too); null for channels. */
  groupNames: string[] | null;
  /** The user group whose mention (not a personal one) made this a mention for the recipient. */
  mentionedGroup?: { id: number; name: string } | null;
}

/** Zulip's get_base_payload: which server, realm and account a notification is for. */
export function basePushPayload(config: Config, realm: Realm, userId: number): Record<string, unknown> {
  const url = realmUrl(config, realm);
  return { server: new URL(config.externalUrl).host, realm_id: realm.id, realm_uri: url, realm_url: url, realm_name: realm.name, user_id: userId };
}

/** Zulip's get_message_payload: the base plus the sender and the conversation. */
function messagePayload(config: Config, realm: Realm, userId: number, m: PushMessage): Record<string, unknown> {
  const data: Record<string, unknown> = { ...basePushPayload(config, realm, userId), sender_id: m.sender.id, sender_email: m.sender.email, time: m.message.date_sent };
  if (m.message.type === 'stream') {
    data.recipient_type = 'stream';
    data.stream = m.streamName;
    data.stream_id = m.message.stream_id;
    data.topic = m.message.topic;
  } else {
    data.recipient_type = 'private';
    const participants = (m.message.dm_key ?? '').split(',').filter(Boolean);
    // Group conversations are identified by their participants; 1:1 ones by the sender.
    if (participants.length > 2) data.pm_users = participants.join(',');
  }
  if (m.mentionedGroup) {
    data.mentioned_user_group_id = m.mentionedGroup.id;
    data.mentioned_user_group_name = m.mentionedGroup.name;
  }
  return data;
}

/**
 * The FCM data of a `message` push notification (Zulip's get_message_payload_gcm): the message
 * payload plus the event, message ID, a preview of at most 200 characters and the sender's
 * name and avatar.
 */
export function formatPushPayload(config: Config, realm: Realm, userId: number, m: PushMessage): Record<string, unknown> {
  const { content, truncated } = truncateContent(m.message.content);
  return {
    ...messagePayload(config, realm, userId, m),
    event: 'message',
    zulip_message_id: m.message.id,
    content,
    content_truncated: truncated,
    sender_full_name: m.sender.full_name,
    sender_avatar_url: avatarUrl(realmUrl(config, realm), m.sender),
  };
}

/**
 * The APNs payload of a `message` push notification (Zulip's get_message_payload_apns): an alert
 * whose title names the conversation (get_apns_alert_title) and whose subtitle says why
 * (get_apns_alert_subtitle), and the message payload under custom.zulip.
 */
export function formatApnsPayload(config: Config, realm: Realm, userId: number, m: PushMessage, trigger: NotificationTrigger): Record<string, unknown> {
  const groupDm = m.groupNames !== null && m.groupNames.length > 2;
  let title = m.sender.full_name;
  if (m.message.type === 'stream') title = `#${m.streamName ?? ''} > ${m.message.topic}`;
  else if (groupDm) title = [...m.groupNames!].sort().join(', ');
  let subtitle = `${m.sender.full_name}:`;
  if (trigger === 'mentioned') subtitle = m.mentionedGroup ? `${m.sender.full_name} mentioned @${m.mentionedGroup.name}:` : `${m.sender.full_name} mentioned you:`;
  else if (trigger.includes('wildcard_mentioned')) subtitle = `${m.sender.full_name} mentioned everyone:`;
  else if (m.message.type === 'private' && !groupDm) subtitle = '';
  return {
    alert: { title, subtitle, body: truncateContent(m.message.content).content },
    sound: 'default',
    // Zulip's get_apns_badge_count answers 0 until the apps handle counts.
    badge: 0,
    custom: { zulip: { ...messagePayload(config, realm, userId, m), message_ids: [m.message.id] } },
  };
}

/** Zulip's remove payloads: the notifications of these messages are taken back (they were read). */
export function formatRemovePayloads(config: Config, realm: Realm, userId: number, messageIds: readonly number[]): { gcm: Record<string, unknown>; apns: Record<string, unknown> } {
  const ids = [...messageIds].sort((a, b) => a - b).slice(-MAX_REMOVE_IDS);
  const base = basePushPayload(config, realm, userId);
  return {
    gcm: { ...base, event: 'remove', zulip_message_ids: ids.join(','), zulip_message_id: ids[0] },
    apns: { badge: 0, custom: { zulip: { ...base, event: 'remove', zulip_message_ids: ids.join(',') } } },
  };
}
