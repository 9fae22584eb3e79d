import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Zulip's ImageAttachment: one row per uploaded image whose header parsed, with its size as
 * rendered, its frame count and the thumbnails made so far (JSON, Zulip's thumbnail_metadata).
 * A row with `pending` = 1 is the thumbnail worker's queue, so it survives a restart;
 * `claimed_until` is the lease of the process working on it.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('image_attachments')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('path_id', 'text', (c) => c.notNull())
    .addColumn('original_width_px', 'integer', (c) => c.notNull())
    .addColumn('original_height_px', 'integer', (c) => c.notNull())
    .addColumn('frames', 'integer', (c) => c.notNull())
    .addColumn('content_type', 'text')
    .addColumn('thumbnail_metadata', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('pending', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('claimed_until', 'bigint')
    .execute();
  await db.schema.createIndex('image_attachments_path_id').unique().on('image_attachments').column('path_id').execute();
  await db.schema.createIndex('image_attachments_pending').on('image_attachments').columns(['pending', 'id']).execute();
}
