import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { testDatabases, PASSWORD, OWNER_EMAIL } from '../helpers/server.js';
import { ApiClient, type ApiResponse } from '../helpers/client.js';
import { ok, err } from '../helpers/assert.js';
import { doCreateUser } from '../../src/actions/users.js';
import { fetchRealmByStringId } from '../../src/db/repos/realms.js';
import { startSession } from '../../src/plugins/session.js';
import { ROLE_ADMINISTRATOR, ROLE_MEMBER } from '../../src/lib/roles.js';
import { childDeployment, type ChildDeployment, type ChildServer } from './child_server.js';

/**
 * Secrets, against two real server processes on one database (as when scaled out: on
 * PostgreSQL only with TEST_REDIS_URL, since several processes need Redis there), logging
 * at debug level: keys and passwords never reach logs or error bodies; a regenerated key
 * replaces the old one at once on every process; a deactivated user's keys and sessions
 * stop working at once, everywhere.
 */
interface Account {
  id: number;
  email: string;
  apiKey: string;
  password: string;
  cookie: string;
}

const MEMBER_PASSWORD = 'Tr0ub4dor&3-member-secret';
/** Sent in a query string, which the request log records as the URL. */
const QUERY_PASSWORD = 'query-string-password-7d1e';

function basic(email: string, key: string): string {
  return `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}`;
}

/** A /json request authenticated by the session cookie alone. */
async function withCookie(url: string, cookie: string, path: string): Promise<ApiResponse> {
  const res = await fetch(`${url}/json${path}`, { headers: { cookie } });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

for (const kind of testDatabases()) {
  describe(`secrets [${kind}]`, () => {
    let d: ChildDeployment;
    let a: ChildServer;
    let b: ChildServer;
    let admin: Account;
    let member: Account;
    let leaver: Account;
    /** Every secret the requests below send or receive; none may appear in a log line or an error body. */
    const secrets = new Set<string>([PASSWORD, MEMBER_PASSWORD]);

    before(async () => {
      d = await childDeployment(kind);
      [admin, member, leaver] = await d.setup(async (app) => {
        const realm = (await fetchRealmByStringId(app.services.db.kysely, ''))!;
        const make = async (email: string, role: number, password: string): Promise<Account> => {
          const u = await doCreateUser(app.services, realm, { email, fullName: email, password, role, actingUser: null });
          const cookie = (await startSession(app.services, u)).split(';')[0]!;
          return { id: u.id, email: u.email, apiKey: u.api_key, password, cookie };
        };
        return [
          await make('admin@example.com', ROLE_ADMINISTRATOR, PASSWORD),
          await make('member@example.com', ROLE_MEMBER, MEMBER_PASSWORD),
          await make('leaver@example.com', ROLE_MEMBER, PASSWORD),
        ];
      });
      for (const acct of [admin, member, leaver]) {
        secrets.add(acct.apiKey);
        secrets.add(acct.cookie.split('=')[1]!);
      }
      // Two processes on the same database, both logging every request. PostgreSQL serves
      // several processes only with Redis (read-cache invalidation, queues); without it, one.
      const redis = process.env.TEST_REDIS_URL;
      const env: Record<string, string> = { LOG_LEVEL: 'debug' };
      if (kind === 'postgres' && redis) Object.assign(env, { REDIS_URL: redis, PARLEY_REDIS_PREFIX: `parley-secrets-${process.pid}-${Date.now()}:` });
      a = await d.start(env);
      b = kind === 'sqlite' || redis ? await d.start(env) : a;
    });

    after(async () => {
      for (const s of new Set([a, b])) {
        if (s && s.process.exitCode === null && s.process.signalCode === null) {
          s.process.kill('SIGTERM');
          await s.exited;
        }
      }
      await d.drop();
    });

    test('wrong keys and passwords: 401s that echo nothing secret', async () => {
      const wrongKey = 'Zz'.repeat(16);
      const wrongPassword = 'not-the-password-but-close-0f9c';
      secrets.add(wrongKey);
      secrets.add(wrongPassword);
      secrets.add(QUERY_PASSWORD);
      const bodies: unknown[] = [];
      const check = (res: ApiResponse, status: number, code: string): void => {
        err(res, status, code);
        bodies.push(res.body);
      };
      check(await new ApiClient(a.url, member.email, wrongKey).get('/users/me'), 401, 'INVALID_API_KEY');
      check(await new ApiClient(a.url, member.email, `${member.apiKey}x`).get('/users/me'), 401, 'INVALID_API_KEY');
      check(await new ApiClient(a.url, 'nobody@example.com', member.apiKey).get('/users/me'), 401, 'INVALID_API_KEY');
      const anon = new ApiClient(a.url, null, null);
      check(await anon.post('/fetch_api_key', { username: member.email, password: wrongPassword }), 401, 'AUTHENTICATION_FAILED');
      check(await anon.post('/fetch_api_key', { username: 'nobody@example.com', password: MEMBER_PASSWORD }), 401, 'AUTHENTICATION_FAILED');
      // A password in the query string, as a careless client might send it.
      check(await anon.request('POST', `/fetch_api_key?username=${encodeURIComponent(member.email)}&password=${encodeURIComponent(QUERY_PASSWORD)}`, {}), 401, 'AUTHENTICATION_FAILED');
      // Successful authentication too: the key comes back in the body, never in a log.
      const fetched = ok(await anon.post('/fetch_api_key', { username: member.email, password: MEMBER_PASSWORD }));
      assert.equal(fetched.api_key, member.apiKey);
      ok(await new ApiClient(a.url, member.email, member.apiKey).get('/users/me'));
      ok(await withCookie(a.url, member.cookie, '/users/me'));
      const text = JSON.stringify(bodies);
      for (const s of secrets) assert.ok(!text.includes(s), `an error body contains a secret: ${text}`);
    });

    test('POST /users/me/api_key/regenerate: the old key stops at once on every process, the new one works everywhere', async () => {
      const oldClientA = new ApiClient(a.url, member.email, member.apiKey);
      const oldClientB = new ApiClient(b.url, member.email, member.apiKey);
      // Warm both processes' caches with the old key.
      ok(await oldClientA.get('/users/me'));
      ok(await oldClientB.get('/users/me'));
      const fresh = ok(await oldClientA.post('/users/me/api_key/regenerate')).api_key as string;
      secrets.add(fresh);
      assert.match(fresh, /^[A-Za-z0-9]{32}$/);
      assert.notEqual(fresh, member.apiKey);
      err(await oldClientA.get('/users/me'), 401, 'INVALID_API_KEY');
      err(await oldClientB.get('/users/me'), 401, 'INVALID_API_KEY');
      ok(await new ApiClient(a.url, member.email, fresh).get('/users/me'));
      ok(await new ApiClient(b.url, member.email, fresh).get('/users/me'));
      // fetch_api_key hands out the new key.
      const fetched = ok(await new ApiClient(b.url, null, null).post('/fetch_api_key', { username: member.email, password: MEMBER_PASSWORD }));
      assert.equal(fetched.api_key, fresh);
      member.apiKey = fresh;
    });

    test("deactivation: the user's key and session stop at once on every process", async () => {
      const keyA = new ApiClient(a.url, leaver.email, leaver.apiKey);
      const keyB = new ApiClient(b.url, leaver.email, leaver.apiKey);
      ok(await keyA.get('/users/me'));
      ok(await keyB.get('/users/me'));
      ok(await withCookie(a.url, leaver.cookie, '/users/me'));
      ok(await withCookie(b.url, leaver.cookie, '/users/me'));
      ok(await new ApiClient(b.url, admin.email, admin.apiKey).delete(`/users/${leaver.id}`));
      for (const c of [keyA, keyB]) err(await c.get('/users/me'), 401, 'USER_DEACTIVATED');
      // Deactivation ends the user's sessions, as Zulip's does.
      for (const url of [a.url, b.url]) err(await withCookie(url, leaver.cookie, '/users/me'), 401, 'UNAUTHORIZED');
      err(await new ApiClient(a.url, null, null).post('/fetch_api_key', { username: leaver.email, password: PASSWORD }), 401, 'USER_DEACTIVATED');
      // Reactivation brings the same key back (Zulip keeps it).
      ok(await new ApiClient(a.url, admin.email, admin.apiKey).post(`/users/${leaver.id}/reactivate`));
      ok(await keyB.get('/users/me'));
    });

    test('no key, password, session or Authorization header value in either process log', async () => {
      // Stop the processes so that every line is written.
      for (const s of new Set([a, b])) {
        s.process.kill('SIGTERM');
        assert.equal(await s.exited, 0);
      }
      const logs = a === b ? a.output() : a.output() + b.output();
      secrets.delete(QUERY_PASSWORD);
      assert.match(logs, /"url":"\/api\/v1\/users\/me"/, 'request logging is off: the scan would prove nothing');
      for (const acct of [admin, member, leaver]) {
        secrets.add(basic(acct.email, acct.apiKey).slice('Basic '.length));
      }
      for (const s of secrets) {
        const at = logs.indexOf(s);
        assert.equal(at, -1, `a log line contains a secret: ${logs.slice(Math.max(0, at - 300), at + 100)}`);
        assert.equal(logs.indexOf(encodeURIComponent(s)), -1, 'a log line contains a URL-encoded secret');
      }
    });

    test('nor a password sent in the query string (the request log recorded whole URLs)', () => {
      assert.ok(!(a.output() + b.output()).includes(QUERY_PASSWORD));
    });
  });
}
