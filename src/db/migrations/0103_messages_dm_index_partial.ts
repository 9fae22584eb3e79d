import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * `messages_dm` (dm_key, id) only for direct messages. Channel messages have no dm_key, yet
 * each took an entry in the NULL end of this index: one more B-tree insert and one more page
 * written at every commit of a channel message, for an entry no query reads. Both databases
 * use the partial index for `dm_key = ?`, which implies `dm_key IS NOT NULL`.
 */
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await sql`DROP INDEX messages_dm`.execute(db);
  await sql`CREATE INDEX messages_dm ON messages (dm_key, id) WHERE dm_key IS NOT NULL`.execute(db);
}
