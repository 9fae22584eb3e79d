import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Zulip's PresenceSequence: one counter per organization, incremented by every presence
 * change and stored on the changed row, so clients can ask for "presence changed since
 * update N" (last_update_id). Updating the counter row also serializes concurrent presence
 * writes within an organization, so no two changes get the same number.
 */
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('presence_sequences')
    .addColumn('realm_id', 'bigint', (c) => c.primaryKey())
    .addColumn('last_update_id', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('presence_realm_update').on('presence').columns(['realm_id', 'last_update_id']).execute();
}
