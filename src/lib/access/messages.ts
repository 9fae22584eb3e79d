import type { Tx } from '../../db/index.js';
import type { Message, Realm, User } from '../../db/tables.js';
import { fetchMessagesByIds, fetchStreamAccessRows, fetchSubscribedStreamIds, type StreamAccessRow } from '../../db/repos/messages.js';
import { fetchUserMessageFlags } from '../../db/repos/user_messages.js';
import { badRequest } from '../../errors.js';
import { isGuest } from '../roles.js';
import { loadGroupMembership, type GroupMembership, type GroupSettingValue } from '../group_settings.js';

/** A message the caller may read, with the caller's flag bits (null when they have no row: `historical`). */
export interface AccessedMessage {
  message: Message;
  flags: number | null;
}

/** Channel permissions that grant reading a private channel's shared history without a subscription. */
const CONTENT_ACCESS_SETTINGS = ['can_subscribe_group', 'can_add_subscribers_group'] as const;

function permissionValue(stream: StreamAccessRow, name: string): GroupSettingValue | undefined {
  try {
    const perms = JSON.parse(stream.permissions) as Record<string, GroupSettingValue>;
    return perms[name];
  } catch {
    return undefined;
  }
}

/**
 * Zulip's has_message_access for a channel message the user has no user_messages row for:
 * the channel must share history with subscribers; then public channels are readable by
 * non-guests, web-public ones by everyone, and private ones by subscribers and members of
 * the groups allowed to subscribe (or add subscribers).
 */
export function canReadChannelHistory(
  user: Pick<User, 'id' | 'role'>,
  stream: StreamAccessRow,
  subscribed: boolean,
  groups: GroupMembership | null,
): boolean {
  if (!stream.history_public_to_subscribers) return false;
  if (stream.is_web_public) return true;
  if (!stream.invite_only && !isGuest(user)) return true;
  if (subscribed) return true;
  if (!stream.invite_only || !groups || isGuest(user)) return false;
  return CONTENT_ACCESS_SETTINGS.some((name) => {
    const v = permissionValue(stream, name);
    return v !== undefined && groups.isUserInSetting(v, user.id);
  });
}

/**
 * The messages among `ids` the user may read, in ascending ID order, each with the user's
 * flags. Unknown and inaccessible IDs are silently left out. A few queries for any number of IDs.
 */
export async function accessMessages(db: Tx, realm: Pick<Realm, 'id'>, user: Pick<User, 'id' | 'role'>, ids: readonly number[]): Promise<AccessedMessage[]> {
  const rows = await fetchMessagesByIds(db, realm.id, ids);
  if (rows.length === 0) return [];
  const flags = await fetchUserMessageFlags(db, user.id, rows.map((r) => r.id));
  const needStreams = [...new Set(rows.filter((r) => !flags.has(r.id) && r.type === 'stream').map((r) => r.stream_id ?? 0))];
  const streams = await fetchStreamAccessRows(db, needStreams);
  const subscribed = await fetchSubscribedStreamIds(db, user.id, needStreams);
  const needGroups = [...streams.values()].some((s) => s.invite_only && s.history_public_to_subscribers && !subscribed.has(s.id));
  const groups = needGroups ? await loadGroupMembership(db, realm.id) : null;
  const out: AccessedMessage[] = [];
  for (const message of rows) {
    const f = flags.get(message.id);
    if (f !== undefined) {
      out.push({ message, flags: f });
      continue;
    }
    if (message.type !== 'stream') continue;
    const stream = streams.get(message.stream_id ?? 0);
    if (stream && canReadChannelHistory(user, stream, subscribed.has(stream.id), groups)) out.push({ message, flags: null });
  }
  return out;
}

/**
 * Zulip's access_message: the one message, or 400 "Invalid message(s)" whether it is
 * missing or merely inaccessible, so the answer never reveals that it exists.
 */
export async function accessMessage(db: Tx, realm: Pick<Realm, 'id'>, user: Pick<User, 'id' | 'role'>, id: number): Promise<AccessedMessage> {
  const [found] = await accessMessages(db, realm, user, [id]);
  if (!found) throw badRequest('Invalid message(s)');
  return found;
}
