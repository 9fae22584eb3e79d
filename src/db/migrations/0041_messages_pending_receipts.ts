import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Receipts written behind their messages (db/receipts.ts): one row per message whose
 * user_messages rows are not inserted yet, holding the recipients and their flags as packed
 * little-endian uint32 pairs. SQLite uses it; PostgreSQL inserts user_messages directly, and
 * has the table so both databases keep one schema.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('user_messages_pending')
    .addColumn('message_id', dialect === 'postgres' ? 'bigint' : 'integer', (c) => c.primaryKey().references('messages.id').onDelete('cascade'))
    .addColumn('recipients', dialect === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
    .execute();
}
