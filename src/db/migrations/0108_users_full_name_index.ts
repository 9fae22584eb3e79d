import { sql, type Kysely } from 'kysely';

/**
 * A message that mentions someone by name (`@**Full Name**`, what the composer inserts)
 * looks the name up among the organization's active users, case-insensitively:
 * `lower(full_name) IN (...)`. Without an index on it the send read every user of the
 * organization through the (realm, email) index. With this one both databases search it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE INDEX users_realm_full_name ON users (realm_id, lower(full_name))`.execute(db);
}
