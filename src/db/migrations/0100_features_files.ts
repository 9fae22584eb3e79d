import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Uploaded files (message attachments, custom emoji, avatars), bot storage and submessages.
 *
 * File contents live in the database (`stored_files`), not on a local disk, so that every
 * process of a scaled-out installation can serve every file and a backup of the database is a
 * backup of everything. The price is database size and memory: a file is read whole (at most
 * max_file_upload_size_mib) to be served. See docs/uploads.md.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'postgres' ? 'bigserial' : 'integer';
  const blob = dialect === 'postgres' ? 'bytea' : 'blob';

  await db.schema
    .createTable('stored_files')
    .addColumn('path', 'text', (c) => c.primaryKey())
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('data', blob, (c) => c.notNull())
    .addColumn('date_created', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('attachments')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('owner_id', 'bigint', (c) => c.notNull())
    .addColumn('path_id', 'text', (c) => c.notNull())
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('create_time', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('attachments_path').unique().on('attachments').column('path_id').execute();
  await db.schema.createIndex('attachments_owner').on('attachments').column('owner_id').execute();

  await db.schema
    .createTable('attachment_messages')
    .addColumn('attachment_id', 'bigint', (c) => c.notNull())
    .addColumn('message_id', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('attachment_messages_pk', ['attachment_id', 'message_id'])
    .execute();
  await db.schema.createIndex('attachment_messages_message').on('attachment_messages').column('message_id').execute();

  await db.schema
    .createTable('bot_storage')
    .addColumn('bot_id', 'bigint', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('bot_storage_pk', ['bot_id', 'key'])
    .execute();

  await db.schema
    .createTable('submessages')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('message_id', 'bigint', (c) => c.notNull())
    .addColumn('sender_id', 'bigint', (c) => c.notNull())
    .addColumn('msg_type', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('submessages_message').on('submessages').column('message_id').execute();

  await db.schema.createIndex('realm_emoji_realm').on('realm_emoji').columns(['realm_id', 'name']).execute();
}
