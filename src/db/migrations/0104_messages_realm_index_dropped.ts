import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * `messages_realm` (realm_id, id) is read by no query: messages are always found by ID, by
 * channel (and topic), by conversation or through the reader's rows, each with its own index.
 * Every send paid for it with a B-tree insert and a page written at commit.
 */
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await sql`DROP INDEX messages_realm`.execute(db);
}
