import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Logged-in mobile devices (Zulip's Device, POST /register_client_device), which E2EE push
 * registrations attach to; the push fields stay null until such a registration succeeds.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('client_devices')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('user_id', 'bigint', (c) => c.notNull())
    .addColumn('push_key_id', 'bigint')
    .addColumn('push_token_id', 'text')
    .addColumn('pending_push_token_id', 'text')
    .addColumn('push_token_last_updated_timestamp', 'bigint')
    .addColumn('push_registration_error_code', 'text')
    .addColumn('date_created', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('client_devices_user').on('client_devices').column('user_id').execute();
}
