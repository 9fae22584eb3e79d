import type { Insertable, Updateable } from 'kysely';
import type { Tx } from '../index.js';
import type { Stream, StreamTable } from '../tables.js';
import { cachedRead } from '../cache.js';

export type NewStream = Insertable<StreamTable>;
export type StreamUpdate = Updateable<StreamTable>;

/** A channel with whether a given user is actively subscribed to it. */
export interface StreamWithSubscription {
  stream: Stream;
  subscribed: boolean;
}

/** Channel names compare case-insensitively (Zulip's name__iexact). */
export const streamNameKey = (name: string): string => name.trim().toLowerCase();

export async function fetchStreamById(db: Tx, realmId: number, streamId: number): Promise<Stream | undefined> {
  return db.selectFrom('streams').selectAll().where('realm_id', '=', realmId).where('id', '=', streamId).executeTakeFirst();
}

export async function fetchStreamByName(db: Tx, realmId: number, name: string): Promise<Stream | undefined> {
  return db.selectFrom('streams').selectAll().where('realm_id', '=', realmId).where('name_lc', '=', streamNameKey(name)).executeTakeFirst();
}

/**
 * One channel, by ID or by name, together with whether `userId` is subscribed, in one
 * indexed query: the hot path of sending a message.
 */
export async function fetchStreamWithSubscription(
  db: Tx,
  realmId: number,
  key: { id: number } | { name: string },
  userId: number,
): Promise<StreamWithSubscription | undefined> {
  let q = db
    .selectFrom('streams')
    .leftJoin('subscriptions', (j) =>
      j.onRef('subscriptions.stream_id', '=', 'streams.id').on('subscriptions.user_id', '=', userId).on('subscriptions.active', '=', 1),
    )
    .selectAll('streams')
    .select('subscriptions.user_id as sub_user_id')
    .where('streams.realm_id', '=', realmId);
  q = 'id' in key ? q.where('streams.id', '=', key.id) : q.where('streams.name_lc', '=', streamNameKey(key.name));
  const row = await q.executeTakeFirst();
  if (!row) return undefined;
  const { sub_user_id, ...stream } = row;
  return { stream, subscribed: sub_user_id !== null };
}

export async function fetchStreamsByIds(db: Tx, realmId: number, ids: readonly number[]): Promise<Stream[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('streams').selectAll().where('realm_id', '=', realmId).where('id', 'in', [...new Set(ids)]).execute();
}

/** Channels whose names match any of `names` case-insensitively, archived ones included. */
export async function fetchStreamsByNames(db: Tx, realmId: number, names: readonly string[]): Promise<Stream[]> {
  if (names.length === 0) return [];
  const keys = [...new Set(names.map(streamNameKey))];
  return db.selectFrom('streams').selectAll().where('realm_id', '=', realmId).where('name_lc', 'in', keys).execute();
}

/** The realm's channels in ID order: cached (db/cache.ts), as register and channel lists read them constantly. */
export const fetchRealmStreams = cachedRead(
  'realm_streams',
  ['streams'],
  (realmId: number, includeArchived: boolean) => `${realmId}:${includeArchived}`,
  fetchRealmStreamsUncached,
);

async function fetchRealmStreamsUncached(db: Tx, realmId: number, includeArchived: boolean): Promise<Stream[]> {
  let q = db.selectFrom('streams').selectAll().where('realm_id', '=', realmId);
  if (!includeArchived) q = q.where('deactivated', '=', 0);
  return q.orderBy('id').execute();
}

/** Inserts a channel unless one with the same name exists (a concurrent creation); returns the new row or undefined. */
export async function insertStreamIfAbsent(db: Tx, row: NewStream): Promise<Stream | undefined> {
  return db
    .insertInto('streams')
    .values(row)
    .onConflict((oc) => oc.columns(['realm_id', 'name_lc']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export async function updateStreamRow(db: Tx, streamId: number, changes: StreamUpdate): Promise<void> {
  await db.updateTable('streams').set(changes).where('id', '=', streamId).execute();
}

/** Whether an error is a unique-constraint violation, on either database. */
export function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/**
 * Records the first message of a channel when it has none yet. The messages area calls this
 * inside the transaction that sends a channel message.
 */
export async function recordStreamFirstMessage(db: Tx, streamId: number, messageId: number): Promise<void> {
  await db.updateTable('streams').set({ first_message_id: messageId }).where('id', '=', streamId).where('first_message_id', 'is', null).execute();
}

/** Whether any message of the channel has a non-empty topic (blocks the empty_topic_only policy). */
export async function streamHasNamedTopics(db: Tx, streamId: number): Promise<boolean> {
  const row = await db.selectFrom('messages').select('id').where('stream_id', '=', streamId).where('topic', '<>', '').limit(1).executeTakeFirst();
  return row !== undefined;
}

export async function fetchDefaultStreamIds(db: Tx, realmId: number): Promise<number[]> {
  const rows = await db.selectFrom('default_streams').select('stream_id').where('realm_id', '=', realmId).orderBy('stream_id').execute();
  return rows.map((r) => r.stream_id);
}

export async function insertDefaultStream(db: Tx, realmId: number, streamId: number): Promise<void> {
  await db
    .insertInto('default_streams')
    .values({ realm_id: realmId, stream_id: streamId })
    .onConflict((oc) => oc.columns(['realm_id', 'stream_id']).doNothing())
    .execute();
}

export async function deleteDefaultStream(db: Tx, realmId: number, streamId: number): Promise<void> {
  await db.deleteFrom('default_streams').where('realm_id', '=', realmId).where('stream_id', '=', streamId).execute();
}

export interface StreamAuditRow {
  realm_id: number;
  acting_user_id: number | null;
  modified_user_id?: number | null;
  modified_stream_id: number;
  event_type: string;
  event_time: number;
  extra_data?: Record<string, unknown>;
}

/** Rows per multi-row INSERT, far below SQLite's limit on bound parameters. */
export const INSERT_CHUNK = 500;

export function chunks<T>(items: readonly T[], size = INSERT_CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export async function insertStreamAuditLogs(db: Tx, rows: readonly StreamAuditRow[]): Promise<void> {
  for (const part of chunks(rows)) {
    await db
      .insertInto('audit_log')
      .values(
        part.map((r) => ({
          realm_id: r.realm_id,
          acting_user_id: r.acting_user_id,
          modified_user_id: r.modified_user_id ?? null,
          modified_stream_id: r.modified_stream_id,
          event_type: r.event_type,
          event_time: r.event_time,
          extra_data: JSON.stringify(r.extra_data ?? {}),
        })),
      )
      .execute();
  }
}
