import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../helpers/client.js';
import { ok } from '../helpers/assert.js';
import { OWNER_EMAIL, testDatabases } from '../helpers/server.js';
import { fetchRealmByStringId } from '../../src/db/repos/realms.js';
import { fetchUserByEmail } from '../../src/db/repos/users.js';
import { childDeployment, type ChildDeployment, type ChildServer } from './child_server.js';

/**
 * Outgoing-webhook deliveries in real server processes: a delivery under way when its process
 * is SIGKILLed is made again after the restart and the bot's reply is posted once; with two
 * processes on PostgreSQL + Redis each message is delivered, and answered, once.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The bot's service: records each request's `data`, answers with `respond` (or never). */
const received: string[] = [];
let respond: (data: string, res: ServerResponse) => void = () => undefined;
const service = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const data = String(JSON.parse(Buffer.concat(chunks).toString('utf8')).data);
    received.push(data);
    respond(data, res);
  });
});
await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
after(() => {
  service.closeAllConnections();
  service.close();
});
const SERVICE_URL = `http://127.0.0.1:${(service.address() as AddressInfo).port}/bot`;
const pong = (data: string, res: ServerResponse) => res.setHeader('content-type', 'application/json').end(JSON.stringify({ content: `pong ${data}` }));

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function ownerOf(d: ChildDeployment): Promise<{ email: string; apiKey: string }> {
  return d.setup(async (app) => {
    const db = app.services.db.kysely;
    const realm = (await fetchRealmByStringId(db, ''))!;
    const o = (await fetchUserByEmail(db, realm.id, OWNER_EMAIL))!;
    return { email: o.email, apiKey: o.api_key };
  });
}

async function botReplies(api: ApiClient, botId: number): Promise<string[]> {
  const body = ok(await api.get('/messages', { anchor: 'newest', num_before: 100, num_after: 0, apply_markdown: false, narrow: JSON.stringify([{ operator: 'dm', operand: [botId] }]) }));
  return (body.messages as { sender_id: number; content: string }[]).filter((m) => m.sender_id === botId).map((m) => m.content);
}

async function createBot(api: ApiClient, shortName: string): Promise<number> {
  return ok(await api.post('/bots', { full_name: `Pong ${shortName}`, short_name: shortName, bot_type: 3, payload_url: JSON.stringify(SERVICE_URL) })).user_id as number;
}

const ENV = { PARLEY_OUTGOING_WEBHOOK_TIMEOUT_MS: '1000', PARLEY_OUTGOING_WEBHOOK_INTERVAL_MS: '200' };
// The held request must still be waiting when the kill comes, even on a loaded machine: each
// try may take 5 s, so a dead process's lease on a delivery lapses after 15 s.
const KILL_ENV = { ...ENV, PARLEY_OUTGOING_WEBHOOK_TIMEOUT_MS: '5000' };

for (const kind of testDatabases()) {
  describe(`outgoing-webhook delivery across a SIGKILL [${kind}]`, () => {
    test('a delivery under way at the kill is made again after the restart, and the reply is posted once', async () => {
      const d = await childDeployment(kind);
      let server: ChildServer | undefined;
      try {
        received.length = 0;
        const owner = await ownerOf(d);
        server = await d.start(KILL_ENV);
        let api = new ApiClient(server.url, owner.email, owner.apiKey);
        const botId = await createBot(api, `kill${kind}`);
        // The first request is never answered: the process dies while it waits.
        respond = () => undefined;
        ok(await api.post('/messages', { type: 'direct', to: JSON.stringify([botId]), content: 'ping' }));
        await waitFor('the first request', 30_000, () => received.length === 1);
        server.process.kill('SIGKILL');
        await server.exited;

        respond = pong;
        server = await d.start(KILL_ENV);
        api = new ApiClient(server.url, owner.email, owner.apiKey);
        await waitFor("the bot's reply", 60_000, async () => (await botReplies(api, botId)).length > 0);
        await sleep(1500);
        assert.deepEqual(await botReplies(api, botId), ['pong ping']);
        assert.deepEqual(received, ['ping', 'ping']);
      } finally {
        server?.process.kill('SIGTERM');
        await server?.exited;
        await d.drop();
      }
    });
  });
}

const scaledOut = process.env.TEST_POSTGRES_URL && process.env.TEST_REDIS_URL;

describe('outgoing-webhook delivery with two processes on PostgreSQL + Redis', () => {
  test(
    'each message is delivered and answered once',
    { skip: scaledOut ? false : 'needs TEST_POSTGRES_URL and TEST_REDIS_URL (two processes share PostgreSQL and Redis)' },
    async () => {
      const d = await childDeployment('postgres');
      const secondDataDir = mkdtempSync(join(tmpdir(), 'parley-child-b-'));
      const servers: ChildServer[] = [];
      try {
        received.length = 0;
        respond = pong;
        const owner = await ownerOf(d);
        const env = { ...ENV, REDIS_URL: process.env.TEST_REDIS_URL!, PARLEY_REDIS_PREFIX: `parley-hooks-${process.pid}:` };
        servers.push(await d.start(env), await d.start({ ...env, PARLEY_DATA_DIR: secondDataDir }));
        const [a, b] = servers.map((s) => new ApiClient(s.url, owner.email, owner.apiKey));
        const botId = await createBot(a!, 'race');
        const sent = Array.from({ length: 12 }, (_, i) => `m${i}`);
        // Alternating processes: each wakes its own worker, and both look at the queue every 200 ms.
        await Promise.all(sent.map((c, i) => (i % 2 ? b! : a!).post('/messages', { type: 'direct', to: JSON.stringify([botId]), content: c })));
        await waitFor('every reply', 30_000, async () => (await botReplies(a!, botId)).length >= sent.length);
        await sleep(1500);
        assert.deepEqual((await botReplies(a!, botId)).sort(), sent.map((c) => `pong ${c}`).sort());
        assert.deepEqual([...received].sort(), [...sent].sort());
      } finally {
        for (const s of servers) s.process.kill('SIGTERM');
        await Promise.all(servers.map((s) => s.exited));
        await d.drop();
        rmSync(secondDataDir, { recursive: true, force: true });
      }
    },
  );
});
