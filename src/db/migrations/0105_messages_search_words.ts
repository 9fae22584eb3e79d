import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * PostgreSQL: each word's messages in ID order, so that a search walks the newest matches of
 * one of its words backwards (db/repos/search.ts) as SQLite walks FTS5's, instead of testing
 * every message newest first (16,500 rows for the newest 100 of a word in one message of 166).
 * `message_search_words` holds one row per lexeme of each message's stored search_tsvector
 * (migration 0101), kept by triggers so that no application code knows of it, as SQLite's
 * FTS5 triggers are: new and deleted messages per statement (transition tables), edits per
 * row and only when the tsvector changed (a trigger with a column list cannot have
 * transition tables, and most updates of messages touch neither topic nor content).
 *
 * The GIN index goes: every search without a topic or conversation now starts from a word's
 * list (a rare word's is short) and the others test a row each, so nothing reads it; its
 * statistics target returns to the default (it was raised so the planner would pick the GIN
 * index for rare words; see 0101).
 *
 * A search names its word through an expression or subquery of its text, and the planner
 * estimates that word's list from the table's count of distinct words. With the real count
 * (most words are rare) the list looked a few rows long and the planner read and sorted all
 * of a common word's list (88 ms instead of 1.4 ms in the bench, before any VACUUM). The
 * distinct words are declared a thousandth of the rows, so every word's list is taken to be
 * 1,000 rows long: long enough to walk in order and stop at the limit (for a rare word, a
 * short walk anyway), short enough not to be merged with all messages instead (as with 100
 * distinct words). On a small database (tens of thousands of messages) the planner may
 * rather walk the reader's messages and probe the list: as cheap there.
 *
 * Writes are held off while the table is filled, so that no message is missed between the
 * copy and the triggers. The key is built after the copy (C collation: byte order, the
 * fastest to sort and compare). SQLite has FTS5: nothing to do.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`LOCK TABLE messages IN SHARE ROW EXCLUSIVE MODE`.execute(db);
  await sql`CREATE TABLE message_search_words (word text COLLATE "C" NOT NULL, message_id bigint NOT NULL)`.execute(db);
  await sql`INSERT INTO message_search_words (word, message_id)
    SELECT w, m.id FROM messages m, unnest(tsvector_to_array(m.search_tsvector)) AS w`.execute(db);
  await sql`ALTER TABLE message_search_words ADD CONSTRAINT message_search_words_pk PRIMARY KEY (word, message_id)`.execute(db);

  await sql`CREATE FUNCTION message_search_words_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO message_search_words (word, message_id)
        SELECT w, n.id FROM new_messages n, unnest(tsvector_to_array(n.search_tsvector)) AS w;
      RETURN NULL;
    END $$`.execute(db);
  await sql`CREATE TRIGGER message_search_words_insert AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_messages FOR EACH STATEMENT EXECUTE FUNCTION message_search_words_insert()`.execute(db);

  await sql`CREATE FUNCTION message_search_words_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM message_search_words s USING old_messages o, unnest(tsvector_to_array(o.search_tsvector)) AS w
        WHERE s.word = w AND s.message_id = o.id;
      RETURN NULL;
    END $$`.execute(db);
  await sql`CREATE TRIGGER message_search_words_delete AFTER DELETE ON messages
    REFERENCING OLD TABLE AS old_messages FOR EACH STATEMENT EXECUTE FUNCTION message_search_words_delete()`.execute(db);

  await sql`CREATE FUNCTION message_search_words_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM message_search_words WHERE message_id = OLD.id AND word = ANY (ARRAY(
        SELECT unnest(tsvector_to_array(OLD.search_tsvector)) EXCEPT SELECT unnest(tsvector_to_array(NEW.search_tsvector))));
      INSERT INTO message_search_words (word, message_id)
        SELECT w, NEW.id FROM (SELECT unnest(tsvector_to_array(NEW.search_tsvector)) EXCEPT SELECT unnest(tsvector_to_array(OLD.search_tsvector))) AS d(w);
      RETURN NULL;
    END $$`.execute(db);
  await sql`CREATE TRIGGER message_search_words_update AFTER UPDATE OF topic, content ON messages
    FOR EACH ROW WHEN (OLD.search_tsvector IS DISTINCT FROM NEW.search_tsvector) EXECUTE FUNCTION message_search_words_update()`.execute(db);

  await sql`DROP INDEX messages_search_tsvector`.execute(db);
  await sql`ALTER TABLE messages ALTER COLUMN search_tsvector SET STATISTICS -1`.execute(db);
  await sql`ALTER TABLE message_search_words ALTER COLUMN word SET (n_distinct = -0.001)`.execute(db);
  await sql`ANALYZE message_search_words`.execute(db);
}
