import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * PostgreSQL: each message's tsvector stored in a generated column (as Zulip keeps
 * search_tsvector), with the GIN index on the column instead of on the expression
 * (migration 0040); db/repos/search.ts queries the column. The newest matches of a common
 * word come from walking messages newest first and testing each row, which with only the
 * expression index recomputed to_tsvector per row (~2 µs; 70 ms for the newest 100 of a word
 * in one message of 166); the stored column makes the test a lookup.
 *
 * That walk is cheap only while matches are dense, so the planner must tell a rare word
 * from a common one: it estimates a word missing from the column's most-common-elements
 * list at half the least frequent entry's frequency, and with the default list (1,000
 * entries) a word that appears nowhere looked common enough to walk all messages (~300 ms on
 * a million). 5,000 entries make such estimates small, so rare words use the GIN index; it
 * costs ANALYZE a larger sample (1.3 s instead of 0.3 s on a million messages). ANALYZE runs
 * here because a new column has no statistics until autovacuum gets to it.
 *
 * Adding the column rewrites the table once. SQLite keeps its FTS5 table: nothing to do.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`ALTER TABLE messages ADD COLUMN search_tsvector tsvector
    GENERATED ALWAYS AS (to_tsvector('english'::regconfig, topic || ' ' || content)) STORED`.execute(db);
  await sql`ALTER TABLE messages ALTER COLUMN search_tsvector SET STATISTICS 500`.execute(db);
  await sql`CREATE INDEX messages_search_tsvector ON messages USING gin (search_tsvector)`.execute(db);
  await sql`DROP INDEX messages_search`.execute(db);
  await sql`ANALYZE messages`.execute(db);
}
