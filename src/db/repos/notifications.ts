import { sql, type Insertable, type Selectable } from 'kysely';
import type { Dialect, Tx } from '../index.js';
import type { NotificationOutboxTable } from '../tables.js';

export type NotificationOutboxRow = Selectable<NotificationOutboxTable>;

/** Part of sending: one job per message, in the message's transaction (a single INSERT for a batch). */
export async function insertNotificationJobs(db: Tx, rows: readonly { message_id: number; due_at: number }[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto('notification_jobs').values([...rows]).execute();
}

/**
 * Takes the lease on up to `limit` due jobs that nobody holds, oldest first, in one UPDATE;
 * returns their message IDs. On PostgreSQL the rows are locked as they are picked, skipping
 * those another process is claiming; SQLite has one writer.
 */
export async function claimDueNotificationJobs(db: Tx, dialect: Dialect, at: number, until: number, limit: number): Promise<number[]> {
  let free = db
    .selectFrom('notification_jobs')
    .select('message_id')
    .where('due_at', '<=', at)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', at)]))
    .orderBy('message_id')
    .limit(limit);
  if (dialect === 'postgres') free = free.forUpdate().skipLocked();
  const rows = await db.updateTable('notification_jobs').set({ claimed_until: until }).where('message_id', 'in', free).returning('message_id').execute();
  return rows.map((r) => Number(r.message_id)).sort((a, b) => a - b);
}

/** Deletes the jobs whose lease the caller still holds; how many it deleted. */
export async function deleteClaimedNotificationJobs(db: Tx, messageIds: readonly number[], claimedUntil: number): Promise<number> {
  const r = await db.deleteFrom('notification_jobs').where('message_id', 'in', [...messageIds]).where('claimed_until', '=', claimedUntil).executeTakeFirst();
  return Number(r.numDeletedRows);
}

export async function insertNotificationOutboxRows(db: Tx, rows: readonly Insertable<NotificationOutboxTable>[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto('notification_outbox').values([...rows]).execute();
}

/** Users with an unclaimed `kind` row due at `at`, oldest due first. */
export async function fetchDueOutboxUserIds(db: Tx, kind: string, at: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('notification_outbox')
    .select('user_id')
    .where('kind', '=', kind)
    .where('due_at', '<=', at)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', at)]))
    .groupBy('user_id')
    .orderBy((eb) => eb.fn.min('due_at'))
    .limit(limit)
    .execute();
  return rows.map((r) => Number(r.user_id));
}

/**
 * Takes the lease on every unclaimed `kind` row of a user's (due or not: a missed-message email
 * gathers what arrived during the batching period) and returns them, oldest message first.
 */
export async function claimOutboxRows(db: Tx, userId: number, kind: string, at: number, until: number): Promise<NotificationOutboxRow[]> {
  const rows = await db
    .updateTable('notification_outbox')
    .set({ claimed_until: until })
    .where('user_id', '=', userId)
    .where('kind', '=', kind)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', at)]))
    .returningAll()
    .execute();
  return rows.map((r) => ({ ...r, id: Number(r.id), user_id: Number(r.user_id), message_id: Number(r.message_id), due_at: Number(r.due_at) })).sort((a, b) => a.message_id - b.message_id);
}

/** Deletes delivered (or dropped) rows the caller still holds. */
export async function deleteClaimedOutboxRows(db: Tx, ids: readonly number[], claimedUntil: number): Promise<void> {
  if (ids.length === 0) return;
  await db.deleteFrom('notification_outbox').where('id', 'in', [...ids]).where('claimed_until', '=', claimedUntil).execute();
}

/** When the next job or outbox row falls due after `after` (Unix seconds), or null. */
export async function fetchNextNotificationDue(db: Tx, after: number): Promise<number | null> {
  const [a, b] = await Promise.all([
    db.selectFrom('notification_jobs').select((eb) => eb.fn.min('due_at').as('next')).where('due_at', '>', after).executeTakeFirst(),
    db.selectFrom('notification_outbox').select((eb) => eb.fn.min('due_at').as('next')).where('due_at', '>', after).executeTakeFirst(),
  ]);
  const times = [a?.next, b?.next].filter((t) => t !== null && t !== undefined).map(Number);
  return times.length ? Math.min(...times) : null;
}

/** Last-active times of these users (users without a presence row are absent). */
export async function fetchLastActiveTimes(db: Tx, userIds: readonly number[]): Promise<Map<number, number | null>> {
  if (userIds.length === 0) return new Map();
  const rows = await db.selectFrom('presence').select(['user_id', 'last_active_time']).where('user_id', 'in', [...userIds]).execute();
  return new Map(rows.map((r) => [Number(r.user_id), r.last_active_time === null ? null : Number(r.last_active_time)]));
}

/** Which of these messages `userId` has received and not read. */
export async function fetchUnreadAmong(db: Tx, userId: number, messageIds: readonly number[], readBit: number): Promise<Set<number>> {
  if (messageIds.length === 0) return new Set();
  const rows = await db.selectFrom('user_messages').select(['message_id', 'flags']).where('user_id', '=', userId).where('message_id', 'in', [...messageIds]).execute();
  return new Set(rows.filter((r) => (Number(r.flags) & readBit) === 0).map((r) => Number(r.message_id)));
}

const ACTIVE_PUSH = 512;

/** Sets or clears Zulip's active_mobile_push_notification flag on a user's copies of these messages. */
export async function setActivePushFlag(db: Tx, userId: number, messageIds: readonly number[], on: boolean): Promise<void> {
  if (messageIds.length === 0) return;
  await db
    .updateTable('user_messages')
    .set({ flags: on ? sql<number>`flags | ${sql.lit(ACTIVE_PUSH)}` : sql<number>`flags & ${sql.lit(~ACTIVE_PUSH)}` })
    .where('user_id', '=', userId)
    .where('message_id', 'in', [...messageIds])
    .execute();
}

/** Zulip's cap on the push notifications mark-all-as-read takes back at once. */
export const MAX_PUSHES_CLEARED = 10000;

/** Messages of a user's whose push notification still shows, newest last (at most MAX_PUSHES_CLEARED). */
export async function fetchAllActivePushMessageIds(db: Tx, userId: number): Promise<number[]> {
  const rows = await db
    .selectFrom('user_messages')
    .select('message_id')
    .where('user_id', '=', userId)
    .where(sql<boolean>`(flags & ${sql.lit(ACTIVE_PUSH)}) != 0`)
    .orderBy('message_id')
    .limit(MAX_PUSHES_CLEARED)
    .execute();
  return rows.map((r) => Number(r.message_id));
}

