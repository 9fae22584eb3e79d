import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Allowed domains get a numeric ID: POST /realm/domains answers `new_domain: [id, domain]`.
 * The table is rebuilt (rows kept) because SQLite cannot add an autoincrement column.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('realm_domains_new')
    .addColumn('id', dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
      dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('allow_subdomains', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`INSERT INTO realm_domains_new (realm_id, domain, allow_subdomains)
    SELECT realm_id, domain, allow_subdomains FROM realm_domains ORDER BY realm_id, domain`.execute(db);
  await db.schema.dropTable('realm_domains').execute();
  await db.schema.alterTable('realm_domains_new').renameTo('realm_domains').execute();
  await db.schema.createIndex('realm_domains_realm_domain').unique().on('realm_domains').columns(['realm_id', 'domain']).execute();
}
