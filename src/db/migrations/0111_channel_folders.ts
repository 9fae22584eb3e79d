import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/** Channel folders (Zulip's ChannelFolder); a channel's `folder_id` (0001) refers to one. */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('channel_folders')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_lc', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('rendered_description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('creator_id', 'bigint')
    .addColumn('date_created', 'bigint', (c) => c.notNull())
    .addColumn('is_archived', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('folder_order', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('channel_folders_realm_name').unique().on('channel_folders').columns(['realm_id', 'name_lc']).execute();
}
