import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { registerQueue, type ZEvent } from '../helpers/events.js';

/** Channel state and events as real clients see them: POST /register, then GET /events. */

forEachDatabase('channel state and events through event queues', (server) => {
  test('POST /register returns channel state that conforms to zulip.yaml', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Reg e2e' }], principals: [hamlet.user.id, othello.user.id] }));
    // Only the channel event types, so that the check covers exactly the channel keys.
    const types = ['subscription', 'stream', 'default_streams', 'default_stream_groups'];
    const res = await hamlet.client.post('/register', { include_subscribers: true, fetch_event_types: types });
    assertConforms(res, 'POST', '/register');
    const body = ok(res);
    const sub = body.subscriptions.find((x: { name: string }) => x.name === 'Reg e2e');
    assert.deepEqual(sub.subscribers, [hamlet.user.id, othello.user.id].sort((a, b) => a - b));
    assert.match(sub.color, /^#[0-9a-f]{6}$/);
    assert.equal(sub.in_home_view, true);
    assert.equal(sub.stream_post_policy, 1);
    for (const key of ['unsubscribed', 'never_subscribed', 'streams', 'realm_default_streams']) assert.ok(Array.isArray(body[key]), key);
    assert.equal(body.max_stream_name_length, 60);
    assert.equal(body.max_stream_description_length, 1024);
    // zulip-terminal's registration: subscriptions with subscribers, no client capabilities.
    const terminal = await hamlet.client.post('/register', {
      event_types: ['message', 'subscription'],
      fetch_event_types: ['subscription'],
      include_subscribers: true,
      client_gravatar: true,
      apply_markdown: true,
    });
    assertConforms(terminal, 'POST', '/register');
  });

  test('subscription and stream events reach queues; archiving follows the archived_channels capability', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const legacy = await registerQueue(othello.client, { event_types: ['stream', 'subscription'] });
    const modern = await registerQueue(othello.client, { event_types: ['stream', 'subscription'], client_capabilities: { archived_channels: true } });

    ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Queue events' }], principals: [hamlet.user.id, othello.user.id] }));
    const id = ok(await hamlet.client.get('/get_stream_id', { stream: 'Queue events' })).stream_id;
    for (const q of [legacy, modern]) {
      const created = await q.next((e) => e.type === 'stream' && e.op === 'create');
      assert.equal(created.streams[0].stream_id, id);
      const added = await q.next((e) => e.type === 'subscription' && e.op === 'add');
      assert.equal(added.subscriptions[0].stream_id, id);
    }

    ok(await hamlet.client.delete(`/streams/${id}`));
    const isArchive = (e: ZEvent) => e.type === 'stream' && ((e.op === 'update' && e.property === 'is_archived') || e.op === 'delete');
    const legacyEvents = (await legacy.collect(400)).filter(isArchive);
    const modernEvents = (await modern.collect(400)).filter(isArchive);
    assert.deepEqual(legacyEvents.map((e) => e.op), ['delete']);
    assert.deepEqual(modernEvents.map((e) => [e.op, e.property, e.value]), [['update', 'is_archived', true]]);
    await legacy.delete();
    await modern.delete();
  });
});
