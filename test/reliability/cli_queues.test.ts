import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { testDatabases, OWNER_EMAIL, PASSWORD } from '../helpers/server.js';
import { ApiClient } from '../helpers/client.js';
import { ok } from '../helpers/assert.js';
import { registerQueue, TestQueue } from '../helpers/events.js';
import { childDeployment, type ChildDeployment, type ChildServer } from './child_server.js';

/**
 * The admin CLI beside a server: a one-shot command must leave the server's event queues
 * alone, saved (in the data directory, or orphaned in Redis) or live, and with Redis its
 * events still reach the server's clients.
 */

const redisUrl = process.env.TEST_REDIS_URL;
const backends: ('memory' | 'redis')[] = redisUrl ? ['memory', 'redis'] : ['memory'];

async function owner(s: ChildServer): Promise<ApiClient> {
  const key = ok(await new ApiClient(s.url, null, null).post('/fetch_api_key', { username: OWNER_EMAIL, password: PASSWORD }));
  return new ApiClient(s.url, OWNER_EMAIL, key.api_key);
}

async function stop(s: ChildServer): Promise<void> {
  s.process.kill('SIGTERM');
  assert.equal(await s.exited, 0, s.output());
}

/** Every file of the data directory with its modification time and content. */
function dataDirSnapshot(dir: string): Record<string, { mtimeMs: number; content: string }> {
  const out: Record<string, { mtimeMs: number; content: string }> = {};
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path);
    out[name] = { mtimeMs: st.mtimeMs, content: st.isFile() ? readFileSync(path, 'utf8') : '(directory)' };
  }
  return out;
}

/**
 * Every Redis key under `prefix` that belongs to event queues (queue records, the orphan set,
 * process liveness), with its value. The event log and the read-cache counters are left
 * out: a command's events and writes legitimately go there.
 */
async function queueKeys(redis: Redis, prefix: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of (await redis.keys(`${prefix}*`)).sort()) {
    if (/:(log|cache:generations)$/.test(key)) continue;
    const type = await redis.type(key);
    out[key] = type === 'hash' ? await redis.hgetall(key) : type === 'set' ? (await redis.smembers(key)).sort() : type === 'string' ? await redis.get(key) : type;
  }
  return out;
}

for (const kind of testDatabases()) {
  for (const backend of backends) {
    describe(`the CLI leaves event queues alone [${kind}, ${backend}]`, () => {
      let d: ChildDeployment | undefined;
      const running: ChildServer[] = [];
      const prefix = `parley-cliq-${process.pid}-${Date.now()}:`;
      const env: Record<string, string> = backend === 'redis' ? { REDIS_URL: redisUrl!, PARLEY_REDIS_PREFIX: prefix } : {};
      const redis = backend === 'redis' ? new Redis(redisUrl!) : null;

      after(async () => {
        for (const s of running) if (s.process.exitCode === null) s.process.kill('SIGKILL');
        await d?.drop();
        if (redis) {
          const keys = await redis.keys(`${prefix}*`);
          if (keys.length) await redis.del(...keys);
          await redis.quit();
        }
      });

      /** `parley <args>` as its own process, on the deployment's database and data directory. */
      function parley(...args: string[]): Promise<any> {
        return new Promise((resolve, reject) => {
          execFile(
            process.execPath,
            ['--import', 'tsx', 'src/cli/index.ts', ...args],
            {
              env: { PATH: process.env.PATH ?? '', PARLEY_ENV_FILE: '/nonexistent', DATABASE_URL: d!.databaseUrl, PARLEY_DATA_DIR: d!.dataDir, ...env },
              timeout: 60_000,
            },
            (error, stdout, stderr) => (error ? reject(new Error(`parley ${args.join(' ')}: ${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout))),
          );
        });
      }

      /** What a command must not change: the saved-queue files, or the queues' Redis keys. */
      const snapshot = async (): Promise<unknown> => (redis ? queueKeys(redis, prefix) : dataDirSnapshot(d!.dataDir));

      test('saved queues (server stopped) and live ones (server running) are untouched; with Redis, clients get the events', async () => {
        d = await childDeployment(kind);
        let s = await d.start(env);
        running.push(s);
        let client = await owner(s);
        const q = await registerQueue(client, { event_types: ['realm_user'] });
        await stop(s);

        // Stopped: the queue is saved, and stays exactly as saved while commands run.
        const saved = await snapshot();
        if (redis) assert.ok(Object.keys(saved as object).some((k) => k.endsWith(`:q:${q.queueId}`)), JSON.stringify(saved));
        else assert.match((saved as Record<string, { content: string }>)['event_queues.json']!.content, new RegExp(q.queueId));
        const ada = await parley('create-user', '--email', 'ada@example.com', '--full-name', 'Ada Lovelace');
        await parley('api-key', '--email', 'ada@example.com');
        assert.deepEqual(await snapshot(), saved);

        // Running: the server took its queue back; a command beside it changes nothing of it.
        s = await d.start(env);
        running.push(s);
        client = await owner(s);
        const restored = ok(await client.get('/events', { queue_id: q.queueId, last_event_id: q.lastEventId, dont_block: true }));
        // Ada was created while no server ran. Scaled out, her event waited in the shared log and
        // was replayed into the queue when the server took it back; embedded, nobody could be told.
        assert.deepEqual(
          restored.events.map((e: { op: string; person: { user_id: number } }) => [e.op, e.person.user_id]),
          redis ? [['add', ada.user_id]] : [],
        );
        const live = await snapshot();
        const grace = await parley('create-user', '--email', 'grace@example.com', '--full-name', 'Grace Hopper');
        await parley('change-password', '--email', 'ada@example.com', '--password', 'analytical-engine');
        await parley('api-key', '--email', 'grace@example.com');
        assert.deepEqual(await snapshot(), live);

        // The server sees the new user at once, whatever the backend.
        assert.equal(ok(await client.get(`/users/${grace.user_id}`)).user.full_name, 'Grace Hopper');
        if (redis) {
          // Scaled out, the command's event went through the shared log to the server's queue.
          const e = await new TestQueue(client, q.queueId, restored.events.at(-1).id, q.state).next('realm_user');
          assert.equal(e.op, 'add');
          assert.equal(e.person.user_id, grace.user_id);
          assert.equal(e.person.full_name, 'Grace Hopper');
        }
        await stop(s);
      });
    });
  }
}
