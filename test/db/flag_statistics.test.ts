import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { Kysely, PostgresDialect, sql, type CompiledQuery } from 'kysely';
import { migrate, openDatabase, type Database } from '../../src/db/index.js';
import type { DB } from '../../src/db/tables.js';
import { fetchRecentDmConversations, fetchStarredMessageIds, fetchUnreadMessages } from '../../src/db/repos/user_messages.js';
import { freshDatabaseUrl } from '../helpers/server.js';

/**
 * PostgreSQL estimates the flag tests of `user_messages` from the expression statistics of
 * migration 0106, checked on the queries register runs: without them `(flags & 256) <> 0`
 * is taken for 99.5% of a user's rows, and on a large table the planner starts parallel
 * workers for a query that returns nothing.
 */
const ROWS = 30_000;
const USER = 7;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Plan Rows': number;
  Plans?: PlanNode[];
}

function nodes(n: PlanNode): PlanNode[] {
  return [n, ...(n.Plans ?? []).flatMap(nodes)];
}

if (!process.env.TEST_POSTGRES_URL) {
  test('user_messages flag statistics [postgres]', { skip: 'TEST_POSTGRES_URL is not set' }, () => undefined);
} else {
  describe('user_messages flag statistics [postgres]', () => {
    let drop: () => Promise<void>;
    let db: Database;
    let pool: pg.Pool;
    let spy: Kysely<DB>;
    const captured: CompiledQuery[] = [];

    before(async () => {
      const fresh = await freshDatabaseUrl('postgres');
      drop = fresh.drop;
      db = openDatabase(fresh.url);
      await migrate(db);
      // One user's channel messages: a third unread, none starred, none direct messages.
      await sql`INSERT INTO messages (id, realm_id, sender_id, type, stream_id, content, rendered_content, date_sent)
        SELECT g, 1, 1, 'stream', 1, 'hi', '<p>hi</p>', g FROM generate_series(1, ${ROWS}) g`.execute(db.kysely);
      await sql`INSERT INTO user_messages (user_id, message_id, flags)
        SELECT ${USER}, g, CASE WHEN g % 3 = 0 THEN 0 ELSE 1 END FROM generate_series(1, ${ROWS}) g`.execute(db.kysely);
      await sql`ANALYZE messages, user_messages`.execute(db.kysely);
      pool = new pg.Pool({ connectionString: fresh.url, max: 1 });
      spy = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log: (e) => {
          if (e.level === 'query') captured.push(e.query);
        },
      });
    });

    after(async () => {
      await spy?.destroy();
      await db?.close();
      await drop?.();
    });

    /** The estimated rows of the user_messages scan in the plan of the query `run` makes. */
    async function estimate(run: (k: Kysely<DB>) => Promise<unknown>): Promise<{ rows: number; types: string[] }> {
      captured.length = 0;
      await run(spy);
      assert.equal(captured.length, 1);
      const q = captured[0]!;
      const res = await pool.query(`EXPLAIN (FORMAT JSON) ${q.sql}`, q.parameters as unknown[]);
      const all = nodes((res.rows[0] as { 'QUERY PLAN': { Plan: PlanNode }[] })['QUERY PLAN'][0]!.Plan);
      const scan = all.find((n) => n['Relation Name'] === 'user_messages');
      assert.ok(scan, 'the plan reads user_messages');
      return { rows: scan['Plan Rows'], types: all.map((n) => n['Node Type']) };
    }

    test('direct messages and starred messages are estimated from their frequency', async () => {
      const dms = await estimate((k) => fetchRecentDmConversations(k, USER, 1000));
      assert.ok(dms.rows < 50, `recent DM conversations: ${dms.rows} rows estimated for none`);
      assert.ok(!dms.types.includes('Gather') && !dms.types.includes('Gather Merge'), dms.types.join(' > '));
      const starred = await estimate((k) => fetchStarredMessageIds(k, USER));
      assert.ok(starred.rows < 50, `starred: ${starred.rows} rows estimated for none`);
    });

    test('unread messages are estimated near their real count', async () => {
      const unread = await estimate((k) => fetchUnreadMessages(k, USER, 50_000));
      const real = ROWS / 3;
      assert.ok(unread.rows > real / 2 && unread.rows < real * 2, `unread: ${unread.rows} rows estimated for ${real}`);
    });
  });
}
