import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type IncomingHttpHeaders } from 'node:http';
import { rmSync } from 'node:fs';
import { buildApp, type App } from '../../src/app.js';
import type { Config } from '../../src/config.js';
import type { Realm, User } from '../../src/db/tables.js';
import { fetchRealmByStringId } from '../../src/db/repos/realms.js';
import { doCreateUser, doDeactivateUser } from '../../src/actions/users.js';
import { startSession } from '../../src/plugins/session.js';
import { ROLE_MEMBER } from '../../src/lib/roles.js';
import { freshDatabaseUrl, PASSWORD, testConfig } from '../helpers/server.js';
import { parseQuery, PollSlices } from '../../src/routes/events/long_poll.js';

/**
 * GET /events is served straight from Node's request event (routes/events/long_poll.ts) and
 * everything it does not answer with success goes to the Fastify route. Each request here is
 * sent over HTTP and injected into Fastify directly: the two answers must be the same, byte
 * for byte, and only the requests expected to need Fastify may reach it.
 */

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

// Set by Node's HTTP server on every response, by inject() never.
const CONNECTION_HEADERS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

function comparable(headers: IncomingHttpHeaders | Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (!CONNECTION_HEADERS.has(k) && v !== undefined) out[k] = String(v);
  return out;
}

const basic = (user: User): string => `Basic ${Buffer.from(`${user.email}:${user.api_key}`).toString('base64')}`;

describe('GET /events outside Fastify', () => {
  let app: App;
  let config: Config;
  let port = 0;
  let drop: () => Promise<void>;
  let realm: Realm;
  let hamlet: User;
  let othello: User;
  /** URLs of the requests that went through Fastify's routing. */
  const throughFastify: string[] = [];

  before(async () => {
    const db = await freshDatabaseUrl('sqlite');
    drop = db.drop;
    const base = testConfig(db.url);
    config = { ...base, events: { ...base.events, heartbeatSeconds: 1 } };
    app = await buildApp(config, { announce: () => undefined });
    app.fastify.addHook('onRequest', async (req) => {
      throughFastify.push(req.url);
    });
    await app.fastify.listen({ port: 0, host: '127.0.0.1' });
    const addr = app.fastify.server.address();
    port = typeof addr === 'object' && addr ? addr.port : 0;
    config.externalUrl = `http://localhost:${port}`;
    realm = (await fetchRealmByStringId(app.services.db.kysely, ''))!;
    const mk = (email: string, fullName: string) =>
      doCreateUser(app.services, realm, { email, fullName, password: PASSWORD, role: ROLE_MEMBER, actingUser: null });
    hamlet = await mk('hamlet@example.com', 'King Hamlet');
    othello = await mk('othello@example.com', 'Othello');
  });

  after(async () => {
    await app.close();
    await drop();
    rmSync(config.dataDir, { recursive: true, force: true });
  });

  function overHttp(path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, method: 'GET', headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: comparable(res.headers), body: Buffer.concat(chunks).toString() }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /** The answer over HTTP, checked against Fastify's answer to the same request. */
  async function poll(path: string, headers: Record<string, string>, opts: { viaFastify: boolean; body?: string }): Promise<Answer> {
    const all = { host: `localhost:${port}`, ...headers };
    throughFastify.length = 0;
    const direct = await overHttp(path, all, opts.body);
    assert.deepEqual(throughFastify, opts.viaFastify ? [path] : [], `${path}: through Fastify`);
    const injected = await app.fastify.inject({ method: 'GET', url: path, headers: all, ...(opts.body ? { payload: opts.body } : {}) });
    assert.deepEqual(direct, { status: injected.statusCode, headers: comparable(injected.headers), body: injected.body }, path);
    return direct;
  }

  async function register(user: User): Promise<string> {
    const res = await app.fastify.inject({
      method: 'POST',
      url: '/api/v1/register',
      headers: { authorization: basic(user), 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'event_types=%5B%22heartbeat%22%2C%22custom%22%5D',
    });
    return (res.json() as { queue_id: string }).queue_id;
  }

  const json = (a: Answer): Record<string, unknown> => JSON.parse(a.body) as Record<string, unknown>;

  test('a poll answered at once, with unknown parameters listed, under /api/v1 and /json', async () => {
    const q = await register(hamlet);
    const auth = { authorization: basic(hamlet) };
    let a = await poll(`/api/v1/events?queue_id=${q}&last_event_id=-1&dont_block=true`, auth, { viaFastify: false });
    assert.deepEqual(json(a), { result: 'success', msg: '', events: [] });
    assert.equal(a.headers['content-type'], 'application/json; charset=utf-8');
    a = await poll(`/api/v1/events?queue_id=${q}&last_event_id=-1&dont_block=true&zeta=1&apply_markdown=true`, auth, { viaFastify: false });
    assert.deepEqual(json(a), { result: 'success', msg: '', events: [], ignored_parameters_unsupported: ['apply_markdown', 'zeta'] });
    a = await poll(`/api/v1/events?&&zeta&=v&x==y&queue_id=${q}&last_event_id=-1&dont_block=true&x=z`, auth, { viaFastify: false });
    assert.deepEqual(json(a).ignored_parameters_unsupported, ['', 'x', 'zeta']);
    a = await poll(`/api/v1/events??queue_id=${q}&last_event_id=-1&dont_block=true`, auth, { viaFastify: false });
    assert.deepEqual(json(a), { result: 'success', msg: '', events: [] });
    a = await poll(`/json/events?queue_id=${encodeURIComponent(q)}&last_event_id=-1&dont_block=true&dont_block=false&dont_block=true`, auth, { viaFastify: false });
    assert.deepEqual(json(a), { result: 'success', msg: '', events: [] });
  });

  test('a browser session, a body, another path: Fastify answers', async () => {
    const q = await register(hamlet);
    const query = `?queue_id=${q}&last_event_id=-1&dont_block=true`;
    const cookie = (await startSession(app.services, hamlet)).split(';')[0]!;
    assert.deepEqual(json(await poll(`/json/events${query}`, { cookie }, { viaFastify: true })).events, []);
    const auth = { authorization: basic(hamlet) };
    assert.deepEqual(json(await poll(`/api/v1/events${query}`, { ...auth, 'content-type': 'application/x-www-form-urlencoded', 'content-length': '3' }, { viaFastify: true, body: 'x=1' })).events, []);
    assert.deepEqual(json(await poll(`/api/v1/events/${query}`, auth, { viaFastify: true })).events, []);
    assert.deepEqual(json(await poll(`/api/v1//events${query}`, auth, { viaFastify: true })).events, []);
  });

  test('authentication and organization errors are Fastify’s own', async () => {
    const q = await register(hamlet);
    const query = `?queue_id=${q}&last_event_id=-1&dont_block=true`;
    let a = await poll(`/api/v1/events${query}`, {}, { viaFastify: true });
    assert.equal(a.status, 401);
    assert.equal(a.headers['www-authenticate'], 'Basic realm="zulip"');
    a = await poll(`/api/v1/events${query}`, { authorization: `Basic ${Buffer.from(`${hamlet.email}:${'A'.repeat(32)}`).toString('base64')}` }, { viaFastify: true });
    assert.equal(json(a).code, 'INVALID_API_KEY');
    a = await poll(`/api/v1/events${query}`, { authorization: 'Bearer x' }, { viaFastify: true });
    assert.equal(json(a).code, 'UNAUTHORIZED');
    a = await poll(`/api/v1/events${query}`, { authorization: basic(hamlet), host: `nosuch.localhost:${port}` }, { viaFastify: true });
    assert.equal(a.status, 404);
    assert.equal(json(a).code, 'NONEXISTENT_SUBDOMAIN');
    const gone = await doCreateUser(app.services, realm, { email: 'gone@example.com', fullName: 'Gone', password: PASSWORD, role: ROLE_MEMBER, actingUser: null });
    const goneQueue = await register(gone);
    await doDeactivateUser(app.services, realm, gone, null);
    a = await poll(`/api/v1/events?queue_id=${goneQueue}&last_event_id=-1&dont_block=true`, { authorization: basic(gone) }, { viaFastify: true });
    assert.equal(json(a).code, 'USER_DEACTIVATED');
  });

  test('parameter errors are Fastify’s own', async () => {
    const q = await register(hamlet);
    const auth = { authorization: basic(hamlet) };
    let a = await poll(`/api/v1/events?last_event_id=-1`, auth, { viaFastify: true });
    assert.deepEqual(json(a), { result: 'error', msg: "Missing 'queue_id' argument", code: 'REQUEST_VARIABLE_MISSING', var_name: 'queue_id' });
    a = await poll(`/api/v1/events`, auth, { viaFastify: true });
    assert.equal(json(a).code, 'REQUEST_VARIABLE_MISSING');
    a = await poll(`/api/v1/events?queue_id=${q}&last_event_id=x`, auth, { viaFastify: true });
    assert.equal(json(a).msg, 'last_event_id is not an integer');
    a = await poll(`/api/v1/events?queue_id=${q}&last_event_id=-1&dont_block=maybe`, auth, { viaFastify: true });
    assert.equal(json(a).msg, 'dont_block is not a boolean');
  });

  test('queue errors: unknown, someone else’s, bad acknowledgements; the owner’s queue is unaffected', async () => {
    const q = await register(hamlet);
    app.services.events.send(realm.id, { type: 'custom', n: 1 }, [hamlet.id]);
    await new Promise((r) => setImmediate(r));
    let a = await poll(`/api/v1/events?queue_id=nosuch&last_event_id=-1`, { authorization: basic(hamlet) }, { viaFastify: true });
    assert.deepEqual(json(a), { result: 'error', msg: 'Bad event queue ID: nosuch', code: 'BAD_EVENT_QUEUE_ID', queue_id: 'nosuch' });
    a = await poll(`/api/v1/events?queue_id=${q}&last_event_id=-1&dont_block=true`, { authorization: basic(othello) }, { viaFastify: true });
    assert.equal(json(a).code, 'BAD_EVENT_QUEUE_ID');
    a = await poll(`/api/v1/events?queue_id=${q}&last_event_id=-1&dont_block=true`, { authorization: basic(hamlet) }, { viaFastify: false });
    assert.deepEqual(json(a).events, [{ type: 'custom', n: 1, id: 0 }]);
    a = await poll(`/api/v1/events?queue_id=${q}&last_event_id=5&dont_block=true`, { authorization: basic(hamlet) }, { viaFastify: true });
    assert.deepEqual(json(a), { result: 'error', msg: 'Event 5 was not in this queue', code: 'BAD_REQUEST' });
    a = await poll(`/api/v1/events?queue_id=${q}&last_event_id=-1&dont_block=true`, { authorization: basic(hamlet) }, { viaFastify: true });
    assert.deepEqual(json(a), { result: 'error', msg: 'An event newer than -1 has already been pruned!', code: 'BAD_REQUEST' });
  });

  test('a held poll is answered by an event, then by a heartbeat, without Fastify', async () => {
    const q = await register(hamlet);
    const auth = { host: `localhost:${port}`, authorization: basic(hamlet) };
    throughFastify.length = 0;
    const held = overHttp(`/api/v1/events?queue_id=${q}&last_event_id=-1&unknown=1`, auth);
    await new Promise((r) => setTimeout(r, 50));
    app.services.events.send(realm.id, { type: 'custom', n: 2 }, [hamlet.id]);
    const a = await held;
    assert.equal(a.status, 200);
    assert.equal(a.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(json(a), { result: 'success', msg: '', events: [{ type: 'custom', n: 2, id: 0 }], ignored_parameters_unsupported: ['unknown'] });
    const heartbeat = await overHttp(`/api/v1/events?queue_id=${q}&last_event_id=0`, auth);
    assert.deepEqual(json(heartbeat), { result: 'success', msg: '', events: [{ type: 'heartbeat', id: 1 }] });
    assert.deepEqual(throughFastify, []);
  });
});

test('polls are handled in slices of a few milliseconds per turn of the event loop, in arrival order', async () => {
  const slices = new PollSlices();
  let turn = 0;
  let counting = true;
  const countTurns = (): void => {
    turn++;
    if (counting) setImmediate(countTurns);
  };
  setImmediate(countTurns);
  const busy = (ms: number): void => {
    const end = performance.now() + ms;
    while (performance.now() < end);
  };
  const ran: { i: number; turn: number }[] = [];
  const done: Promise<void>[] = [];
  // Forty polls arriving in one turn, each 1 ms of work after an await, as a poll's is.
  for (let i = 0; i < 40; i++) {
    done.push(new Promise((resolve) => {
      slices.run(() => {
        void (async () => {
          await null;
          busy(1);
          ran.push({ i, turn });
          resolve();
        })();
      });
    }));
    await Promise.resolve();
  }
  await Promise.all(done);
  counting = false;
  assert.deepEqual(ran.map((r) => r.i), [...Array(40).keys()]);
  const perTurn = new Map<number, number>();
  for (const r of ran) perTurn.set(r.turn, (perTurn.get(r.turn) ?? 0) + 1);
  assert.ok(perTurn.size >= 6, `40 ms of polls in ${perTurn.size} turns`);
  for (const [t, n] of perTurn) assert.ok(n <= 6, `${n} polls handled in turn ${t}`);
});

test('query strings are read as URLSearchParams reads them, the last value winning', () => {
  const alphabet = ['a', 'b', '=', '&', '%', '%41', '%zz', '+', '?', 'é', '%C3%A9', ' '];
  let seed = 7;
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let i = 0; i < 2000; i++) {
    let query = '';
    for (let j = random(12); j > 0; j--) query += alphabet[random(alphabet.length)];
    const expected: Record<string, string> = {};
    for (const [k, v] of new URLSearchParams(query)) expected[k] = v;
    assert.deepEqual({ ...parseQuery(query) }, expected, JSON.stringify(query));
  }
});
