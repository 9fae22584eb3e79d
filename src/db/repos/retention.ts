import { sql } from 'kysely';
import type { Dialect, Tx } from '../index.js';

/** Zulip's ArchiveTransaction types. */
export const ARCHIVE_RETENTION_POLICY_BASED = 1;
export const ARCHIVE_MANUAL = 2;

/** Every column of `messages` that the archive keeps (PostgreSQL's generated search_tsvector is remade on restore). */
const MESSAGE_COLUMNS = [
  'id', 'realm_id', 'sender_id', 'type', 'stream_id', 'topic', 'topic_lc', 'dm_key', 'content', 'rendered_content',
  'rendered_content_version', 'date_sent', 'sending_client', 'last_edit_time', 'last_moved_time', 'edit_history',
  'has_link', 'has_image', 'has_attachment',
] as const;
const REACTION_COLUMNS = ['id', 'message_id', 'user_id', 'emoji_name', 'emoji_code', 'reaction_type'] as const;
const SUBMESSAGE_COLUMNS = ['id', 'message_id', 'sender_id', 'msg_type', 'content'] as const;
const ATTACHMENT_COLUMNS = ['id', 'realm_id', 'owner_id', 'path_id', 'file_name', 'size', 'content_type', 'create_time'] as const;

export interface RetentionRealm {
  id: number;
  string_id: string;
  /** The realm's message_retention_days: -1 for unlimited. */
  days: number;
}

/** A channel whose messages expire, with its effective number of days. */
export interface RetentionStream {
  id: number;
  realm_id: number;
  days: number;
}

/**
 * Zulip's get_realms_and_streams_for_archiving: channels with a policy of their own (not -1),
 * and channels without one (null) in realms with a policy; a channel's null means its realm's.
 */
export async function fetchStreamsForArchiving(db: Tx, realms: readonly RetentionRealm[]): Promise<RetentionStream[]> {
  const byId = new Map(realms.map((r) => [r.id, r]));
  const rows = await db
    .selectFrom('streams')
    .select(['id', 'realm_id', 'message_retention_days'])
    .where((eb) => eb.or([eb('message_retention_days', '>', 0), eb('message_retention_days', 'is', null)]))
    .orderBy('id')
    .execute();
  const out: RetentionStream[] = [];
  for (const r of rows) {
    const days = r.message_retention_days ?? byId.get(r.realm_id)?.days ?? -1;
    if (days > 0) out.push({ id: r.id, realm_id: r.realm_id, days });
  }
  return out;
}

/**
 * The next up to `limit` expired messages of a channel (`streamId`) or of a realm's direct
 * messages (`streamId` null), oldest first. On PostgreSQL the rows are locked and rows another
 * transaction holds are skipped, so concurrent archivers take disjoint batches; a SQLite
 * writing transaction excludes every other one already.
 */
export async function lockExpiredMessageIds(
  db: Tx,
  dialect: Dialect,
  where: { realmId: number; streamId: number | null },
  before: number,
  limit: number,
): Promise<number[]> {
  let query = db.selectFrom('messages').select('id').where('date_sent', '<', before);
  query = where.streamId === null ? query.where('realm_id', '=', where.realmId).where('type', '=', 'private') : query.where('stream_id', '=', where.streamId);
  query = query.orderBy('id').limit(limit);
  const rows = await (dialect === 'postgres' ? query.forUpdate().skipLocked() : query).execute();
  return rows.map((r) => r.id);
}

export async function insertArchiveTransaction(db: Tx, realmId: number | null, type: number, timestamp: number): Promise<number> {
  const row = await db.insertInto('archive_transactions').values({ realm_id: realmId, type, timestamp }).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

/**
 * Zulip's move_related_objects_to_archive plus the messages themselves: copies the messages,
 * their receipts, reactions, submessages, attachment links and linked attachments into the
 * archive under `transactionId`. The caller then deletes the live rows.
 */
export async function copyMessagesToArchive(db: Tx, ids: readonly number[], transactionId: number): Promise<void> {
  const list = [...ids];
  await db
    .insertInto('archived_messages')
    .columns([...MESSAGE_COLUMNS, 'archive_transaction_id'])
    .expression(db.selectFrom('messages').select([...MESSAGE_COLUMNS, sql<number>`${transactionId}`.as('archive_transaction_id')]).where('id', 'in', list))
    .onConflict((oc) => oc.column('id').doUpdateSet({ archive_transaction_id: transactionId }))
    .execute();
  await db
    .insertInto('archived_user_messages')
    .columns(['user_id', 'message_id', 'flags'])
    .expression(db.selectFrom('user_messages').select(['user_id', 'message_id', 'flags']).where('message_id', 'in', list))
    .onConflict((oc) => oc.columns(['message_id', 'user_id']).doUpdateSet({ flags: (eb) => eb.ref('excluded.flags') }))
    .execute();
  await db
    .insertInto('archived_reactions')
    .columns([...REACTION_COLUMNS])
    .expression(db.selectFrom('reactions').select([...REACTION_COLUMNS]).where('message_id', 'in', list))
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  await db
    .insertInto('archived_submessages')
    .columns([...SUBMESSAGE_COLUMNS])
    .expression(db.selectFrom('submessages').select([...SUBMESSAGE_COLUMNS]).where('message_id', 'in', list))
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  await db
    .insertInto('archived_attachments')
    .columns([...ATTACHMENT_COLUMNS])
    .expression(
      db
        .selectFrom('attachments')
        .select([...ATTACHMENT_COLUMNS])
        .where('id', 'in', db.selectFrom('attachment_messages').select('attachment_id').where('message_id', 'in', list)),
    )
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  await db
    .insertInto('archived_attachment_messages')
    .columns(['attachment_id', 'message_id'])
    .expression(db.selectFrom('attachment_messages').select(['attachment_id', 'message_id']).where('message_id', 'in', list))
    .onConflict((oc) => oc.columns(['attachment_id', 'message_id']).doNothing())
    .execute();
}

/**
 * Zulip's delete_expired_attachments, for the attachments these (now deleted) messages linked:
 * those no live message links any more are removed; their archived copies and bytes stay.
 */
export async function deleteUnlinkedArchivedAttachments(db: Tx, messageIds: readonly number[]): Promise<void> {
  const linked = db.selectFrom('archived_attachment_messages').select('attachment_id').where('message_id', 'in', [...messageIds]);
  await db
    .deleteFrom('attachments')
    .where('id', 'in', linked)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('attachment_messages').select('message_id').whereRef('attachment_messages.attachment_id', '=', 'attachments.id'))))
    .execute();
}

export interface ArchiveTransactionRow {
  id: number;
  realm_id: number | null;
  type: number;
  timestamp: number;
  restored: number;
  restored_timestamp: number | null;
  message_count: number;
  stream_ids: number[];
}

/** Archive transactions (newest first) with their archived message counts and channels, optionally of one realm. */
export async function fetchArchiveTransactions(db: Tx, filter: { realmId?: number; streamId?: number; id?: number }): Promise<ArchiveTransactionRow[]> {
  let query = db.selectFrom('archive_transactions').selectAll().orderBy('id', 'desc');
  if (filter.realmId !== undefined) query = query.where('realm_id', '=', filter.realmId);
  if (filter.id !== undefined) query = query.where('id', '=', filter.id);
  if (filter.streamId !== undefined) {
    query = query.where('id', 'in', db.selectFrom('archived_messages').select('archive_transaction_id').where('stream_id', '=', filter.streamId));
  }
  const rows = await query.execute();
  if (rows.length === 0) return [];
  const counts = await db
    .selectFrom('archived_messages')
    .select(['archive_transaction_id', 'stream_id', sql<string | number>`COUNT(*)`.as('n')])
    .where('archive_transaction_id', 'in', rows.map((r) => r.id))
    .groupBy(['archive_transaction_id', 'stream_id'])
    .execute();
  return rows.map((r) => {
    const mine = counts.filter((c) => Number(c.archive_transaction_id) === r.id);
    return {
      id: Number(r.id),
      realm_id: r.realm_id === null ? null : Number(r.realm_id),
      type: Number(r.type),
      timestamp: Number(r.timestamp),
      restored: Number(r.restored),
      restored_timestamp: r.restored_timestamp === null ? null : Number(r.restored_timestamp),
      message_count: mine.reduce((n, c) => n + Number(c.n), 0),
      stream_ids: mine.flatMap((c) => (c.stream_id === null ? [] : [Number(c.stream_id)])).sort((a, b) => a - b),
    };
  });
}

/**
 * Zulip's restore_data_from_archive: puts the transaction's messages, receipts, reactions,
 * submessages, attachments and attachment links back (rows that exist again are left alone),
 * then removes them from the archive and marks the transaction restored. Returns the ids of
 * the messages restored.
 */
export async function restoreArchiveTransaction(db: Tx, transactionId: number, timestamp: number): Promise<number[]> {
  const ids = (await db.selectFrom('archived_messages').select('id').where('archive_transaction_id', '=', transactionId).orderBy('id').execute()).map((r) => r.id);
  if (ids.length > 0) {
    const inTx = db.selectFrom('archived_messages').select('id').where('archive_transaction_id', '=', transactionId);
    await db
      .insertInto('messages')
      .columns([...MESSAGE_COLUMNS])
      .expression(db.selectFrom('archived_messages').select([...MESSAGE_COLUMNS]).where('archive_transaction_id', '=', transactionId))
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    await db
      .insertInto('user_messages')
      .columns(['user_id', 'message_id', 'flags'])
      .expression(db.selectFrom('archived_user_messages').select(['user_id', 'message_id', 'flags']).where('message_id', 'in', inTx))
      .onConflict((oc) => oc.columns(['user_id', 'message_id']).doNothing())
      .execute();
    await db
      .insertInto('reactions')
      .columns([...REACTION_COLUMNS])
      .expression(db.selectFrom('archived_reactions').select([...REACTION_COLUMNS]).where('message_id', 'in', inTx))
      .onConflict((oc) => oc.doNothing())
      .execute();
    await db
      .insertInto('submessages')
      .columns([...SUBMESSAGE_COLUMNS])
      .expression(db.selectFrom('archived_submessages').select([...SUBMESSAGE_COLUMNS]).where('message_id', 'in', inTx))
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    const attachmentIds = db.selectFrom('archived_attachment_messages').select('attachment_id').where('message_id', 'in', inTx);
    await db
      .insertInto('attachments')
      .columns([...ATTACHMENT_COLUMNS])
      .expression(db.selectFrom('archived_attachments').select([...ATTACHMENT_COLUMNS]).where('id', 'in', attachmentIds))
      .onConflict((oc) => oc.doNothing())
      .execute();
    await db
      .insertInto('attachment_messages')
      .columns(['attachment_id', 'message_id'])
      .expression(
        db
          .selectFrom('archived_attachment_messages')
          .select(['attachment_id', 'message_id'])
          .where('message_id', 'in', inTx)
          .where('attachment_id', 'in', db.selectFrom('attachments').select('id')),
      )
      .onConflict((oc) => oc.columns(['attachment_id', 'message_id']).doNothing())
      .execute();
    await deleteArchivedMessageRows(db, ids);
    await db
      .deleteFrom('archived_attachments')
      .where('id', 'in', db.selectFrom('attachments').select('id'))
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('archived_attachment_messages').select('message_id').whereRef('archived_attachment_messages.attachment_id', '=', 'archived_attachments.id'))),
      )
      .execute();
  }
  await db.updateTable('archive_transactions').set({ restored: 1, restored_timestamp: timestamp }).where('id', '=', transactionId).execute();
  return ids;
}

async function deleteArchivedMessageRows(db: Tx, ids: readonly number[]): Promise<void> {
  const list = [...ids];
  await db.deleteFrom('archived_user_messages').where('message_id', 'in', list).execute();
  await db.deleteFrom('archived_reactions').where('message_id', 'in', list).execute();
  await db.deleteFrom('archived_submessages').where('message_id', 'in', list).execute();
  await db.deleteFrom('archived_attachment_messages').where('message_id', 'in', list).execute();
  await db.deleteFrom('archived_messages').where('id', 'in', list).execute();
}

/** Up to `limit` ids of archive transactions made before `before`, oldest first. */
export async function fetchArchiveTransactionIdsBefore(db: Tx, before: number, limit: number): Promise<number[]> {
  const rows = await db.selectFrom('archive_transactions').select('id').where('timestamp', '<', before).orderBy('id').limit(limit).execute();
  return rows.map((r) => Number(r.id));
}

/** Zulip's clean_archived_data for these transactions: their archived rows and the transactions go for good. */
export async function deleteArchiveTransactions(db: Tx, transactionIds: readonly number[]): Promise<void> {
  if (transactionIds.length === 0) return;
  const ids = (await db.selectFrom('archived_messages').select('id').where('archive_transaction_id', 'in', [...transactionIds]).execute()).map((r) => r.id);
  if (ids.length > 0) await deleteArchivedMessageRows(db, ids);
  await db.deleteFrom('archive_transactions').where('id', 'in', [...transactionIds]).execute();
}

/**
 * Archived attachments that no archived message links any more (their messages were purged or
 * restored), with whether the upload is live again (restored, or linked by a live message all
 * along): only the others' bytes may go.
 */
export async function fetchUnlinkedArchivedAttachments(db: Tx, limit: number): Promise<{ id: number; path_id: string; live: boolean }[]> {
  const rows = await db
    .selectFrom('archived_attachments')
    .leftJoin('attachments', 'attachments.path_id', 'archived_attachments.path_id')
    .select(['archived_attachments.id', 'archived_attachments.path_id', 'attachments.id as live_id'])
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('archived_attachment_messages').select('message_id').whereRef('archived_attachment_messages.attachment_id', '=', 'archived_attachments.id'))),
    )
    .orderBy('archived_attachments.id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ id: Number(r.id), path_id: r.path_id, live: r.live_id !== null }));
}

export async function deleteArchivedAttachments(db: Tx, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.deleteFrom('archived_attachments').where('id', 'in', [...ids]).execute();
}

/**
 * Takes the cluster-wide job `name` until `leaseUntil` if no process holds it and its last run
 * finished at or before `dueAfter`; whether it did. A process that dies leaves its lease to lapse.
 */
export async function claimWorkerLease(db: Tx, name: string, nowSeconds: number, dueAfter: number, leaseUntil: number): Promise<boolean> {
  await db.insertInto('worker_leases').values({ name, last_run_at: 0, leased_until: 0 }).onConflict((oc) => oc.column('name').doNothing()).execute();
  const r = await db
    .updateTable('worker_leases')
    .set({ leased_until: leaseUntil })
    .where('name', '=', name)
    .where('leased_until', '<=', nowSeconds)
    .where('last_run_at', '<=', dueAfter)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Gives the job's lease up, recording a finished run at `finishedAt` (null: the run failed, so the job is due again). */
export async function releaseWorkerLease(db: Tx, name: string, finishedAt: number | null): Promise<void> {
  await db.updateTable('worker_leases').set(finishedAt === null ? { leased_until: 0 } : { last_run_at: finishedAt, leased_until: 0 }).where('name', '=', name).execute();
}

/** Every organization (deactivated ones too, as Zulip's) with its retention policy's raw settings. */
export async function fetchRealmsForRetention(db: Tx): Promise<{ id: number; string_id: string; settings: string }[]> {
  return db.selectFrom('realms').select(['id', 'string_id', 'settings']).orderBy('id').execute();
}
