import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/** The flag tests the queries make, each matching a partial index (migrations 0001, 0040). */
const FLAG_MASKS = [1, 2, 56, 64, 256] as const;

/**
 * PostgreSQL: statistics on each flag test of `user_messages` (`flags & 256`, etc.).
 * Without them the planner estimates `(flags & 256) <> 0` with its default for an
 * inequality, 99.5% of the rows: a user's direct messages, starred or mentioned messages
 * looked as many as all of their rows. On a million messages that made register's query
 * of recent direct-message conversations start two parallel workers for a result of no
 * rows, 6-8 ms of its 22 ms. With the statistics each test is estimated from its real
 * frequency. Expression statistics need PostgreSQL 14; older servers keep the estimates.
 * ANALYZE (a sample, not a scan) makes them effective now rather than at autovacuum's next
 * visit. SQLite estimates these from the partial indexes themselves: nothing to do.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  const { rows } = await sql<{ v: number }>`SELECT current_setting('server_version_num')::int AS v`.execute(db);
  if (rows[0]!.v < 140000) return;
  for (const mask of FLAG_MASKS) {
    await sql`CREATE STATISTICS ${sql.raw(`user_messages_flags_${mask}`)} ON (flags & ${sql.raw(String(mask))}) FROM user_messages`.execute(db);
  }
  await sql`ANALYZE user_messages`.execute(db);
}
