import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect, SqliteDialect, sql, type CompiledQuery } from 'kysely';
import { migrate, openDatabase, type Database } from '../../src/db/index.js';
import type { DB } from '../../src/db/tables.js';
import { fetchMatchingMessages, fetchNarrowRange, findFirstUnread, type NarrowReader } from '../../src/db/repos/narrow.js';
import { fetchTopicHistoryRows } from '../../src/db/repos/messages.js';
import { fetchUserIdsSharingConversations } from '../../src/db/repos/users.js';
import { firstUnreadMuting, resolveNarrow } from '../../src/lib/narrow/resolve.js';
import { parseNarrow } from '../../src/lib/narrow/terms.js';
import { freshDatabaseUrl, testDatabases, type DbKind } from '../helpers/server.js';
import { buildCorpus, type Corpus } from './narrow_index_corpus.js';

/**
 * The narrow queries GET /messages runs must be index range scans, never full scans of
 * messages or user_messages: a corpus of 14,000 messages, the real query text captured
 * from the repository functions, and each database's own plan for it.
 */
const NEWEST = { anchor: 10_000_000_000_000_000, numBefore: 100, numAfter: 0, includeAnchor: true, anchoredToLeft: false, anchoredToRight: true };

for (const kind of testDatabases()) {
  describe(`narrow query plans [${kind}]`, () => {
    let drop: () => Promise<void>;
    let db: Database;
    let spy: Kysely<DB>;
    let corpus: Corpus;
    let plan: (q: CompiledQuery) => Promise<string[]>;
    const captured: CompiledQuery[] = [];

    before(async () => {
      const fresh = await freshDatabaseUrl(kind as DbKind);
      drop = fresh.drop;
      db = openDatabase(fresh.url);
      await migrate(db);
      corpus = await buildCorpus(db.kysely);
      // The SQLite spy below reads the tables as stored: index the new messages first, as any
      // statement naming the index on the server's own connection would (db/search_index.ts).
      db.searchIndex?.flushAll();
      const log = (e: { level: string; query: CompiledQuery }): void => {
        if (e.level === 'query') captured.push(e.query);
      };
      if (kind === 'sqlite') {
        // A second connection to the same file, logging the SQL the repository functions run.
        const file = fresh.url.slice('sqlite:'.length);
        const conn = new SQLite(file);
        spy = new Kysely<DB>({ dialect: new SqliteDialect({ database: conn }), log });
        plan = async (q) => conn.prepare(`EXPLAIN QUERY PLAN ${q.sql}`).all(...(q.parameters as unknown[])).map((r) => (r as { detail: string }).detail);
      } else {
        // As autovacuum would have by now on a real server: statistics, and new rows moved from
        // the GIN index's pending list into the index proper.
        await sql`VACUUM ANALYZE`.execute(db.kysely);
        const pool = new pg.Pool({ connectionString: fresh.url, max: 2 });
        spy = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log });
        plan = async (q) => (await pool.query(`EXPLAIN ${q.sql}`, q.parameters as unknown[])).rows.map((r: Record<string, string>) => r['QUERY PLAN']!);
      }
    });

    after(async () => {
      await spy?.destroy();
      await db?.close();
      await drop?.();
    });

    const reader = (): NarrowReader => ({ userId: corpus.readerId, dialect: db.dialect });
    const resolve = async (narrow: unknown) => {
      const realm = await db.kysely.selectFrom('realms').selectAll().where('id', '=', corpus.realmId).executeTakeFirstOrThrow();
      const user = await db.kysely.selectFrom('users').selectAll().where('id', '=', corpus.readerId).executeTakeFirstOrThrow();
      return resolveNarrow(db.kysely, realm, user, parseNarrow(narrow));
    };

    /** Runs `fn`, returning the plans of the queries it ran and how many rows the last returned. */
    async function plansOf(fn: () => Promise<unknown[] | number | null>): Promise<{ plans: string[][]; rows: number }> {
      captured.length = 0;
      const out = await fn();
      const plans: string[][] = [];
      for (const q of captured) plans.push(await plan(q));
      return { plans, rows: Array.isArray(out) ? out.length : out === null ? 0 : 1 };
    }

    function assertNoFullScan(plans: string[][]): void {
      for (const p of plans) {
        const text = p.join('\n');
        if (kind === 'sqlite') {
          assert.doesNotMatch(text, /^SCAN (m|um)\b/m, text);
        } else {
          assert.doesNotMatch(text, /Seq Scan on (messages|user_messages)\b/, text);
        }
      }
    }

    /**
     * `postgresOrdered`: PostgreSQL too reads the rows in order (elsewhere it may prefer a bitmap
     * scan and a sort for the corpus's few rows).
     */
    async function checkNewest(narrow: unknown, expect: { sqlite: RegExp; postgres: RegExp; minRows: number; ordered?: boolean; postgresOrdered?: boolean }): Promise<void> {
      const resolved = await resolve(narrow);
      const { plans, rows } = await plansOf(() => fetchNarrowRange(spy, reader(), resolved, NEWEST));
      assert.ok(rows >= expect.minRows, `expected at least ${expect.minRows} rows, got ${rows}`);
      assert.equal(plans.length, 1);
      assertNoFullScan(plans);
      const text = plans[0]!.join('\n');
      assert.match(text, kind === 'sqlite' ? expect.sqlite : expect.postgres, text);
      // Rows come straight off the index in order: no sort step (but the one that orders each
      // row's few reactions by ID, in the subquery that reads them; PostgreSQL sorts those
      // inside the aggregate, with no Sort node).
      const outer = text.split('\n').filter((line) => !line.includes('json_group_array')).join('\n');
      if (kind === 'sqlite' && expect.ordered !== false) assert.doesNotMatch(outer, /TEMP B-TREE/, text);
      if (kind === 'postgres' && expect.postgresOrdered) assert.doesNotMatch(text, /\bSort\b/, text);
    }

    test('the corpus is large enough', () => {
      assert.ok(corpus.messageCount >= 10_000);
    });

    test('channel + topic: one range scan of (stream_id, topic_lc, id)', async () => {
      const topic = await db.kysely.selectFrom('messages').select('topic').where('stream_id', '=', corpus.streamIds[2]!).limit(1).executeTakeFirstOrThrow();
      await checkNewest([['channel', `channel 2`], ['topic', topic.topic]], {
        sqlite: /^SEARCH m USING INDEX messages_stream_topic \(stream_id=\? AND topic_lc=\?\)$/m,
        postgres: /messages_stream_topic\b/,
        minRows: 1,
      });
    });

    test('channel: the (stream_id, id) index', async () => {
      await checkNewest([{ operator: 'channel', operand: corpus.streamIds[0] }], {
        sqlite: /^SEARCH m USING INDEX messages_stream \(stream_id=\?\)$/m,
        postgres: /messages_stream\b/,
        minRows: 50,
      });
      // A busy channel: PostgreSQL may walk the primary key backwards instead, which stops after 100 rows.
      await checkNewest([{ operator: 'channel', operand: corpus.streamIds[2] }], {
        sqlite: /^SEARCH m USING INDEX messages_stream \(stream_id=\?\)$/m,
        postgres: /Index Scan (Backward )?using (messages_stream|messages_pkey)/,
        minRows: 100,
      });
    });

    test('dm: the (dm_key, id) index', async () => {
      await checkNewest([{ operator: 'dm', operand: [corpus.otherId] }], {
        sqlite: /^SEARCH m USING INDEX messages_dm \(dm_key=\?\)$/m,
        postgres: /messages_dm\b/,
        minRows: 50,
      });
    });

    test('sender: the (sender_id, id) index', async () => {
      await checkNewest([{ operator: 'sender', operand: corpus.quietSenderId }], {
        sqlite: /^SEARCH m USING INDEX messages_sender \(sender_id=\?\)$/m,
        postgres: /messages_sender\b/,
        minRows: 1,
      });
      // A prolific sender: PostgreSQL may walk the primary key backwards instead, stopping after 100 rows.
      await checkNewest([{ operator: 'sender', operand: corpus.otherId }], {
        sqlite: /^SEARCH m USING INDEX messages_sender \(sender_id=\?\)$/m,
        postgres: /Index Scan (Backward )?using (messages_sender|messages_pkey)|messages_sender/,
        minRows: 1,
      });
    });

    test('is:starred, is:unread, is:mentioned, is:dm: partial indexes on the reader rows', async () => {
      for (const [operand, index] of [['starred', 'user_messages_starred'], ['unread', 'user_messages_unread'], ['mentioned', 'user_messages_mentioned'], ['dm', 'user_messages_private']]) {
        await checkNewest([['is', operand!]], {
          sqlite: new RegExp(`^SEARCH um USING INDEX ${index} \\(user_id=\\?\\)$`, 'm'),
          postgres: new RegExp(`${index}\\b`),
          minRows: 1,
        });
      }
    });

    test('no narrow: the reader rows by primary key', async () => {
      await checkNewest([], {
        sqlite: /^SEARCH um USING (INDEX sqlite_autoindex_user_messages_1|PRIMARY KEY) \(user_id=\?\)$/m,
        postgres: /user_messages_pk\b/,
        minRows: 100,
      });
    });

    test('search: the index of its words, matches newest first', async () => {
      const outerFts = /^SCAN messages_fts VIRTUAL TABLE INDEX \d+:M\d+$/m;
      // PostgreSQL: one word's messages walked backwards (message_search_words, migration 0105).
      const postings = /Index Only Scan Backward using message_search_words_pk on message_search_words sw\b/;
      await checkNewest([['search', 'alpha']], { sqlite: outerFts, postgres: postings, minRows: 100, postgresOrdered: true });
      // Two words: the second word's list is merged in (or probed), not each message fetched.
      const twoLists = new RegExp(`^(?=[^]*${postings.source})(?=[^]*message_search_words sw2\\b)`);
      await checkNewest([['search', 'hotel bravo']], { sqlite: outerFts, postgres: twoLists, minRows: 1, postgresOrdered: true });
      // A word no message has: its list is empty, rather than every message tested newest first.
      await checkNewest([['search', 'zulu']], { sqlite: outerFts, postgres: postings, minRows: 0, postgresOrdered: true });
      // With a channel, PostgreSQL may instead read the channel's messages that match and sort them.
      await checkNewest([['channel', 'channel 2'], ['search', 'alpha']], { sqlite: outerFts, postgres: /message_search_words_pk|messages_stream\b/, minRows: 1 });
      // A narrow condition with its own index keeps that index and checks the matches.
      await checkNewest([{ operator: 'dm', operand: [corpus.otherId] }, ['search', 'alpha']], {
        sqlite: /^SEARCH m USING INDEX messages_dm \(dm_key=\?/m,
        postgres: /messages_dm\b/,
        minRows: 1,
      });
    });

    test('first_unread and matches_narrow stay on indexes', async () => {
      const resolved = await resolve([['channel', 'channel 2']]);
      const first = await plansOf(() => findFirstUnread(spy, reader(), resolved, firstUnreadMuting(resolved)));
      assert.equal(first.rows, 1);
      assertNoFullScan(first.plans);
      if (kind === 'sqlite') assert.match(first.plans[0]!.join('\n'), /^SEARCH um USING INDEX user_messages_unread/m);
      const all = await resolve([]);
      const home = await plansOf(() => findFirstUnread(spy, reader(), all, firstUnreadMuting(all)));
      assertNoFullScan(home.plans);
      const ids = (await db.kysely.selectFrom('user_messages').select('message_id').where('user_id', '=', corpus.readerId).limit(50).execute()).map((r) => r.message_id);
      const matched = await plansOf(() => fetchMatchingMessages(spy, reader(), all, ids));
      assert.equal(matched.rows, 50);
      assertNoFullScan(matched.plans);
    });

    test("a guest's visible users: direct-message partners from the private rows' partial index", async () => {
      const { plans } = await plansOf(() => fetchUserIdsSharingConversations(spy, corpus.realmId, corpus.readerId));
      const dmPlan = plans.map((p) => p.join('\n')).find((t) => /user_messages/.test(t))!;
      assert.match(dmPlan, /user_messages_private/, dmPlan);
      const dmKeys = await db.kysely
        .selectFrom('user_messages')
        .innerJoin('messages', 'messages.id', 'user_messages.message_id')
        .select('messages.dm_key')
        .where('user_messages.user_id', '=', corpus.readerId)
        .where('messages.type', '=', 'private')
        .execute();
      assert.ok(dmKeys.length > 0, 'the reader has direct messages');
      const got = new Set(await fetchUserIdsSharingConversations(db.kysely, corpus.realmId, corpus.readerId));
      for (const { dm_key } of dmKeys) for (const id of dm_key!.split(',')) assert.ok(got.has(Number(id)), `partner ${id}`);
    });

    test("a channel's topics: each topic's newest ID from the (stream_id, topic_lc, id) index alone", async () => {
      const streamId = corpus.streamIds[2]!;
      const { plans } = await plansOf(() => fetchTopicHistoryRows(spy, streamId, null));
      const text = plans[0]!.join('\n');
      if (kind === 'sqlite') {
        assert.match(text, /^SEARCH messages USING COVERING INDEX messages_stream_topic \(stream_id=\?\)$/m, text);
        assert.match(text, /^SEARCH messages USING INTEGER PRIMARY KEY \(rowid=\?\)$/m, text);
        assert.doesNotMatch(text, /^SCAN messages$/m, text);
      } else {
        // The corpus is small enough for PostgreSQL to fetch the topics' newest messages by
        // hashing a scan of the table; what matters is that the grouping reads only the index.
        assert.match(text, /Index Only Scan using messages_stream_topic on messages/, text);
      }
      // Each topic once, with its newest message's ID and spelling.
      const rows = await db.kysely.selectFrom('messages').select(['id', 'topic', 'topic_lc']).where('stream_id', '=', streamId).orderBy('id').execute();
      const expected = new Map<string, { topic: string; max_id: number }>();
      for (const r of rows) expected.set(r.topic_lc, { topic: r.topic, max_id: Number(r.id) });
      const got = await fetchTopicHistoryRows(db.kysely, streamId, null);
      const byId = (a: { max_id: number }, b: { max_id: number }): number => a.max_id - b.max_id;
      assert.deepEqual([...got].sort(byId), [...expected.values()].sort(byId));
    });
  });
}
