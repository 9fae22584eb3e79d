import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, startServer, type TestServer } from '../helpers/server.js';
import { ApiClient } from '../helpers/client.js';
import { buildApp, type App } from '../../src/app.js';
import { err, ok } from '../helpers/assert.js';
import { registerQueue, TestQueue, type ZEvent } from '../helpers/events.js';
import { assertConforms } from '../helpers/openapi.js';
import { loadConfig } from '../../src/config.js';
import type { EventRecipient, MessageEventExtra } from '../../src/events/bus.js';

const baseEvents = loadConfig({}, { PARLEY_ENV_FILE: '/nonexistent' }).events;

/** A message event as the messages area publishes it (rendered, with a Gravatar sender). */
function publishMessage(
  s: TestServer,
  opts: { id: number; users: EventRecipient[]; stream?: string; topic?: string; extra?: Partial<MessageEventExtra> },
): void {
  const { hamlet } = s.cast;
  const stream = opts.stream ?? null;
  const message = {
    id: opts.id,
    sender_id: hamlet.user.id,
    sender_full_name: hamlet.user.full_name,
    sender_email: hamlet.user.email,
    sender_realm_str: '',
    avatar_url: 'https://secure.gravatar.com/avatar/x?d=identicon&version=1',
    client: 'test',
    content: '<p>hello <strong>world</strong></p>',
    content_type: 'text/html',
    display_recipient: stream ?? [{ id: hamlet.user.id, email: hamlet.user.email, full_name: hamlet.user.full_name, is_mirror_dummy: false }],
    recipient_id: 1,
    ...(stream ? { stream_id: 1 } : {}),
    subject: opts.topic ?? '',
    topic_links: [],
    submessages: [],
    timestamp: Math.floor(Date.now() / 1000),
    type: stream ? 'stream' : 'private',
    is_me_message: false,
    reactions: [],
  };
  s.app.services.events.send(s.realm.id, { type: 'message', message }, opts.users, {
    rawContent: 'hello **world**',
    senderAvatarIsGravatar: true,
    ...opts.extra,
  });
}

function sendTo(s: TestServer, userIds: number[], event: Record<string, unknown> & { type: string }): void {
  s.app.services.events.send(s.realm.id, event, userIds);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `check` holds, instead of a fixed sleep that a loaded machine outruns. */
async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting until ${what}`);
    await sleep(10);
  }
}

/** Waits until the server holds the queue's GET /events open. */
const held = (s: TestServer, q: TestQueue): Promise<void> => until(`a poll of ${q.queueId} is held`, () => s.app.services.queues.isHeld(q.queueId));

function queueSuite(server: () => TestServer): void {
  test('POST /register returns a queue and the server constants', async () => {
    const s = server();
    const res = await s.cast.hamlet.client.post('/register', { fetch_event_types: [] });
    const body = ok(res);
    assertConforms(res, 'POST', '/register');
    assert.equal(typeof body.queue_id, 'string');
    assert.equal(body.last_event_id, -1);
    assert.equal(body.zulip_feature_level, 496);
    assert.equal(typeof body.zulip_version, 'string');
    assert.equal(typeof body.zulip_merge_base, 'string');
    assert.equal(body.max_message_length, 10000);
    assert.equal(body.max_topic_length, 60);
    assert.equal(body.max_stream_name_length, 60);
    assert.ok(body.event_queue_longpoll_timeout_seconds >= 90);
    assert.equal(typeof body.server_timestamp, 'number');
    assert.equal(body.idle_queue_timeout_secs, 600);
    // fetch_event_types=[]: no area's state.
    assert.equal(body.presences, undefined);
    assert.equal(body.server_typing_started_wait_period_milliseconds, undefined);
  });

  test('unknown parameters are ignored; idle_queue_timeout takes seconds or "mobile"', async () => {
    const s = server();
    const { hamlet } = s.cast;
    let body = ok(await hamlet.client.post('/register', { fetch_event_types: [], idle_queue_timeout: '"mobile"', read_by_sender: true }));
    assert.equal(body.idle_queue_timeout_secs, 12 * 3600);
    assert.deepEqual(body.ignored_parameters_unsupported, ['read_by_sender']);
    body = ok(await hamlet.client.post('/register', { fetch_event_types: [], idle_queue_timeout: 3600 }));
    assert.equal(body.idle_queue_timeout_secs, 3600);
    body = ok(await hamlet.client.post('/register', { fetch_event_types: [], idle_queue_timeout: 30 * 86400 }));
    assert.equal(body.idle_queue_timeout_secs, 7 * 86400);
    err(await hamlet.client.post('/register', { fetch_event_types: [], idle_queue_timeout: 0 }), 400, 'BAD_REQUEST');
  });

  test('want(): fetch_event_types, else event_types, else everything', async () => {
    const s = server();
    const c = s.cast.hamlet.client;
    const all = ok(await c.post('/register'));
    assert.ok('presences' in all && 'server_typing_started_wait_period_milliseconds' in all);
    const byEventTypes = ok(await c.post('/register', { event_types: ['presence'] }));
    assert.ok('presences' in byEventTypes);
    assert.ok(!('server_typing_started_wait_period_milliseconds' in byEventTypes));
    const byFetch = ok(await c.post('/register', { event_types: ['presence'], fetch_event_types: ['realm'] }));
    assert.ok(!('presences' in byFetch));
    assert.equal(byFetch.server_typing_started_wait_period_milliseconds, 30000);
    // zulip-js: multipart body with the literal string "null" means every type.
    const js = ok(await c.post('/register', { event_types: 'null' }, 'multipart'));
    assert.ok('presences' in js);
  });

  test('a held GET /events is answered as soon as an event arrives', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const q = await registerQueue(hamlet.client, { event_types: ['test_event'] });
    const polling = q.poll();
    await held(s, q);
    const sent = Date.now();
    sendTo(s, [hamlet.user.id], { type: 'test_event', n: 1 });
    const events = await polling;
    assert.ok(Date.now() - sent < 900, 'answered before the heartbeat');
    assert.deepEqual(events, [{ type: 'test_event', n: 1, id: 0 }]);
  });

  test('queued events are returned at once; last_event_id acknowledges them', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const q = await registerQueue(hamlet.client, { event_types: ['alert_words'] });
    for (let n = 1; n <= 3; n++) sendTo(s, [hamlet.user.id], { type: 'alert_words', alert_words: [`w${n}`] });
    // Delivery through Redis is asynchronous.
    await until('the three events are queued', async () => ok(await hamlet.client.get('/events', { queue_id: q.queueId, last_event_id: -1, dont_block: true })).events.length === 3);
    let res = await hamlet.client.get('/events', { queue_id: q.queueId, last_event_id: -1 });
    assertConforms(res, 'GET', '/events');
    assert.deepEqual(ok(res).events.map((e: { id: number }) => e.id), [0, 1, 2]);
    // Not acknowledged yet: the same events again.
    res = await hamlet.client.get('/events', { queue_id: q.queueId, last_event_id: -1, dont_block: true });
    assert.deepEqual(ok(res).events.map((e: { alert_words: string[] }) => e.alert_words[0]), ['w1', 'w2', 'w3']);
    res = await hamlet.client.get('/events', { queue_id: q.queueId, last_event_id: 1, dont_block: true });
    assert.deepEqual(ok(res).events.map((e: { id: number }) => e.id), [2]);
    res = await hamlet.client.get('/events', { queue_id: q.queueId, last_event_id: 2, dont_block: true });
    assert.deepEqual(ok(res).events, []);
    err(
      await hamlet.client.get('/events', { queue_id: q.queueId, last_event_id: 0, dont_block: true }),
      400,
      'BAD_REQUEST',
      'An event newer than 0 has already been pruned!',
    );
    err(
      await hamlet.client.get('/events', { queue_id: q.queueId, last_event_id: 7, dont_block: true }),
      400,
      'BAD_REQUEST',
      'Event 7 was not in this queue',
    );
  });

  test('event_types filters what a queue receives', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const q = await registerQueue(hamlet.client, { event_types: ['test_wanted'] });
    sendTo(s, [hamlet.user.id], { type: 'test_unwanted' });
    sendTo(s, [hamlet.user.id], { type: 'test_wanted' });
    sendTo(s, [hamlet.user.id], { type: 'test_wanted', marker: true });
    const events = await q.upTo((e) => e.marker === true);
    assert.deepEqual(events.map((e) => [e.type, e.id]), [['test_wanted', 0]]);
    // muted_topics is suppressed for clients that also ask for user_topic.
    const both = await registerQueue(hamlet.client, { event_types: ['muted_topics', 'user_topic'] });
    sendTo(s, [hamlet.user.id], { type: 'muted_topics', muted_topics: [] });
    sendTo(s, [hamlet.user.id], { type: 'user_topic', stream_id: 1, topic_name: 't', last_updated: 1, visibility_policy: 1 });
    sendTo(s, [hamlet.user.id], { type: 'user_topic', stream_id: 1, topic_name: 'marker', last_updated: 1, visibility_policy: 1 });
    assert.deepEqual((await both.upTo((e) => e.topic_name === 'marker')).map((e) => [e.type, e.topic_name]), [['user_topic', 't']]);
  });

  test('events reach only the recipients’ queues, each with its own ids', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const qh = await registerQueue(hamlet.client, { event_types: ['test_event'] });
    const qh2 = await registerQueue(hamlet.client, { event_types: ['test_event'] });
    const qo = await registerQueue(othello.client, { event_types: ['test_event'] });
    sendTo(s, [hamlet.user.id], { type: 'test_event', n: 1 });
    sendTo(s, [hamlet.user.id, othello.user.id], { type: 'test_event', n: 2 });
    sendTo(s, [hamlet.user.id, othello.user.id], { type: 'test_event', marker: true });
    const marker = (e: ZEvent) => e.marker === true;
    assert.deepEqual((await qh.upTo(marker)).map((e) => [e.id, e.n]), [[0, 1], [1, 2]]);
    assert.deepEqual((await qh2.upTo(marker)).map((e) => [e.id, e.n]), [[0, 1], [1, 2]]);
    assert.deepEqual((await qo.upTo(marker)).map((e) => [e.id, e.n]), [[0, 2]]);
  });

  test('message events: flags, local_message_id for the sender queue, markdown and avatar per queue', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const rendered = await registerQueue(hamlet.client, { event_types: ['message'], apply_markdown: true, client_gravatar: false });
    const raw = await registerQueue(hamlet.client, { event_types: ['message'], apply_markdown: false, client_gravatar: true });
    const other = await registerQueue(othello.client, { event_types: ['message'], apply_markdown: true });
    publishMessage(s, {
      id: 501,
      users: [
        { id: hamlet.user.id, flags: ['read'] },
        { id: othello.user.id, flags: ['mentioned'] },
      ],
      extra: { senderQueueId: rendered.queueId, localId: '17.01', senderEmailVisibleTo: (id) => id === hamlet.user.id },
    });
    const a = await rendered.next('message');
    assert.deepEqual(a.flags, ['read']);
    assert.equal(a.local_message_id, '17.01');
    assert.equal(a.message.content, '<p>hello <strong>world</strong></p>');
    assert.equal(a.message.content_type, 'text/html');
    assert.match(a.message.avatar_url, /gravatar/);
    const b = await raw.next('message');
    assert.equal(b.local_message_id, undefined);
    assert.equal(b.message.content, 'hello **world**');
    assert.equal(b.message.content_type, 'text/x-markdown');
    assert.equal(b.message.avatar_url, null);
    const c = await other.next('message');
    assert.deepEqual(c.flags, ['mentioned']);
    assert.equal(c.local_message_id, undefined);
    // Othello cannot see hamlet's real email, so cannot compute the Gravatar URL himself.
    const otherRaw = await registerQueue(othello.client, { event_types: ['message'], client_gravatar: true });
    publishMessage(s, { id: 502, users: [othello.user.id], extra: { senderEmailVisibleTo: () => false } });
    const d = await otherRaw.next('message');
    assert.match(d.message.avatar_url, /gravatar/);
    assert.deepEqual(d.flags, []);
  });

  test('the empty topic is shown by name to clients without empty_topic_name', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const modern = await registerQueue(hamlet.client, { event_types: ['message', 'typing'], client_capabilities: { empty_topic_name: true, stream_typing_notifications: true } });
    const legacy = await registerQueue(hamlet.client, { event_types: ['message', 'typing'], client_capabilities: { stream_typing_notifications: true } });
    publishMessage(s, { id: 601, users: [hamlet.user.id], stream: 'Verona', topic: '' });
    sendTo(s, [hamlet.user.id], { type: 'typing', op: 'start', message_type: 'stream', sender: { user_id: 1, email: 'x' }, stream_id: 1, topic: '' });
    assert.equal((await modern.next('message')).message.subject, '');
    assert.equal((await modern.next('typing')).topic, '');
    assert.equal((await legacy.next('message')).message.subject, 'general chat');
    assert.equal((await legacy.next('typing')).topic, 'general chat');
  });

  test('narrowed queues get only matching messages, public-channel ones included', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const dms = await registerQueue(othello.client, { event_types: ['message'], narrow: [['is', 'dm']] });
    const verona = await registerQueue(othello.client, { event_types: ['message'], narrow: [{ operator: 'channel', operand: 'Verona' }] });
    publishMessage(s, { id: 701, users: [othello.user.id], stream: 'Denmark', topic: 't' });
    // Othello is not subscribed to Verona; a narrowed queue still sees its public messages.
    publishMessage(s, { id: 702, users: [hamlet.user.id], stream: 'Verona', topic: 't', extra: { publicStream: true } });
    publishMessage(s, { id: 703, users: [hamlet.user.id, othello.user.id] });
    // Markers, one for each narrow.
    publishMessage(s, { id: 704, users: [othello.user.id] });
    publishMessage(s, { id: 705, users: [hamlet.user.id], stream: 'Verona', topic: 't', extra: { publicStream: true } });
    assert.deepEqual((await dms.upTo((e) => e.message.id === 704)).map((e) => e.message.id), [703]);
    const v = await verona.upTo((e) => e.message.id === 705);
    assert.deepEqual(v.map((e) => e.message.id), [702]);
    assert.deepEqual(v[0]!.flags, []);
    err(await othello.client.post('/register', { narrow: [['search', 'x']] }), 400, 'BAD_REQUEST', 'Operator search not supported.');
  });

  test('all_public_streams queues see every public-channel message once', async () => {
    const s = server();
    const { hamlet, othello, guest } = s.cast;
    const q = await registerQueue(othello.client, { event_types: ['message'], all_public_streams: true });
    publishMessage(s, { id: 801, users: [hamlet.user.id], stream: 'Verona', topic: 't', extra: { publicStream: true } });
    publishMessage(s, { id: 802, users: [hamlet.user.id], stream: 'Secret', topic: 't' });
    publishMessage(s, { id: 803, users: [{ id: othello.user.id, flags: ['read'] }], stream: 'Verona', topic: 't', extra: { publicStream: true } });
    publishMessage(s, { id: 804, users: [hamlet.user.id], stream: 'Verona', topic: 't', extra: { publicStream: true } });
    const got = await q.upTo((e) => e.message.id === 804);
    assert.deepEqual(got.map((e) => [e.message.id, e.flags]), [[801, []], [803, ['read']]]);
    err(await guest.client.post('/register', { all_public_streams: true }), 400, 'BAD_REQUEST', 'User not authorized for this query');
  });

  test('delete_message: bulk for clients that support it, one event per message otherwise', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const bulk = await registerQueue(hamlet.client, { event_types: ['delete_message'], client_capabilities: { bulk_message_deletion: true } });
    const single = await registerQueue(hamlet.client, { event_types: ['delete_message'] });
    sendTo(s, [hamlet.user.id], { type: 'delete_message', message_type: 'private', message_ids: [5, 6] });
    sendTo(s, [hamlet.user.id], { type: 'delete_message', message_type: 'private', message_ids: [7] });
    assert.deepEqual(await bulk.upTo((e) => e.message_ids?.[0] === 7), [{ type: 'delete_message', message_type: 'private', message_ids: [5, 6], id: 0 }]);
    assert.deepEqual(await single.upTo((e) => e.message_id === 7), [
      { type: 'delete_message', message_type: 'private', message_id: 5, id: 0 },
      { type: 'delete_message', message_type: 'private', message_id: 6, id: 1 },
    ]);
  });

  test('events sent for one client capability reach only the matching queues', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const capable = await registerQueue(hamlet.client, { event_types: ['user_group'], client_capabilities: { include_deactivated_groups: true } });
    const legacy = await registerQueue(hamlet.client, { event_types: ['user_group'] });
    const bus = s.app.services.events;
    bus.send(s.realm.id, { type: 'user_group', op: 'update', group_id: 9, data: { deactivated: true } }, [hamlet.user.id], undefined, {
      capability: 'include_deactivated_groups',
      value: true,
    });
    bus.send(s.realm.id, { type: 'user_group', op: 'remove', group_id: 9 }, [hamlet.user.id], undefined, {
      capability: 'include_deactivated_groups',
      value: false,
    });
    bus.send(s.realm.id, { type: 'user_group', op: 'remove', group_id: 10 }, [hamlet.user.id]);
    const marker = (e: ZEvent) => e.group_id === 10;
    assert.deepEqual((await capable.upTo(marker)).map((e) => e.op), ['update']);
    assert.deepEqual((await legacy.upTo(marker)).map((e) => e.op), ['remove']);
  });

  test('a held poll without events gets a heartbeat', async () => {
    const s = server();
    const q = await registerQueue(s.cast.hamlet.client, { event_types: ['message'] });
    const started = Date.now();
    const events = await q.poll();
    const waited = Date.now() - started;
    assert.deepEqual(events, [{ type: 'heartbeat', id: 0 }]);
    assert.ok(waited >= 900 && waited < 3000, `heartbeat after ${waited} ms`);
    // The heartbeat is acknowledged like any event.
    assert.deepEqual(await q.poll({ dontBlock: true }), []);
  });

  test('a new poll replaces a held one; a client that goes away leaves the queue usable', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const q = await registerQueue(hamlet.client, { event_types: ['test_event'] });
    const first = q.poll();
    await held(s, q);
    const second = hamlet.client.get('/events', { queue_id: q.queueId, last_event_id: -1, dont_block: true });
    assert.deepEqual(await first, []);
    assert.deepEqual(ok(await second).events, []);
    const ctl = new AbortController();
    const abandoned = q.poll({ signal: ctl.signal }).catch(() => 'aborted');
    await held(s, q);
    ctl.abort();
    assert.equal(await abandoned, 'aborted');
    sendTo(s, [hamlet.user.id], { type: 'test_event' });
    assert.equal((await q.next('test_event')).id, 0);
  });

  test('BAD_EVENT_QUEUE_ID for unknown, foreign and deleted queues', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    let res = await hamlet.client.get('/events', { queue_id: 'nope', last_event_id: -1 });
    const body = err(res, 400, 'BAD_EVENT_QUEUE_ID', 'Bad event queue ID: nope');
    assert.equal(body.queue_id, 'nope');
    assertConforms(res, 'GET', '/events');
    const q = await registerQueue(hamlet.client);
    // Only the owner may use a queue; others learn nothing about it.
    err(await othello.client.get('/events', { queue_id: q.queueId, last_event_id: -1 }), 400, 'BAD_EVENT_QUEUE_ID');
    err(await othello.client.delete('/events', { queue_id: q.queueId }), 400, 'BAD_EVENT_QUEUE_ID');
    res = await hamlet.client.delete('/events', { queue_id: q.queueId });
    ok(res);
    assertConforms(res, 'DELETE', '/events');
    res = await hamlet.client.get('/events', { queue_id: q.queueId, last_event_id: -1 });
    err(res, 400, 'BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${q.queueId}`);
    res = await hamlet.client.delete('/events', { queue_id: q.queueId });
    err(res, 400, 'BAD_EVENT_QUEUE_ID');
    assertConforms(res, 'DELETE', '/events');
    // zulip-js sends DELETE parameters in the query string.
    const q2 = await registerQueue(hamlet.client);
    ok(await hamlet.client.delete('/events', { queue_id: q2.queueId }, 'query'));
    err(await hamlet.client.get('/events', { queue_id: 'x' }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'last_event_id' argument");
  });

  test('deleting a queue answers its held poll', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const q: TestQueue = await registerQueue(hamlet.client, { event_types: ['test_event'] });
    const polling = q.poll();
    await held(s, q);
    ok(await hamlet.client.delete('/events', { queue_id: q.queueId }));
    assert.deepEqual(await polling, []);
  });
}

forEachDatabase('event queues', queueSuite, { events: { ...baseEvents, heartbeatSeconds: 1 } });

const redisUrl = process.env.TEST_REDIS_URL;
if (redisUrl) {
  forEachDatabase('event queues shared through Redis', queueSuite, {
    redisUrl,
    events: { ...baseEvents, heartbeatSeconds: 1, redisPrefix: `parley-test-${process.pid}-${Date.now()}:` },
  });
} else {
  test('event queues shared through Redis', { skip: 'TEST_REDIS_URL is not set' }, () => undefined);
}

forEachDatabase(
  'event queue garbage collection',
  (server) => {
    test('a queue without a connected client expires; a held one does not', async () => {
      const s = server();
      const { hamlet } = s.cast;
      const idle = await registerQueue(hamlet.client, { event_types: ['test_event'] });
      const held = await registerQueue(hamlet.client, { event_types: ['test_event'] });
      // Keep `held` connected: a poll is always outstanding (heartbeats every 3 s).
      const stop = Date.now() + 2600;
      const keepPolling = (async () => {
        while (Date.now() < stop) await held.collect(stop - Date.now());
      })();
      await sleep(2600);
      await keepPolling;
      err(await hamlet.client.get('/events', { queue_id: idle.queueId, last_event_id: -1 }), 400, 'BAD_EVENT_QUEUE_ID');
      assert.deepEqual(await held.poll({ dontBlock: true }), []);
    });
  },
  { events: { ...baseEvents, heartbeatSeconds: 3, queueTimeoutSeconds: 1 } },
);

test('embedded queues survive a graceful restart', async () => {
  const s = await startServer('sqlite', { events: { ...baseEvents, heartbeatSeconds: 30 } });
  let restarted: App | undefined;
  try {
    const { hamlet } = s.cast;
    const q = await registerQueue(hamlet.client, { event_types: ['alert_words'] });
    sendTo(s, [hamlet.user.id], { type: 'alert_words', alert_words: ['before'] });
    assert.equal((await q.next('alert_words')).id, 0);
    // A poll is held when the server stops: it is answered with a heartbeat, not dropped.
    const polling = q.poll();
    await held(s, q);
    await s.app.close();
    assert.deepEqual(await polling, [{ type: 'heartbeat', id: 1 }]);

    const app = await buildApp(s.config, { announce: () => undefined });
    restarted = app;
    await app.fastify.listen({ port: 0, host: '127.0.0.1' });
    const addr = app.fastify.server.address();
    const client = new ApiClient(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`, hamlet.user.email, hamlet.user.api_key);
    const restored = new TestQueue(client, q.queueId, q.lastEventId, q.state);
    app.services.events.send(s.realm.id, { type: 'alert_words', alert_words: ['after'] }, [hamlet.user.id]);
    const e = await restored.next('alert_words');
    assert.deepEqual(e, { type: 'alert_words', alert_words: ['after'], id: 2 });
  } finally {
    await restarted?.close();
    await s.close();
  }
});
