import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Custom profile fields: `use_for_user_matching` (feature level 455) and Zulip's uniqueness
 * of a field's label within its organization.
 */
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema
    .alterTable('custom_profile_fields')
    .addColumn('use_for_user_matching', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createIndex('custom_profile_fields_realm_name')
    .unique()
    .on('custom_profile_fields')
    .columns(['realm_id', 'name'])
    .execute();
}
