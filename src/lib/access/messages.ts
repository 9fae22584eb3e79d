import type { Tx } from '../../db/index.js';
import type { Message, Realm, User } from '../../db/tables.js';
import { fetchMessagesByIds, fetchStreamAccessRows, fetchSubscribedStreamIds, type StreamAccessRow } from '../../db/repos/messages.js';
import { fetchUserMessageFlags } from '../../db/repos/user_messages.js';
import { badRequest } from '../../errors.js';
import { loadUserGroupMembership, type GroupMembership } from '../group_settings.js';
import { hasContentAccess } from './streams.js';

/** A message the caller may read, with the caller's flag bits (null when they have no row: `historical`). */
export interface AccessedMessage {
  message: Message;
  flags: number | null;
}

/** Who reads: the role decides channel access; is_active defaults to active (callers are authenticated). */
export type MessageReader = Pick<User, 'id' | 'role'> & Partial<Pick<User, 'is_active'>>;

/**
 * Zulip's has_message_access for a channel message the user has no user_messages row for:
 * the channel must share its history with subscribers, and the user needs content access
 * (lib/access/streams.ts: web-public, subscribed, public for non-guests, or a group allowed
 * to subscribe). `groups` is consulted only for private channels the user is not in.
 */
export function canReadChannelHistory(
  user: Pick<User, 'id' | 'role'>,
  stream: StreamAccessRow,
  subscribed: boolean,
  groups: GroupMembership | null,
): boolean {
  return !!stream.history_public_to_subscribers && hasContentAccess(user, stream, subscribed, groups);
}

/**
 * The messages among `ids` the user may read, in ascending ID order, each with the user's
 * flags. Unknown and inaccessible IDs are silently left out. A few queries for any number of IDs.
 */
export async function accessMessages(db: Tx, realm: Pick<Realm, 'id'>, user: MessageReader, ids: readonly number[]): Promise<AccessedMessage[]> {
  const rows = await fetchMessagesByIds(db, realm.id, ids);
  if (rows.length === 0) return [];
  const flags = await fetchUserMessageFlags(db, user.id, rows.map((r) => r.id));
  const needStreams = [...new Set(rows.filter((r) => !flags.has(r.id) && r.type === 'stream').map((r) => r.stream_id ?? 0))];
  const streams = await fetchStreamAccessRows(db, needStreams);
  const subscribed = await fetchSubscribedStreamIds(db, user.id, needStreams);
  const needGroups = [...streams.values()].some((s) => s.invite_only && s.history_public_to_subscribers && !subscribed.has(s.id));
  // Callers are authenticated, hence active, users.
  const groups = needGroups ? await loadUserGroupMembership(db, { id: user.id, is_active: user.is_active ?? 1 }) : null;
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
export async function accessMessage(db: Tx, realm: Pick<Realm, 'id'>, user: MessageReader, id: number): Promise<AccessedMessage> {
  const [found] = await accessMessages(db, realm, user, [id]);
  if (!found) throw badRequest('Invalid message(s)');
  return found;
}
