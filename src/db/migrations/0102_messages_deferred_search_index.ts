import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * SQLite: new messages wait in `messages_fts_pending` to be added to the full-text index in
 * batches (db/search_index.ts) instead of one FTS5 segment per commit. The update and delete
 * triggers touch the index only for messages already in it. PostgreSQL keeps indexing in the
 * writing transaction: nothing to do.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'postgres') return;
  await sql`CREATE TABLE messages_fts_pending (message_id INTEGER PRIMARY KEY)`.execute(db);
  const indexed = sql`NOT EXISTS (SELECT 1 FROM messages_fts_pending WHERE message_id = old.id)`;
  await sql`DROP TRIGGER messages_fts_insert`.execute(db);
  await sql`CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts_pending (message_id) VALUES (new.id);
  END`.execute(db);
  await sql`DROP TRIGGER messages_fts_delete`.execute(db);
  await sql`CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content, topic) SELECT 'delete', old.id, old.content, old.topic WHERE ${indexed};
    DELETE FROM messages_fts_pending WHERE message_id = old.id;
  END`.execute(db);
  await sql`DROP TRIGGER messages_fts_update`.execute(db);
  await sql`CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, topic ON messages WHEN ${indexed} BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content, topic) VALUES ('delete', old.id, old.content, old.topic);
    INSERT INTO messages_fts (rowid, content, topic) VALUES (new.id, new.content, new.topic);
  END`.execute(db);
}
