import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Bots made over the API: a bot's default channels (Zulip's UserProfile.default_sending_stream,
 * default_events_register_stream, default_all_public_streams) and the Service row of an
 * outgoing-webhook bot (Zulip's Service: where to POST, in which format, and the token sent).
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema.alterTable('users').addColumn('default_sending_stream_id', 'bigint').execute();
  await db.schema.alterTable('users').addColumn('default_events_register_stream_id', 'bigint').execute();
  await db.schema.alterTable('users').addColumn('default_all_public_streams', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema
    .createTable('bot_services')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('user_id', 'bigint', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('base_url', 'text', (c) => c.notNull())
    .addColumn('token', 'text', (c) => c.notNull())
    .addColumn('interface', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('bot_services_user').on('bot_services').column('user_id').execute();
}
