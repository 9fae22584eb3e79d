import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Full-text search over messages (content and topic, as Zulip's search also matches the
 * topic) and the partial indexes the `is:` narrows need.
 *
 * SQLite: an external-content FTS5 table (no second copy of the text) kept in sync by
 * triggers, with the Porter stemmer. PostgreSQL: a GIN index on the same tsvector
 * expression db/repos/search.ts queries with; the two must stay identical.
 *
 * Flag bits (lib/message_flags.ts): mentioned 8 | stream_wildcard_mentioned 16 |
 * topic_wildcard_mentioned 32 = 56, has_alert_word 64, is_private 256. Queries must spell
 * these predicates exactly so both planners can prove the partial index applies.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await sql`CREATE INDEX user_messages_mentioned ON user_messages (user_id, message_id) WHERE (flags & 56) <> 0`.execute(db);
  await sql`CREATE INDEX user_messages_alerted ON user_messages (user_id, message_id) WHERE (flags & 64) <> 0`.execute(db);
  await sql`CREATE INDEX user_messages_private ON user_messages (user_id, message_id) WHERE (flags & 256) <> 0`.execute(db);

  if (dialect === 'postgres') {
    await sql`CREATE INDEX messages_search ON messages USING gin (to_tsvector('english'::regconfig, topic || ' ' || content))`.execute(db);
    return;
  }
  await sql`CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, topic, content='messages', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
  )`.execute(db);
  await sql`CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, content, topic) VALUES (new.id, new.content, new.topic);
  END`.execute(db);
  await sql`CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content, topic) VALUES ('delete', old.id, old.content, old.topic);
  END`.execute(db);
  await sql`CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, topic ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content, topic) VALUES ('delete', old.id, old.content, old.topic);
    INSERT INTO messages_fts (rowid, content, topic) VALUES (new.id, new.content, new.topic);
  END`.execute(db);
  await sql`INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')`.execute(db);
}
