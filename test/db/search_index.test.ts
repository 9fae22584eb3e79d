import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { migrate, openDatabase, transaction, type Database } from '../../src/db/index.js';
import { insertMessages } from '../../src/db/repos/messages.js';
import { freshDatabaseUrl, startServer, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { createChannel, subscribe, sendStream, uniqueName } from '../api/messages_send.fixtures.js';

/**
 * Deferred full-text indexing (db/search_index.ts): on SQLite a new message's index entries
 * wait in messages_fts_pending and are added in batches. Nothing may observe it: a search
 * indexes what is pending first, edits and deletions of pending and of indexed messages keep
 * the index exact (FTS5's integrity-check compares it with the messages table), and another
 * connection's messages are indexed too.
 */
describe('deferred search index [sqlite]', () => {
  let url: string;
  let drop: () => Promise<void>;
  let db: Database;
  /** A plain connection: it reads the tables as stored, without indexing anything first. */
  let raw: SQLite.Database;
  let word = 0;

  before(async () => {
    ({ url, drop } = await freshDatabaseUrl('sqlite'));
    db = openDatabase(url);
    await migrate(db);
    raw = new SQLite(url.slice('sqlite:'.length));
  });
  after(async () => {
    raw.close();
    await db.close();
    await drop();
  });

  const pending = (): number => raw.prepare('SELECT COUNT(*) FROM messages_fts_pending').pluck().get() as number;
  const storedMatches = (w: string): number[] => raw.prepare('SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid').pluck().all(w) as number[];
  /** Searches through the server's connection, as a search narrow does. */
  const search = async (w: string): Promise<number[]> =>
    (await sql<{ rowid: number }>`SELECT rowid FROM messages_fts WHERE messages_fts MATCH ${w} ORDER BY rowid`.execute(db.kysely)).rows.map((r) => r.rowid);
  /** FTS5's check of the index against the messages table (rank 1: external content included). */
  const integrityCheck = (): void => {
    raw.prepare("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)").run();
  };
  const newWord = (): string => `zz${++word}qq`;

  async function addMessage(content: string, fail = false): Promise<number> {
    return transaction(db, async (tx) => {
      const [m] = await insertMessages(tx, [{
        realm_id: 1,
        sender_id: 1,
        type: 'stream',
        stream_id: 1,
        topic: 'search index',
        topic_lc: 'search index',
        dm_key: null,
        content,
        rendered_content: '<p>m</p>',
        date_sent: 0,
        sending_client: 'test',
        has_link: 0,
        has_image: 0,
        has_attachment: 0,
      }]);
      if (fail) throw new Error('rolled back');
      return m!.id;
    });
  }

  test('a new message is pending; the next statement naming the index adds it first', async () => {
    const w = newWord();
    const id = await addMessage(`hello ${w}`);
    assert.equal(pending(), 1);
    assert.deepEqual(storedMatches(w), [], 'the entries are deferred');
    assert.deepEqual(await search(w), [id]);
    assert.equal(pending(), 0);
    integrityCheck();
  });

  test('the background indexes new messages without any search', async () => {
    const w = newWord();
    const id = await addMessage(w);
    for (let waited = 0; pending() > 0; waited += 10) {
      assert.ok(waited < 5000, 'the background did not index the message');
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.deepEqual(storedMatches(w), [id]);
  });

  for (const when of ['pending', 'indexed'] as const) {
    test(`editing ${when === 'indexed' ? 'an' : 'a'} ${when} message: found by its new words only`, async () => {
      const [before, afterEdit, topicWord] = [newWord(), newWord(), newWord()];
      const id = await addMessage(`text ${before}`);
      if (when === 'indexed') assert.deepEqual(await search(before), [id]);
      else assert.equal(pending(), 1);
      await db.kysely.updateTable('messages').set({ content: `text ${afterEdit}`, topic: topicWord }).where('id', '=', id).execute();
      assert.deepEqual(await search(before), []);
      assert.deepEqual(await search(afterEdit), [id]);
      assert.deepEqual(await search(topicWord), [id]);
      integrityCheck();
    });

    test(`deleting ${when === 'indexed' ? 'an' : 'a'} ${when} message removes it from the index and leaves nothing pending`, async () => {
      const w = newWord();
      const id = await addMessage(w);
      if (when === 'indexed') assert.deepEqual(await search(w), [id]);
      await db.kysely.deleteFrom('messages').where('id', '=', id).execute();
      assert.equal(pending(), 0);
      assert.deepEqual(await search(w), []);
      integrityCheck();
    });
  }

  test('a rolled-back message leaves nothing pending or indexed', async () => {
    const w = newWord();
    await assert.rejects(addMessage(w, true), /rolled back/);
    assert.equal(pending(), 0);
    assert.deepEqual(await search(w), []);
  });

  test('a message written by another connection (the command-line tools) is indexed', async () => {
    const w = newWord();
    const info = raw
      .prepare(
        `INSERT INTO messages (realm_id, sender_id, type, stream_id, topic, topic_lc, content, rendered_content, date_sent, sending_client)
         VALUES (1, 1, 'stream', 1, 't', 't', ?, '<p>m</p>', 0, 'cli')`,
      )
      .run(w);
    assert.equal(pending(), 1);
    // The server checks for other connections' commits (SQLite's data_version) once per turn of
    // the event loop, before its first cached read.
    await new Promise((r) => setImmediate(r));
    db.cache.checkExternal?.();
    assert.deepEqual(await search(w), [Number(info.lastInsertRowid)]);
    assert.equal(pending(), 0);
  });
});

describe('deferred search index through the API [sqlite]', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer('sqlite');
  });
  after(async () => {
    await s.close();
  });

  test('a message is found by a search right after it is sent, and by its new words right after an edit', async () => {
    const { hamlet } = s.cast;
    const channel = await createChannel(s, uniqueName('fts'));
    await subscribe(s, channel, [hamlet.user]);
    const id = await sendStream(hamlet.client, channel.name, 'deferred', 'quixotic kumquat');
    const find = async (operand: string): Promise<number[]> => {
      const narrow = JSON.stringify([{ operator: 'channel', operand: channel.id }, { operator: 'search', operand }]);
      const r = ok(await hamlet.client.get('/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow }));
      return r.messages.map((m: { id: number }) => m.id);
    };
    assert.deepEqual(await find('kumquat'), [id]);
    ok(await hamlet.client.patch(`/messages/${id}`, { content: 'serendipitous persimmon' }));
    assert.deepEqual(await find('kumquat'), []);
    assert.deepEqual(await find('persimmon'), [id]);
  });
});
