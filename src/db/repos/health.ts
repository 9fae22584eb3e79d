import { sql } from 'kysely';
import type { Tx } from '../index.js';

/** One round trip to the database; throws when it cannot answer. */
export async function pingDatabase(k: Tx): Promise<void> {
  await sql`SELECT 1`.execute(k);
}
