import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../helpers/client.js';
import { ok } from '../helpers/assert.js';
import { OWNER_EMAIL, PASSWORD, testDatabases } from '../helpers/server.js';
import { doCreateUser } from '../../src/actions/users.js';
import { fetchRealmByStringId } from '../../src/db/repos/realms.js';
import { fetchUserByEmail } from '../../src/db/repos/users.js';
import { ROLE_MEMBER } from '../../src/lib/roles.js';
import { childDeployment, type ChildDeployment, type ChildServer } from './child_server.js';

/**
 * The scheduled-message worker in real server processes: its state is the database, so a
 * message scheduled before a SIGKILL goes out after the restart (also one that fell due while
 * no process ran), and with two processes on PostgreSQL + Redis each message goes out once.
 */

interface Member {
  id: number;
  email: string;
  apiKey: string;
}

const nowSeconds = (): number => Math.floor(Date.now() / 1000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function cast(d: ChildDeployment): Promise<{ owner: Member; reader: Member }> {
  return d.setup(async (app) => {
    const db = app.services.db.kysely;
    const realm = (await fetchRealmByStringId(db, ''))!;
    const r = await doCreateUser(app.services, realm, { email: 'reader@example.com', fullName: 'Reader', password: PASSWORD, role: ROLE_MEMBER, actingUser: null });
    const o = (await fetchUserByEmail(db, realm.id, OWNER_EMAIL))!;
    return { owner: { id: o.id, email: o.email, apiKey: o.api_key }, reader: { id: r.id, email: r.email, apiKey: r.api_key } };
  });
}

const client = (server: ChildServer, m: Member): ApiClient => new ApiClient(server.url, m.email, m.apiKey);

/** The channel's messages whose content starts with `prefix`, as `reader` fetches them. */
async function deliveredMessages(c: ApiClient, streamId: number, prefix: string): Promise<{ content: string; timestamp: number }[]> {
  const body = ok(await c.get('/messages', { anchor: 'newest', num_before: 200, num_after: 0, narrow: JSON.stringify([{ operator: 'channel', operand: streamId }]) }));
  return (body.messages as { content: string; timestamp: number }[]).filter((m) => m.content.startsWith(`<p>${prefix}`));
}

async function delivered(c: ApiClient, streamId: number, prefix: string): Promise<string[]> {
  return (await deliveredMessages(c, streamId, prefix)).map((m) => m.content);
}

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

for (const kind of testDatabases()) {
  describe(`scheduled delivery across a SIGKILL [${kind}]`, () => {
    test('messages scheduled before the process is killed are sent once after the restart', async () => {
      const d = await childDeployment(kind);
      let server: ChildServer | undefined;
      try {
        const { owner, reader } = await cast(d);
        server = await d.start();
        const o = client(server, owner);
        ok(await o.post('/users/me/subscriptions', { subscriptions: [{ name: 'later' }], principals: [owner.id, reader.id] }));
        const streamId = ok(await o.get('/get_stream_id', { stream: 'later' })).stream_id;
        const start = nowSeconds();
        // One falls due while no process runs, one after the restart.
        ok(await o.post('/scheduled_messages', { type: 'stream', to: streamId, topic: 't', content: 'while down', scheduled_delivery_timestamp: start + 2 }));
        ok(await o.post('/scheduled_messages', { type: 'stream', to: streamId, topic: 't', content: 'after restart', scheduled_delivery_timestamp: start + 9 }));
        server.process.kill('SIGKILL');
        await server.exited;
        await sleep(Math.max(0, (start + 3) * 1000 - Date.now()));

        server = await d.start();
        const r = client(server, reader);
        await waitFor('the message due while down', 10_000, async () => (await delivered(r, streamId, 'while down')).length > 0);
        await waitFor('the message due after the restart', 15_000, async () => (await delivered(r, streamId, 'after restart')).length > 0);
        const [afterRestart] = await deliveredMessages(r, streamId, 'after restart');
        assert.ok(afterRestart!.timestamp >= start + 9, 'not sent early');
        await sleep(1000);
        assert.deepEqual(await delivered(r, streamId, 'while down'), ['<p>while down</p>']);
        assert.deepEqual(await delivered(r, streamId, 'after restart'), ['<p>after restart</p>']);
        assert.deepEqual(ok(await client(server, owner).get('/scheduled_messages')).scheduled_messages, []);
      } finally {
        server?.process.kill('SIGTERM');
        await server?.exited;
        await d.drop();
      }
    });
  });
}

const scaledOut = process.env.TEST_POSTGRES_URL && process.env.TEST_REDIS_URL;

describe('scheduled delivery with two processes on PostgreSQL + Redis', () => {
  test(
    'each scheduled message is sent exactly once',
    { skip: scaledOut ? false : 'needs TEST_POSTGRES_URL and TEST_REDIS_URL (two processes share PostgreSQL and Redis)' },
    async () => {
      const d = await childDeployment('postgres');
      const secondDataDir = mkdtempSync(join(tmpdir(), 'parley-child-b-'));
      const servers: ChildServer[] = [];
      try {
        const { owner, reader } = await cast(d);
        // Both workers look at the database every 100 ms, so they race for every row.
        const env = { REDIS_URL: process.env.TEST_REDIS_URL!, PARLEY_REDIS_PREFIX: `parley-sched-${process.pid}:`, PARLEY_SCHEDULER_INTERVAL_MS: '100' };
        servers.push(await d.start(env), await d.start({ ...env, PARLEY_DATA_DIR: secondDataDir }));
        const [a, b] = servers as [ChildServer, ChildServer];
        ok(await client(a, owner).post('/users/me/subscriptions', { subscriptions: [{ name: 'race' }], principals: [owner.id, reader.id] }));
        const streamId = ok(await client(a, owner).get('/get_stream_id', { stream: 'race' })).stream_id;
        const at = nowSeconds() + 3;
        const N = 20;
        await Promise.all(
          Array.from({ length: N }, (_, i) =>
            client(i % 2 ? a : b, owner).post('/scheduled_messages', { type: 'stream', to: streamId, topic: 'race', content: `race ${i}`, scheduled_delivery_timestamp: at }).then(ok),
          ),
        );
        const r = client(b, reader);
        await waitFor('every scheduled message', 20_000, async () => (await delivered(r, streamId, 'race')).length >= N);
        await sleep(1500);
        const contents = (await delivered(r, streamId, 'race')).sort();
        assert.deepEqual(contents, Array.from({ length: N }, (_, i) => `<p>race ${i}</p>`).sort());
        assert.deepEqual(ok(await client(a, owner).get('/scheduled_messages')).scheduled_messages, []);
      } finally {
        for (const s of servers) {
          s.process.kill('SIGTERM');
          await s.exited;
        }
        await d.drop();
        rmSync(secondDataDir, { recursive: true, force: true });
      }
    },
  );
});
