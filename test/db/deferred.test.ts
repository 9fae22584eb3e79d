import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { migrate, openDatabase, transaction, type Database } from '../../src/db/index.js';
import { insertMessages } from '../../src/db/repos/messages.js';
import { channelMessageRow } from '../helpers/message_rows.js';
import { freshDatabaseUrl, startServer, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { createChannel, subscribe, sendStream, uniqueName } from '../api/messages_send.fixtures.js';

/**
 * A migrated SQLite database for one suite, and a plain connection to its file: it reads (and,
 * like the command-line tools, writes) the tables as stored, without doing deferred work first.
 */
function suiteDatabase(): { readonly url: string; readonly db: Database; readonly raw: SQLite.Database } {
  const suite = {} as { url: string; db: Database; raw: SQLite.Database; drop: () => Promise<void> };
  before(async () => {
    ({ url: suite.url, drop: suite.drop } = await freshDatabaseUrl('sqlite'));
    suite.db = openDatabase(suite.url);
    await migrate(suite.db);
    suite.raw = new SQLite(suite.url.slice('sqlite:'.length));
  });
  after(async () => {
    suite.raw.close();
    await suite.db.close();
    await suite.drop();
  });
  return suite;
}

/**
 * Deferred receipts (db/receipts.ts): on SQLite a send commits one user_messages_pending row
 * per message and the user_messages rows follow in sorted batches. Nothing may observe the
 * difference: every statement naming user_messages materializes first, in its transaction,
 * another connection (the command-line tools, a restart after a crash) sees the rows, and a
 * rolled-back send leaves nothing behind.
 */
describe('deferred receipts [sqlite]', () => {
  const t = suiteDatabase();
  let nextMessage = 0;

  const count = (sql: string, ...args: unknown[]): number => (t.raw.prepare(sql).pluck().get(...args) as number) ?? 0;
  const stored = (messageId: number): number => count('SELECT COUNT(*) FROM user_messages WHERE message_id = ?', messageId);
  const pendingRows = (): number => count('SELECT COUNT(*) FROM user_messages_pending');

  /** Writes a message and stages its receipts (users 1..n; user 1 has read it), as a send does. */
  async function stagedMessage(on: Database, recipients: number, fail = false): Promise<number> {
    const id = await transaction(on, async (tx) => {
      const [m] = await insertMessages(tx, [channelMessageRow(`message ${++nextMessage}`)]);
      on.receipts!.stage([{ messageId: m!.id, flags: new Map(Array.from({ length: recipients }, (_, i) => [recipients - i, i === recipients - 1 ? 1 : 0])) }]);
      if (fail) throw new Error('rolled back');
      return m!.id;
    });
    return id;
  }

  test('a send commits one pending row; the next statement naming user_messages inserts the rows first, with their flags', async () => {
    const id = await stagedMessage(t.db, 3);
    assert.equal(pendingRows(), 1);
    assert.equal(stored(id), 0, 'the rows are deferred');
    const rows = await t.db.kysely.selectFrom('user_messages').selectAll().where('message_id', '=', id).orderBy('user_id').execute();
    assert.deepEqual(rows, [
      { user_id: 1, message_id: id, flags: 1 },
      { user_id: 2, message_id: id, flags: 0 },
      { user_id: 3, message_id: id, flags: 0 },
    ]);
    assert.equal(pendingRows(), 0);
    assert.equal(stored(id), 3);
  });

  test('a write to user_messages also materializes first (marking the deferred rows read updates them)', async () => {
    const id = await stagedMessage(t.db, 2);
    const res = await t.db.kysely.updateTable('user_messages').set({ flags: 1 }).where('message_id', '=', id).executeTakeFirst();
    assert.equal(Number(res.numUpdatedRows), 2);
    assert.equal(count('SELECT COUNT(*) FROM user_messages WHERE message_id = ? AND flags = 1', id), 2);
  });

  test('a rolled-back send stages nothing', async () => {
    await assert.rejects(stagedMessage(t.db, 2, true), /rolled back/);
    assert.equal(pendingRows(), 0);
    await t.db.kysely.selectFrom('user_messages').select('user_id').limit(1).execute();
    assert.equal(count('SELECT COUNT(*) FROM user_messages WHERE message_id > ?', nextMessage + 100), 0);
  });

  test('materialized inside a transaction that rolls back: the rows are pending again, and the next reader still materializes them', async () => {
    const id = await stagedMessage(t.db, 3);
    await assert.rejects(
      transaction(t.db, async (tx) => {
        assert.equal((await tx.selectFrom('user_messages').select('user_id').where('message_id', '=', id).execute()).length, 3);
        // A second statement finds nothing pending, inside the transaction.
        await tx.selectFrom('user_messages').select('flags').where('user_id', '=', 1).execute();
        throw new Error('rolled back');
      }),
      /rolled back/,
    );
    assert.equal(pendingRows(), 1);
    assert.equal(stored(id), 0);
    assert.equal(t.db.receipts!.pending, true, 'a rolled-back materialization must leave the pending flag set');
    const rows = await t.db.kysely.selectFrom('user_messages').select('user_id').where('message_id', '=', id).execute();
    assert.equal(rows.length, 3);
  });

  test('the background materializes a 10,000-recipient message in slices, with the event loop free between them', async () => {
    const id = await stagedMessage(t.db, 10_000);
    t.db.receipts!.schedule(0);
    const seen = new Set<number>();
    for (let spins = 0; stored(id) < 10_000; spins++) {
      assert.ok(spins < 100_000, 'materialization did not finish');
      seen.add(stored(id));
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(pendingRows(), 0);
    assert.ok([...seen].some((n) => n > 0 && n < 10_000), `no partial state between slices: saw ${[...seen].join(', ')}`);
    // A slice writes the rows of at most 256 different people: each costs pages of its own.
    const steps = [...seen, 10_000].slice(1).map((n, i) => n - [...seen][i]!);
    assert.ok(steps.every((d) => d <= 256), `slices of more than 256 people: ${steps.join(', ')}`);
  });

  test('the background writes many messages to the same people in large slices', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 40; i++) ids.push(await stagedMessage(t.db, 50));
    const total = () => ids.reduce((sum, id) => sum + stored(id), 0);
    t.db.receipts!.schedule(0);
    while (total() === 0) await new Promise((r) => setImmediate(r));
    // 2,000 rows of 50 people: one slice, not eight.
    assert.equal(total(), 2_000);
    assert.equal(pendingRows(), 0);
  });

  test('another connection (the command-line tools, a restart after a crash) sees rows staged by this one', async () => {
    const id = await stagedMessage(t.db, 4);
    const other = openDatabase(t.url);
    try {
      const rows = await other.kysely.selectFrom('user_messages').select('user_id').where('message_id', '=', id).execute();
      assert.equal(rows.length, 4);
      assert.equal(pendingRows(), 0);
    } finally {
      await other.close();
    }
  });

  test('deleting a message with staged receipts leaves no pending row behind', async () => {
    const id = await stagedMessage(t.db, 2);
    await t.db.kysely.deleteFrom('messages').where('id', '=', id).execute();
    assert.equal(pendingRows(), 0);
  });
});

/**
 * Deferred full-text indexing (db/search_index.ts): on SQLite a new message's index entries
 * wait in messages_fts_pending and are added in batches. Nothing may observe it: a search
 * indexes what is pending first, edits and deletions of pending and of indexed messages keep
 * the index exact (FTS5's integrity-check compares it with the messages table), and another
 * connection's messages are indexed too.
 */
describe('deferred search index [sqlite]', () => {
  const t = suiteDatabase();
  let word = 0;

  const pending = (): number => t.raw.prepare('SELECT COUNT(*) FROM messages_fts_pending').pluck().get() as number;
  const storedMatches = (w: string): number[] => t.raw.prepare('SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid').pluck().all(w) as number[];
  /** Searches through the server's connection, as a search narrow does. */
  const search = async (w: string): Promise<number[]> =>
    (await sql<{ rowid: number }>`SELECT rowid FROM messages_fts WHERE messages_fts MATCH ${w} ORDER BY rowid`.execute(t.db.kysely)).rows.map((r) => r.rowid);
  /** FTS5's check of the index against the messages table (rank 1: external content included). */
  const integrityCheck = (): void => {
    t.raw.prepare("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)").run();
  };
  const newWord = (): string => `zz${++word}qq`;

  async function addMessage(content: string, fail = false): Promise<number> {
    return transaction(t.db, async (tx) => {
      const [m] = await insertMessages(tx, [channelMessageRow(content)]);
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
      await t.db.kysely.updateTable('messages').set({ content: `text ${afterEdit}`, topic: topicWord }).where('id', '=', id).execute();
      assert.deepEqual(await search(before), []);
      assert.deepEqual(await search(afterEdit), [id]);
      assert.deepEqual(await search(topicWord), [id]);
      integrityCheck();
    });

    test(`deleting ${when === 'indexed' ? 'an' : 'a'} ${when} message removes it from the index and leaves nothing pending`, async () => {
      const w = newWord();
      const id = await addMessage(w);
      if (when === 'indexed') assert.deepEqual(await search(w), [id]);
      await t.db.kysely.deleteFrom('messages').where('id', '=', id).execute();
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
    const info = t.raw
      .prepare(
        `INSERT INTO messages (realm_id, sender_id, type, stream_id, topic, topic_lc, content, rendered_content, date_sent, sending_client)
         VALUES (1, 1, 'stream', 1, 't', 't', ?, '<p>m</p>', 0, 'cli')`,
      )
      .run(w);
    assert.equal(pending(), 1);
    // The server checks for other connections' commits (SQLite's data_version) once per turn of
    // the event loop, before its first cached read.
    await new Promise((r) => setImmediate(r));
    t.db.cache.checkExternal?.();
    assert.deepEqual(await search(w), [Number(info.lastInsertRowid)]);
    assert.equal(pending(), 0);
  });
});

describe('deferred receipts through the API [sqlite]', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer('sqlite');
  });
  after(async () => {
    await s.close();
  });

  test('a message is unread for its recipients at once, and read for a sender who asked (read_by_sender)', async () => {
    const { hamlet, othello } = s.cast;
    const channel = await createChannel(s, uniqueName('receipts'));
    await subscribe(s, channel, [hamlet.user, othello.user]);
    const id = await sendStream(hamlet.client, channel.name, 'deferred', 'hello', { read_by_sender: true });
    const narrow = JSON.stringify([{ operator: 'is', operand: 'unread' }, { operator: 'channel', operand: channel.id }]);
    const unread = ok(await othello.client.get('/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow }));
    assert.deepEqual(unread.messages.map((m: { id: number }) => m.id), [id]);
    assert.deepEqual(unread.messages[0].flags, []);
    const own = ok(await hamlet.client.get('/messages', { anchor: id, num_before: 0, num_after: 0 }));
    assert.deepEqual(own.messages[0].flags, ['read']);
  });
});
