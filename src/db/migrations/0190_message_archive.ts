import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Zulip's archive (zerver/lib/retention.py): messages removed by the retention policy are moved,
 * with their receipts, reactions, submessages and attachment links, into `archived_*` tables
 * that record the `archive_transactions` row of the batch that moved them, so an administrator
 * can put a batch back until it is purged. Attachments no remaining message links are moved to
 * `archived_attachments` (their bytes stay in `stored_files` until the archive is purged).
 * `worker_leases` holds each cluster-wide periodic job's last run and the lease of the process
 * running it now, so that one process at a time runs it (the lease lapses if that process dies).
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('archive_transactions')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('realm_id', 'bigint')
    .addColumn('type', 'integer', (c) => c.notNull())
    .addColumn('timestamp', 'bigint', (c) => c.notNull())
    .addColumn('restored', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('restored_timestamp', 'bigint')
    .execute();
  await db.schema.createIndex('archive_transactions_timestamp').on('archive_transactions').column('timestamp').execute();

  await db.schema
    .createTable('archived_messages')
    .addColumn('id', 'bigint', (c) => c.primaryKey())
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('sender_id', 'bigint', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('stream_id', 'bigint')
    .addColumn('topic', 'text', (c) => c.notNull())
    .addColumn('topic_lc', 'text', (c) => c.notNull())
    .addColumn('dm_key', 'text')
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('rendered_content', 'text', (c) => c.notNull())
    .addColumn('rendered_content_version', 'integer', (c) => c.notNull())
    .addColumn('date_sent', 'bigint', (c) => c.notNull())
    .addColumn('sending_client', 'text', (c) => c.notNull())
    .addColumn('last_edit_time', 'bigint')
    .addColumn('last_moved_time', 'bigint')
    .addColumn('edit_history', 'text')
    .addColumn('has_link', 'integer', (c) => c.notNull())
    .addColumn('has_image', 'integer', (c) => c.notNull())
    .addColumn('has_attachment', 'integer', (c) => c.notNull())
    .addColumn('archive_transaction_id', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('archived_messages_transaction').on('archived_messages').column('archive_transaction_id').execute();
  await db.schema.createIndex('archived_messages_stream').on('archived_messages').column('stream_id').execute();

  await db.schema
    .createTable('archived_user_messages')
    .addColumn('user_id', 'bigint', (c) => c.notNull())
    .addColumn('message_id', 'bigint', (c) => c.notNull())
    .addColumn('flags', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('archived_user_messages_pk', ['message_id', 'user_id'])
    .execute();

  await db.schema
    .createTable('archived_reactions')
    .addColumn('id', 'bigint', (c) => c.primaryKey())
    .addColumn('message_id', 'bigint', (c) => c.notNull())
    .addColumn('user_id', 'bigint', (c) => c.notNull())
    .addColumn('emoji_name', 'text', (c) => c.notNull())
    .addColumn('emoji_code', 'text', (c) => c.notNull())
    .addColumn('reaction_type', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('archived_reactions_message').on('archived_reactions').column('message_id').execute();

  await db.schema
    .createTable('archived_submessages')
    .addColumn('id', 'bigint', (c) => c.primaryKey())
    .addColumn('message_id', 'bigint', (c) => c.notNull())
    .addColumn('sender_id', 'bigint', (c) => c.notNull())
    .addColumn('msg_type', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('archived_submessages_message').on('archived_submessages').column('message_id').execute();

  await db.schema
    .createTable('archived_attachments')
    .addColumn('id', 'bigint', (c) => c.primaryKey())
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('owner_id', 'bigint', (c) => c.notNull())
    .addColumn('path_id', 'text', (c) => c.notNull())
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('create_time', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('archived_attachment_messages')
    .addColumn('attachment_id', 'bigint', (c) => c.notNull())
    .addColumn('message_id', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('archived_attachment_messages_pk', ['attachment_id', 'message_id'])
    .execute();
  await db.schema.createIndex('archived_attachment_messages_message').on('archived_attachment_messages').column('message_id').execute();

  await db.schema
    .createTable('worker_leases')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('last_run_at', 'bigint', (c) => c.notNull())
    .addColumn('leased_until', 'bigint', (c) => c.notNull())
    .execute();
}
