import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect, SqliteDialect, sql, type CompiledQuery, type LogEvent } from 'kysely';
import { migrate, openDatabase, type Database } from '../../src/db/index.js';
import type { DB } from '../../src/db/tables.js';
import { fetchUserByEmail } from '../../src/db/repos/users.js';
import { fetchUsersByEmails, fetchUsersByFullNames } from '../../src/db/repos/messages.js';
import { fetchUploadSpaceUsed } from '../../src/db/repos/attachments.js';
import { deleteUserSessions } from '../../src/db/repos/sessions.js';
import { freshDatabaseUrl, testDatabases, type DbKind } from '../helpers/server.js';

/**
 * Lookups that must search an index rather than read a table, with the real queries and each
 * database's own plan: users by either of their addresses (a direct message addressed by
 * email, a `dm` narrow, a login) or by name (a mention), migrations 0107 and 0108; an
 * organization's upload space and a user's sessions, migration 0109.
 */
const USERS = 3000;
const REALM = 1;

for (const kind of testDatabases()) {
  describe(`lookup plans [${kind}]`, () => {
    let drop: () => Promise<void>;
    let db: Database;
    let spy: Kysely<DB>;
    let plan: (q: CompiledQuery) => Promise<string>;
    const captured: CompiledQuery[] = [];
    const log = (e: LogEvent): void => {
      if (e.level === 'query') captured.push(e.query);
    };

    before(async () => {
      const fresh = await freshDatabaseUrl(kind as DbKind);
      drop = fresh.drop;
      db = openDatabase(fresh.url);
      await migrate(db);
      for (let i = 0; i < USERS; i += 500) {
        const rows = Array.from({ length: 500 }, (_, k) => ({
          realm_id: REALM,
          email: `user${i + k}@zulip.example`,
          email_lc: `user${i + k}@zulip.example`,
          delivery_email: `Person${i + k}@Mail.Example`,
          full_name: `Person ${i + k}`,
          api_key: `key${i + k}`,
          date_joined: 0,
        }));
        await db.kysely.insertInto('users').values(rows).execute();
        await db.kysely
          .insertInto('attachments')
          .values(rows.map((_, k) => ({ realm_id: 1 + ((i + k) % 20), owner_id: 1, path_id: `p${i + k}`, file_name: 'f', size: 10, content_type: 'text/plain', create_time: 0 })))
          .execute();
        await db.kysely
          .insertInto('sessions')
          .values(rows.map((_, k) => ({ id: `s${i + k}`, user_id: 1 + ((i + k) % 100), expires: 0 })))
          .execute();
      }
      if (kind === 'sqlite') {
        // No ANALYZE: the server never runs it, so SQLite plans without statistics.
        const conn = new SQLite(fresh.url.slice('sqlite:'.length));
        spy = new Kysely<DB>({ dialect: new SqliteDialect({ database: conn }), log });
        plan = async (q) => conn.prepare(`EXPLAIN QUERY PLAN ${q.sql}`).all(...(q.parameters as unknown[])).map((r) => (r as { detail: string }).detail).join('\n');
      } else {
        await sql`ANALYZE users, attachments, sessions`.execute(db.kysely);
        const pool = new pg.Pool({ connectionString: fresh.url, max: 1 });
        spy = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log });
        plan = async (q) => (await pool.query(`EXPLAIN ${q.sql}`, q.parameters as unknown[])).rows.map((r: Record<string, string>) => r['QUERY PLAN']!).join('\n');
      }
    });

    after(async () => {
      await spy?.destroy();
      await db?.close();
      await drop?.();
    });

    async function planOf(run: (k: Kysely<DB>) => Promise<unknown>): Promise<{ plan: string; result: unknown }> {
      captured.length = 0;
      const result = await run(spy);
      assert.equal(captured.length, 1);
      return { plan: await plan(captured[0]!), result };
    }

    function assertIndexed(p: string, index: string, table = 'users'): void {
      assert.match(p, new RegExp(index), p);
      assert.doesNotMatch(p, kind === 'sqlite' ? new RegExp(`^SCAN ${table}`, 'm') : new RegExp(`Seq Scan on ${table}`), p);
    }

    test('one user, by the real address in another case or by the API email', async () => {
      const byReal = await planOf((k) => fetchUserByEmail(k, REALM, 'PERSON2999@mail.example'));
      assertIndexed(byReal.plan, 'users_realm_delivery_email');
      assert.equal((byReal.result as { email: string }).email, 'user2999@zulip.example');
      const byApi = await planOf((k) => fetchUserByEmail(k, REALM, 'User17@Zulip.Example'));
      assert.equal((byApi.result as { email: string }).email, 'user17@zulip.example');
    });

    test('the recipients of a direct message addressed by email', async () => {
      const { plan: p, result } = await planOf((k) => fetchUsersByEmails(k, REALM, ['person5@mail.example', 'user6@zulip.example']));
      assertIndexed(p, 'users_realm_delivery_email');
      assert.deepEqual((result as { email: string }[]).map((u) => u.email).sort(), ['user5@zulip.example', 'user6@zulip.example']);
    });

    test('the users a message mentions by name, in any case', async () => {
      const { plan: p, result } = await planOf((k) => fetchUsersByFullNames(k, REALM, ['PERSON 42', 'person 2500', 'Nobody']));
      assertIndexed(p, 'users_realm_full_name');
      assert.deepEqual((result as { email: string }[]).map((u) => u.email), ['user42@zulip.example', 'user2500@zulip.example']);
    });

    test("an organization's upload space", async () => {
      const { plan: p, result } = await planOf((k) => fetchUploadSpaceUsed(k, 3));
      assertIndexed(p, 'attachments_realm_size', 'attachments');
      assert.equal(result, (USERS / 20) * 10);
    });

    test("a user's sessions, deleted", async () => {
      const { plan: p } = await planOf((k) => deleteUserSessions(k, 7));
      assertIndexed(p, 'sessions_user', 'sessions');
      assert.equal(Number((await db.kysely.selectFrom('sessions').select((eb) => eb.fn.countAll().as('n')).where('user_id', '=', 7).executeTakeFirst())?.n), 0);
    });
  });
}
