import { sql } from 'kysely';
import type { Tx } from '../index.js';
import { insertRows } from '../bulk.js';
import { FLAG_BITS } from '../../lib/message_flags.js';

export interface UserMessageRow {
  user_id: number;
  message_id: number;
  flags: number;
}

/** Rows are inserted in chunks so huge channels stay under the databases' parameter limits. */
const INSERT_CHUNK = 5000;

const COLUMNS = ['user_id', 'message_id', 'flags'] as const;

/** One multi-row INSERT per chunk of 5000 recipients. */
export async function bulkInsertUserMessages(db: Tx, rows: readonly UserMessageRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) await insertRows(db, 'user_messages', COLUMNS, rows.slice(i, i + INSERT_CHUNK));
}

/** The caller's flag bits for each of these messages that they have a row for. */
export async function fetchUserMessageFlags(db: Tx, userId: number, messageIds: readonly number[]): Promise<Map<number, number>> {
  if (messageIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('user_messages')
    .select(['message_id', 'flags'])
    .where('user_id', '=', userId)
    .where('message_id', 'in', [...messageIds])
    .execute();
  return new Map(rows.map((r) => [r.message_id, Number(r.flags)]));
}

/**
 * Sets (op 'add') or clears (op 'remove') `bit` on the caller's rows for these messages and
 * returns the IDs whose flag actually changed, and of those the ones whose push notification
 * still shows on a phone (active_mobile_push_notification), read in the same statement.
 */
export async function updateUserMessageFlag(
  db: Tx,
  userId: number,
  messageIds: readonly number[],
  bit: number,
  op: 'add' | 'remove',
): Promise<{ changed: number[]; pushShowing: number[] }> {
  const changed: number[] = [];
  const pushShowing: number[] = [];
  if (messageIds.length === 0) return { changed, pushShowing };
  for (let i = 0; i < messageIds.length; i += INSERT_CHUNK) {
    const chunk = messageIds.slice(i, i + INSERT_CHUNK);
    const rows = await db
      .updateTable('user_messages')
      .set({ flags: op === 'add' ? sql<number>`flags | ${bit}` : sql<number>`flags & ${~bit}` })
      .where('user_id', '=', userId)
      .where('message_id', 'in', chunk)
      .where(op === 'add' ? sql<boolean>`(flags & ${bit}) = 0` : sql<boolean>`(flags & ${bit}) <> 0`)
      .returning(['message_id', 'flags'])
      .execute();
    for (const r of rows) {
      changed.push(r.message_id);
      if (Number(r.flags) & FLAG_BITS.active_mobile_push_notification) pushShowing.push(r.message_id);
    }
  }
  const byId = (a: number, b: number): number => a - b;
  return { changed: changed.sort(byId), pushShowing: pushShowing.sort(byId) };
}

/** Inserts rows for messages the user reads or stars without having received them (`historical`). */
export async function insertHistoricalUserMessages(db: Tx, userId: number, messageIds: readonly number[], flags: number): Promise<void> {
  await bulkInsertUserMessages(
    db,
    messageIds.map((message_id) => ({ user_id: userId, message_id, flags })),
  );
}

/**
 * Marks up to `limit` of the user's unread messages read, newest first, and returns how many
 * it changed (for mark-all-as-read's batches).
 */
export async function markUnreadBatchRead(db: Tx, userId: number, limit: number): Promise<number> {
  const ids = await db
    .selectFrom('user_messages')
    .select('message_id')
    .where('user_id', '=', userId)
    .where(sql<boolean>`(flags & 1) = 0`)
    .orderBy('message_id', 'desc')
    .limit(limit)
    .execute();
  if (ids.length === 0) return 0;
  await db
    .updateTable('user_messages')
    .set({ flags: sql<number>`flags | 1` })
    .where('user_id', '=', userId)
    .where('message_id', 'in', ids.map((r) => r.message_id))
    .execute();
  return ids.length;
}

/** The user's unread messages in a channel (or one topic of it), ascending. */
export async function fetchUnreadIdsInStream(db: Tx, userId: number, streamId: number, topicLc?: string): Promise<number[]> {
  let q = db
    .selectFrom('user_messages')
    .innerJoin('messages', 'messages.id', 'user_messages.message_id')
    .select('user_messages.message_id')
    .where('user_messages.user_id', '=', userId)
    .where(sql<boolean>`(user_messages.flags & 1) = 0`)
    .where('messages.stream_id', '=', streamId);
  if (topicLc !== undefined) q = q.where('messages.topic_lc', '=', topicLc);
  const rows = await q.orderBy('user_messages.message_id').execute();
  return rows.map((r) => r.message_id);
}

/** Whether the user has any message in this topic (Zulip's user_message_exists_for_topic). */
export async function userHasMessageInTopic(db: Tx, userId: number, streamId: number, topicLc: string): Promise<boolean> {
  const row = await db
    .selectFrom('user_messages')
    .innerJoin('messages', 'messages.id', 'user_messages.message_id')
    .select('messages.id')
    .where('user_messages.user_id', '=', userId)
    .where('messages.stream_id', '=', streamId)
    .where('messages.topic_lc', '=', topicLc)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export interface UnreadRow {
  message_id: number;
  flags: number;
  type: string;
  stream_id: number | null;
  topic: string;
  dm_key: string | null;
  sender_id: number;
}

/**
 * The user's unread messages with what unread_msgs needs, newest first, at most `limit`
 * (the partial index user_messages_unread keeps this cheap).
 */
export async function fetchUnreadMessages(db: Tx, userId: number, limit: number, onlyIds?: readonly number[]): Promise<UnreadRow[]> {
  let q = db
    .selectFrom('user_messages')
    .innerJoin('messages', 'messages.id', 'user_messages.message_id')
    .select(['user_messages.message_id', 'user_messages.flags', 'messages.type', 'messages.stream_id', 'messages.topic', 'messages.dm_key', 'messages.sender_id'])
    .where('user_messages.user_id', '=', userId)
    .where(sql<boolean>`(user_messages.flags & 1) = 0`);
  if (onlyIds) q = q.where('user_messages.message_id', 'in', [...onlyIds]);
  const rows = await q.orderBy('user_messages.message_id', 'desc').limit(limit).execute();
  return rows.map((r) => ({ ...r, flags: Number(r.flags) }));
}

/** IDs of the user's starred messages, ascending. */
export async function fetchStarredMessageIds(db: Tx, userId: number): Promise<number[]> {
  const rows = await db
    .selectFrom('user_messages')
    .select('message_id')
    .where('user_id', '=', userId)
    .where(sql<boolean>`(flags & 2) <> 0`)
    .orderBy('message_id')
    .execute();
  return rows.map((r) => r.message_id);
}

/**
 * The user's direct-message conversations with their newest message ID, newest first, at
 * most `limit` (Zulip's recent_private_conversations).
 */
export async function fetchRecentDmConversations(db: Tx, userId: number, limit: number): Promise<{ dm_key: string; max_id: number }[]> {
  const rows = await db
    .selectFrom('user_messages')
    .innerJoin('messages', 'messages.id', 'user_messages.message_id')
    .select(['messages.dm_key', (eb) => eb.fn.max('messages.id').as('max_id')])
    .where('user_messages.user_id', '=', userId)
    .where(sql<boolean>`(user_messages.flags & 256) <> 0`)
    .groupBy('messages.dm_key')
    .orderBy('max_id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ dm_key: r.dm_key ?? '', max_id: Number(r.max_id) }));
}

/** The newest message ID the user has a row for (0 when none). */
export async function fetchMaxMessageIdForUser(db: Tx, userId: number): Promise<number> {
  const row = await db
    .selectFrom('user_messages')
    .select((eb) => eb.fn.max('message_id').as('m'))
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(row?.m ?? 0);
}

/** Users who have read a message, for read receipts. */
export async function fetchReaderIds(db: Tx, messageId: number): Promise<{ user_id: number; settings: string; timezone: string }[]> {
  return db
    .selectFrom('user_messages')
    .innerJoin('users', 'users.id', 'user_messages.user_id')
    .select(['user_messages.user_id', 'users.settings', 'users.timezone'])
    .where('user_messages.message_id', '=', messageId)
    .where('users.is_active', '=', 1)
    .where(sql<boolean>`(user_messages.flags & 1) <> 0`)
    .orderBy('user_messages.user_id')
    .execute();
}
