import type { Config } from '../../config.js';
import type { Message, Realm, User } from '../../db/tables.js';
import { avatarUrl } from '../avatar.js';
import type { NotificationTrigger } from '../notification_data.js';
import { realmUrl } from '../urls.js';


/** Zulip truncates push content to 200 characters plus an ellipsis. */
const MAX_PUSH_CONTENT = 200;

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
}

/**
 * The data of a `message` push notification, with the fields Zulip's mobile apps read
 * (get_message_payload and its FCM additions): which server, realm and account it is for,
 * the sender, the conversation and a plain-text preview.
 */
export function formatPushPayload(config: Config, realm: Realm, userId: number, m: PushMessage, trigger: NotificationTrigger): Record<string, unknown> {
  const url = realmUrl(config, realm);
  const { content, truncated } = truncateContent(m.message.content);
  const data: Record<string, unknown> = {
    server: new URL(config.externalUrl).host,
    realm_id: realm.id,
    realm_uri: url,
    realm_url: url,
    realm_name: realm.name,
    user_id: userId,
    sender_id: m.sender.id,
    sender_email: m.sender.email,
    time: m.message.date_sent,
  };
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
  data.event = 'message';
  data.zulip_message_id = m.message.id;
  data.content = content;
  data.content_truncated = truncated;
  data.sender_full_name = m.sender.full_name;
  data.sender_avatar_url = avatarUrl(url, m.sender);
  data.trigger = trigger;
  return data;
}
