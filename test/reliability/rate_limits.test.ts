import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { forEachDatabase, testDatabases, OWNER_EMAIL, PASSWORD } from '../helpers/server.js';
import { ApiClient } from '../helpers/client.js';
import { err, ok } from '../helpers/assert.js';
import { loadConfig } from '../../src/config.js';
import { childDeployment, type ChildDeployment, type ChildServer } from './child_server.js';

/**
 * Rate limits end to end, beyond test/api/rate_limit.test.ts: invitation links, the exempt
 * long-poll, the /json prefix, the per-address budget that a client cannot dodge with its
 * own X-Forwarded-For, and one budget shared by every process through Redis.
 */
const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent' });

forEachDatabase(
  'rate limits end to end',
  (server) => {
    test('invitation pages (GET and POST /join/{key}) count against the per-address budget', async () => {
      const s = server();
      const from = (ip: string) => ({ 'X-Forwarded-For': ip });
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${s.url}/join/not-a-real-key-${i}`, { headers: from('203.0.113.50') });
        assert.equal(res.status, 404);
      }
      const limited = await fetch(`${s.url}/join/not-a-real-key`, { method: 'POST', headers: { ...from('203.0.113.50'), 'content-type': 'application/x-www-form-urlencoded' }, body: 'email=a%40example.com' });
      assert.equal(limited.status, 429);
      assert.ok(Number(limited.headers.get('retry-after')) >= 1);
      const body = (await limited.json()) as { code: string };
      assert.equal(body.code, 'RATE_LIMIT_HIT');
      const other = await fetch(`${s.url}/join/not-a-real-key`, { headers: from('203.0.113.51') });
      assert.equal(other.status, 404);
    });

    test('GET /events is exempt; /json requests share the API budget', async () => {
      const s = server();
      const c = s.cast.guest.client;
      const q = ok(await c.post('/register', { event_types: ['message'] }));
      for (let i = 0; i < 8; i++) ok(await c.get('/events', { queue_id: q.queue_id, last_event_id: -1, dont_block: true }));
      // register counted 1; four more API calls (two through /json with Basic auth) reach the limit of 5.
      ok(await c.get('/users/me'));
      ok(await c.request('GET', '/users/me', {}, 'query', '/json'));
      ok(await c.get('/users/me'));
      ok(await c.request('GET', '/users/me', {}, 'query', '/json'));
      err(await c.request('GET', '/users/me', {}, 'query', '/json'), 429, 'RATE_LIMIT_HIT');
      err(await c.get('/users/me'), 429, 'RATE_LIMIT_HIT');
      ok(await c.get('/events', { queue_id: q.queue_id, last_event_id: -1, dont_block: true }));
    });
  },
  { rateLimits: { ...base.rateLimits, enabled: true, apiPerMinute: 5, ipPerMinute: 3, authAttempts: 3, authWindowSeconds: 600 } },
);

/** This machine's first non-loopback IPv4 address: connecting to it makes a non-loopback peer. */
function externalAddress(): string | null {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return null;
}

const RATE_ENV = {
  PARLEY_RATE_LIMITS: 'on',
  PARLEY_RATE_LIMIT_API_PER_MINUTE: '6',
  PARLEY_RATE_LIMIT_IP_PER_MINUTE: '3',
  PARLEY_RATE_LIMIT_AUTH_ATTEMPTS: '3',
};

describe('rate limits: X-Forwarded-For is believed only from trusted proxies', () => {
  const address = externalAddress();
  let d: ChildDeployment;
  let s: ChildServer;

  before(async () => {
    if (!address) return;
    d = await childDeployment('sqlite');
    await d.setup(async () => undefined);
    s = await d.start({ ...RATE_ENV, HOST: '0.0.0.0' });
  });
  after(async () => {
    if (!address) return;
    s.process.kill('SIGTERM');
    await s.exited;
    await d.drop();
  });

  test('a direct client cannot reset its per-address budget by inventing X-Forwarded-For', async (t) => {
    if (!address) {
      t.skip('no non-loopback network interface');
      return;
    }
    const direct = `http://${address}:${s.port}`;
    const anon = (ip: string) => new ApiClient(direct, null, null, { 'X-Forwarded-For': ip });
    for (let i = 0; i < 3; i++) ok(await anon(`198.51.100.${i}`).get('/server_settings'));
    err(await anon('198.51.100.99').get('/server_settings'), 429, 'RATE_LIMIT_HIT');
    // A proxy on the same machine (loopback) is trusted: it names the real client.
    ok(await new ApiClient(s.url, null, null, { 'X-Forwarded-For': '198.51.100.200' }).get('/server_settings'));
  });
});

for (const kind of testDatabases()) {
  describe(`rate limits shared by two processes through Redis [${kind}]`, () => {
    const redis = process.env.TEST_REDIS_URL;
    let d: ChildDeployment;
    let a: ChildServer;
    let b: ChildServer;
    /** A process on another database, with the same Redis and prefix. */
    let elsewhere: ChildDeployment;
    let c: ChildServer;
    let key = '';
    let otherKey = '';

    before(async () => {
      if (!redis) return;
      const ownerKey = async (app: Parameters<Parameters<ChildDeployment['setup']>[0]>[0]) =>
        (await app.services.db.kysely.selectFrom('users').select('api_key').where('email', '=', OWNER_EMAIL).executeTakeFirstOrThrow()).api_key;
      d = await childDeployment(kind);
      elsewhere = await childDeployment(kind);
      key = await d.setup(ownerKey);
      otherKey = await elsewhere.setup(ownerKey);
      const env = { ...RATE_ENV, REDIS_URL: redis, PARLEY_REDIS_PREFIX: `parley-rl-${process.pid}-${Date.now()}:` };
      a = await d.start(env);
      b = await d.start(env);
      c = await elsewhere.start(env);
    });
    after(async () => {
      if (!redis) return;
      for (const s of [a, b, c]) {
        s.process.kill('SIGTERM');
        await s.exited;
      }
      await d.drop();
      await elsewhere.drop();
    });

    test('one user budget, one address budget and one password-attempt budget across processes, and none across databases', async (t) => {
      if (!redis) {
        t.skip('TEST_REDIS_URL is not set');
        return;
      }
      const owner = [new ApiClient(a.url, OWNER_EMAIL, key), new ApiClient(b.url, OWNER_EMAIL, key)];
      for (let i = 0; i < 6; i++) ok(await owner[i % 2]!.get('/users/me'));
      err(await owner[0]!.get('/users/me'), 429, 'RATE_LIMIT_HIT');
      err(await owner[1]!.get('/users/me'), 429, 'RATE_LIMIT_HIT');
      // The owner of another database has the same user ID, and a budget of their own.
      ok(await new ApiClient(c.url, OWNER_EMAIL, otherKey).get('/users/me'));

      const anon = (url: string) => new ApiClient(url, null, null, { 'X-Forwarded-For': '192.0.2.77' });
      ok(await anon(a.url).get('/server_settings'));
      ok(await anon(b.url).get('/server_settings'));
      ok(await anon(a.url).get('/server_settings'));
      err(await anon(b.url).get('/server_settings'), 429, 'RATE_LIMIT_HIT');

      const guess = (url: string, ip: string, password: string) =>
        new ApiClient(url, null, null, { 'X-Forwarded-For': ip }).post('/fetch_api_key', { username: OWNER_EMAIL, password });
      err(await guess(a.url, '192.0.2.81', 'wrong 1'), 401, 'AUTHENTICATION_FAILED');
      err(await guess(b.url, '192.0.2.82', 'wrong 2'), 401, 'AUTHENTICATION_FAILED');
      err(await guess(a.url, '192.0.2.83', 'wrong 3'), 401, 'AUTHENTICATION_FAILED');
      err(await guess(b.url, '192.0.2.84', PASSWORD), 429, 'RATE_LIMIT_HIT');
    });
  });
}
