import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { testDatabases, OWNER_EMAIL, PASSWORD } from '../helpers/server.js';
import { ApiClient } from '../helpers/client.js';
import { err, ok } from '../helpers/assert.js';
import { registerQueue } from '../helpers/events.js';
import { childDeployment, type ChildDeployment, type ChildServer } from './child_server.js';

/**
 * Event queues saved by a stopped server (in the data directory, or in Redis) hold user IDs
 * and those users' pending events, message contents included. They must only ever come back
 * on the database they were saved from: started on another database, the same user IDs are
 * other people.
 */

async function owner(s: ChildServer): Promise<{ client: ApiClient; userId: number }> {
  const key = ok(await new ApiClient(s.url, null, null).post('/fetch_api_key', { username: OWNER_EMAIL, password: PASSWORD }));
  return { client: new ApiClient(s.url, OWNER_EMAIL, key.api_key), userId: key.user_id };
}

/** SIGTERM: the graceful shutdown that saves the queues. */
async function stop(s: ChildServer): Promise<void> {
  s.process.kill('SIGTERM');
  assert.equal(await s.exited, 0, s.output());
}

const redisUrl = process.env.TEST_REDIS_URL;
const backends: ('memory' | 'redis')[] = redisUrl ? ['memory', 'redis'] : ['memory'];

for (const kind of testDatabases()) {
  for (const backend of backends) {
    describe(`saved event queues stay with their database [${kind}, ${backend}]`, () => {
      const deployments: ChildDeployment[] = [];
      const running: ChildServer[] = [];
      const prefix = `parley-saved-${process.pid}-${Date.now()}:`;
      const env: Record<string, string> = backend === 'redis' ? { REDIS_URL: redisUrl!, PARLEY_REDIS_PREFIX: prefix } : {};

      after(async () => {
        for (const s of running) if (s.process.exitCode === null) s.process.kill('SIGKILL');
        for (const d of deployments) await d.drop();
        if (backend === 'redis') {
          const redis = new Redis(redisUrl!);
          const keys = await redis.keys(`${prefix}*`);
          if (keys.length) await redis.del(...keys);
          await redis.quit();
        }
      });

      test('a queue comes back on its own database, and never on another one', async () => {
        const a = await childDeployment(kind);
        const b = await childDeployment(kind);
        deployments.push(a, b);
        // B is started with A's data directory (and, scaled out, A's Redis and prefix).
        const startA = async () => running[running.push(await a.start(env)) - 1]!;
        const startB = async () => running[running.push(await b.start({ ...env, PARLEY_DATA_DIR: a.dataDir })) - 1]!;
        const savedFile = join(a.dataDir, 'event_queues.json');

        let s = await startA();
        let me = await owner(s);
        const q = await registerQueue(me.client, { event_types: ['message'] });
        ok(await me.client.post('/messages', { type: 'direct', to: [me.userId], content: 'for the owner of database A only' }));
        await stop(s);
        if (backend === 'memory') {
          const saved = JSON.parse(readFileSync(savedFile, 'utf8'));
          assert.match(saved.database_id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
          assert.deepEqual(saved.queues.map((x: { id: string }) => x.id), [q.queueId]);
        }

        // The positive control: restarted on A, the queue and its pending event are there.
        s = await startA();
        me = await owner(s);
        let events = ok(await me.client.get('/events', { queue_id: q.queueId, last_event_id: -1, dont_block: true })).events;
        assert.deepEqual(events.map((e: { type: string }) => e.type), ['message']);
        assert.equal(events[0].message.content, 'for the owner of database A only');
        await stop(s);

        // Database B: its owner has the very same user ID, and must not get A's queue.
        s = await startB();
        const other = await owner(s);
        assert.equal(other.userId, me.userId);
        err(await other.client.get('/events', { queue_id: q.queueId, last_event_id: -1, dont_block: true }), 400, 'BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${q.queueId}`);
        err(await other.client.delete('/events', { queue_id: q.queueId }), 400, 'BAD_EVENT_QUEUE_ID');
        if (backend === 'memory') {
          // Refused, said so, and discarded.
          assert.match(s.output(), /not restoring saved event queues: they were saved from another database/);
          assert.equal(existsSync(savedFile), false);
        } else {
          // Each database's queues and events under its own namespace (the read-cache counters
          // are shared: a write on either database only makes the other re-read).
          const redis = new Redis(redisUrl!);
          try {
            const keys = (await redis.keys(`${prefix}*`)).filter((k) => k !== `${prefix}cache:generations`);
            const namespaces = new Set(keys.map((k) => /^[^:]+:([0-9a-f-]{36}):/.exec(k)?.[1] ?? k));
            assert.equal(namespaces.size, 2, [...namespaces].join(', '));
          } finally {
            await redis.quit();
          }
        }
        await stop(s);

        if (backend === 'redis') {
          // B neither adopted nor dropped A's queue: back on A, it is still there.
          s = await startA();
          me = await owner(s);
          ok(await me.client.post('/messages', { type: 'direct', to: [me.userId], content: 'again' }));
          const q2 = await registerQueue(me.client, { event_types: ['message'] });
          events = ok(await me.client.get('/events', { queue_id: q.queueId, last_event_id: 0, dont_block: true })).events;
          assert.deepEqual(events.map((e: { message: { content: string } }) => e.message.content), ['again']);
          ok(await q2.client.delete('/events', { queue_id: q2.queueId }));
          await stop(s);
        }
      });
    });
  }
}
