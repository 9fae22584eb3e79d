import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Two-factor authentication (django-otp's TOTPDevice and StaticDevice, as Zulip uses them): one
 * TOTP secret per person, confirmed once a code from it was typed, with the last time step used
 * so a code works once; and single-use recovery codes, stored as SHA-256 hashes.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('user_totp_devices')
    .addColumn('user_id', 'bigint', (c) => c.primaryKey())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('confirmed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_time_step', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('user_recovery_codes')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('user_id', 'bigint', (c) => c.notNull())
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('user_recovery_codes_user_hash').unique().on('user_recovery_codes').columns(['user_id', 'code_hash']).execute();
}
