import { test } from 'node:test';
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { EventBus, type EventRecipient } from '../../src/events/bus.js';
import { MemoryQueueManager } from '../../src/events/backends/memory.js';
import type { QueueSpec } from '../../src/events/queue.js';
import { startServer } from '../helpers/server.js';
import { registerQueue } from '../helpers/events.js';

/**
 * The fan-out path at scale: one message to 10,000 held polls must reach them all quickly,
 * without holding the event loop for long (the dispatcher yields between slices), and the
 * queues themselves must stay small. Timing bounds are loose (CI machines are shared);
 * the measured figures are printed. `npm run bench` measures the real targets.
 */

const config = loadConfig({}, { PARLEY_ENV_FILE: '/nonexistent' });

// Collect garbage around the heap measurement even when node runs without --expose-gc.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function spec(userId: number): QueueSpec {
  return {
    userId,
    realmId: 1,
    eventTypes: null,
    applyMarkdown: true,
    clientGravatar: true,
    slimPresence: false,
    allPublicStreams: false,
    narrow: [],
    capabilities: 0,
    timeoutSeconds: 600,
    clientName: 'scale',
    emptyTopicName: 'general chat',
    seesPublicStreams: true,
  };
}

function messageEvent(id: number) {
  return {
    type: 'message',
    message: {
      id,
      sender_id: 1,
      sender_full_name: 'Sender',
      sender_email: 'sender@example.com',
      sender_realm_str: '',
      avatar_url: null,
      client: 'test',
      content: `<p>${'lorem ipsum '.repeat(40)}</p>`,
      content_type: 'text/html',
      display_recipient: 'big channel',
      recipient_id: 1,
      stream_id: 1,
      subject: 'fan-out',
      topic_links: [],
      submessages: [],
      timestamp: 1,
      type: 'stream',
      is_me_message: false,
      reactions: [],
    },
  };
}

test('one message to 10,000 held polls', async () => {
  const bus = new EventBus();
  const manager = new MemoryQueueManager({ ...config, dataDir: '/nonexistent-parley-scale' }, bus, pino({ level: 'silent' }), randomUUID());
  // Not started: nothing to restore or persist; subscribe the dispatcher directly.
  bus.subscribe((env) => (manager as unknown as { dispatcher: { dispatch(e: typeof env): void } }).dispatcher.dispatch(env));
  const n = 10_000;
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  let delivered = 0;
  let last = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const ids: string[] = [];
  for (let u = 1; u <= n; u++) ids.push(await manager.register(spec(u)));
  for (let u = 1; u <= n; u++) {
    await manager.poll({ userId: u, queueId: ids[u - 1]!, lastEventId: -1, dontBlock: false }, (json) => {
      assert.ok(json.includes('"local_message_id"') === false && json.startsWith('[{"type":"message"'));
      delivered++;
      last = performance.now();
      if (delivered === n) done();
    });
  }
  gc();
  const perQueue = (process.memoryUsage().heapUsed - heapBefore) / n;

  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const users: EventRecipient[] = [];
  for (let u = 1; u <= n; u++) users.push({ id: u, flags: [] });
  const start = performance.now();
  bus.send(1, messageEvent(1), users, { rawContent: 'x', senderAvatarIsGravatar: false });
  await all;
  loop.disable();
  const elapsed = last - start;
  const maxStallMs = loop.max / 1e6;
  process.stdout.write(
    `# fan-out to ${n} queues: ${elapsed.toFixed(0)} ms; longest event-loop stall ${maxStallMs.toFixed(1)} ms; ` +
      `~${Math.round(perQueue)} bytes of heap per held queue\n`,
  );
  assert.equal(delivered, n);
  assert.ok(elapsed < 5000, `fan-out took ${elapsed} ms`);
  assert.ok(maxStallMs < 250, `the event loop stalled ${maxStallMs} ms`);
  assert.ok(perQueue < 4096, `${perQueue} bytes per queue`);
});

test('one message to 1,000 long-polls over real sockets', async () => {
  const s = await startServer('sqlite');
  try {
    const { hamlet } = s.cast;
    const queues = await Promise.all(Array.from({ length: 1000 }, () => registerQueue(hamlet.client, { event_types: ['message'] })));
    const polls = queues.map((q) => q.poll());
    // Let every poll reach the server and be held.
    await new Promise((r) => setTimeout(r, 1000));
    const start = performance.now();
    s.app.services.events.send(s.realm.id, messageEvent(7), [{ id: hamlet.user.id, flags: ['read'] }], {
      rawContent: 'x',
      senderAvatarIsGravatar: false,
    });
    const results = await Promise.all(polls);
    const elapsed = performance.now() - start;
    process.stdout.write(`# fan-out to 1000 held HTTP polls: ${elapsed.toFixed(0)} ms\n`);
    for (const events of results) assert.deepEqual(events.map((e) => [e.type, e.message.id, e.flags]), [['message', 7, ['read']]]);
    assert.ok(elapsed < 5000, `fan-out took ${elapsed} ms`);
  } finally {
    await s.close();
  }
});
