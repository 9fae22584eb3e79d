import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { migrate, openDatabase, transaction, type Database } from '../../src/db/index.js';
import { deleteMessagesByIds, insertMessages, updateMessageRow, type SentMessageRow } from '../../src/db/repos/messages.js';
import { up as migration0105 } from '../../src/db/migrations/0105_messages_search_words.js';
import { channelMessageRow } from '../helpers/message_rows.js';
import { freshDatabaseUrl, testDatabases } from '../helpers/server.js';

/**
 * PostgreSQL's word index (migration 0105): message_search_words must hold exactly the
 * lexemes of every message's search_tsvector, whatever writes the messages (multi-row
 * inserts, edits of the content or topic, other updates, moves, deletions, rollbacks), and
 * the migration must build it for messages already there.
 */
if (testDatabases().includes('postgres')) {
  describe('search words index [postgres]', () => {
    let drop: () => Promise<void>;
    let db: Database;

    before(async () => {
      const fresh = await freshDatabaseUrl('postgres');
      drop = fresh.drop;
      db = openDatabase(fresh.url);
      await migrate(db);
    });
    after(async () => {
      await db?.close();
      await drop?.();
    });

    /** Rows of the index that the messages do not account for, and lexemes it lacks. */
    async function discrepancies(): Promise<{ extra: unknown[]; missing: unknown[] }> {
      const lexemes = sql`SELECT w AS word, m.id AS message_id FROM messages m, unnest(tsvector_to_array(m.search_tsvector)) AS w`;
      const extra = await sql`SELECT word, message_id FROM message_search_words EXCEPT ALL ${lexemes}`.execute(db.kysely);
      const missing = await sql`${lexemes} EXCEPT ALL SELECT word, message_id FROM message_search_words`.execute(db.kysely);
      return { extra: extra.rows, missing: missing.rows };
    }
    const assertExact = async (): Promise<void> => assert.deepEqual(await discrepancies(), { extra: [], missing: [] });
    const wordsOf = async (id: number): Promise<string[]> =>
      (await sql<{ word: string }>`SELECT word FROM message_search_words WHERE message_id = ${id} ORDER BY word`.execute(db.kysely)).rows.map((r) => r.word);
    const add = (rows: SentMessageRow[]) => transaction(db, (tx) => insertMessages(tx, rows));

    test('a multi-row insert adds every lexeme of each message', async () => {
      const [a, b] = await add([channelMessageRow('the lighthouse keepers', 'Harbour'), channelMessageRow('windmills turning', 'meadow')]);
      assert.deepEqual(await wordsOf(a!.id), ['harbour', 'keeper', 'lighthous']);
      assert.deepEqual(await wordsOf(b!.id), ['meadow', 'turn', 'windmil']);
      await assertExact();
    });

    test('edits of the content or topic replace the changed lexemes; other updates and moves change nothing', async () => {
      const [m] = await add([channelMessageRow('lighthouse keeper', 'harbour')]);
      const id = m!.id;
      await transaction(db, (tx) => updateMessageRow(tx, id, { content: 'lighthouse painter' }));
      assert.deepEqual(await wordsOf(id), ['harbour', 'lighthous', 'painter']);
      await transaction(db, (tx) => updateMessageRow(tx, id, { topic: 'Meadow', topic_lc: 'meadow' }));
      assert.deepEqual(await wordsOf(id), ['lighthous', 'meadow', 'painter']);
      await transaction(db, (tx) => updateMessageRow(tx, id, { content: 'lighthouse painter', rendered_content: '<p>x</p>', has_link: 1, stream_id: 2 }));
      assert.deepEqual(await wordsOf(id), ['lighthous', 'meadow', 'painter']);
      await assertExact();
    });

    test('deleting messages removes their rows; a rolled-back insert leaves none', async () => {
      const [a, b, c] = await add([channelMessageRow('alpha bravo', 't'), channelMessageRow('bravo charlie', 't'), channelMessageRow('charlie delta', 't')]);
      await transaction(db, (tx) => deleteMessagesByIds(tx, [a!.id, c!.id]));
      assert.deepEqual(await wordsOf(a!.id), []);
      assert.deepEqual(await wordsOf(c!.id), []);
      assert.deepEqual(await wordsOf(b!.id), ['bravo', 'charli']);
      await assert.rejects(
        transaction(db, async (tx) => {
          await insertMessages(tx, [channelMessageRow('echo foxtrot', 't')]);
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      await assertExact();
    });

    test('the migration indexes the messages already there', async () => {
      await sql`DROP TABLE message_search_words`.execute(db.kysely);
      for (const f of ['insert', 'delete', 'update']) await sql`DROP FUNCTION ${sql.raw(`message_search_words_${f}`)}() CASCADE`.execute(db.kysely);
      await sql`CREATE INDEX messages_search_tsvector ON messages USING gin (search_tsvector)`.execute(db.kysely);
      await add([channelMessageRow('hotel india', 'golf')]);
      await transaction(db, (tx) => migration0105(tx, 'postgres'));
      await assertExact();
      const [m] = await add([channelMessageRow('kilo lima', 'juliet')]);
      assert.deepEqual(await wordsOf(m!.id), ['juliet', 'kilo', 'lima']);
      await assertExact();
    });
  });
}
