import { sql, type Kysely } from 'kysely';

/**
 * Two lookups that read a whole table: the organization's upload space used (`SUM(size)` of
 * its attachments), computed for every upload against the quota and for GET /attachments,
 * which read every organization's attachments; and a user's sessions, deleted when they are
 * deactivated or log out everywhere, which read every session. (realm_id, size) answers the
 * sum from the index alone.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE INDEX attachments_realm_size ON attachments (realm_id, size)`.execute(db);
  await sql`CREATE INDEX sessions_user ON sessions (user_id)`.execute(db);
}
