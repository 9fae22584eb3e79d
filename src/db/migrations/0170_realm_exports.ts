import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Zulip's RealmExport: one row per data export an administrator asked for. The row is also the
 * export's place in the background queue (workers/realm_exports.ts): pending while
 * `date_succeeded`, `date_failed` and `date_deleted` are all null; `claimed_until` is the lease
 * of the process writing it, so an export survives a restart and is written once.
 * `export_path` names the finished tarball in `stored_files`.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('realm_exports')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('acting_user_id', 'bigint')
    .addColumn('export_type', 'text', (c) => c.notNull())
    .addColumn('date_requested', 'double precision', (c) => c.notNull())
    .addColumn('date_started', 'double precision')
    .addColumn('date_succeeded', 'double precision')
    .addColumn('date_failed', 'double precision')
    .addColumn('date_deleted', 'double precision')
    .addColumn('export_path', 'text')
    .addColumn('failure_message', 'text')
    .addColumn('claimed_until', 'bigint')
    .execute();
  await db.schema.createIndex('realm_exports_realm').on('realm_exports').columns(['realm_id', 'id']).execute();
}
