import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { registerQueue } from '../helpers/events.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { createChannel } from './messages_send.fixtures.js';

forEachDatabase('typing notifications', (server) => {
  test('direct-message typing reaches every participant, sender included', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const qo = await registerQueue(othello.client, { event_types: ['typing'] });
    const qh = await registerQueue(hamlet.client, { event_types: ['typing'] });
    const qa = await registerQueue(admin.client, { event_types: ['typing'] });
    // zulip-terminal sends no `type`.
    const res = await hamlet.client.post('/typing', { to: [othello.user.id], op: 'start' });
    ok(res);
    assertConforms(res, 'POST', '/typing');
    const e = await qo.next('typing');
    assertEventConforms(e);
    assert.equal(e.op, 'start');
    assert.equal(e.message_type, 'direct');
    assert.deepEqual(e.sender, { user_id: hamlet.user.id, email: hamlet.user.email });
    assert.deepEqual(e.recipients, [
      { user_id: othello.user.id, email: othello.user.email },
      { user_id: hamlet.user.id, email: hamlet.user.email },
    ]);
    assert.equal((await qh.next('typing')).op, 'start');
    await qa.expectNone('typing', 200);
    ok(await hamlet.client.post('/typing', { type: 'direct', to: [othello.user.id], op: 'stop' }));
    assert.equal((await qo.next('typing')).op, 'stop');
  });

  test('channel typing goes to subscribers whose clients support it', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const stream = (await createChannel(s, 'Typing room', { subscribers: [hamlet.user, othello.user] })).id;
    const capable = await registerQueue(othello.client, { event_types: ['typing'], client_capabilities: { stream_typing_notifications: true } });
    const legacy = await registerQueue(othello.client, { event_types: ['typing'] });
    ok(await hamlet.client.post('/typing', { type: 'channel', stream_id: stream, topic: 'plans', op: 'start' }));
    const e = await capable.next('typing');
    assertEventConforms(e);
    assert.equal(e.message_type, 'stream');
    assert.equal(e.stream_id, stream);
    assert.equal(e.topic, 'plans');
    assert.equal(e.recipients, undefined);
    await legacy.expectNone('typing', 200);
    // "stream" is the older name of the type.
    ok(await hamlet.client.post('/typing', { type: 'stream', stream_id: stream, topic: 'plans', op: 'stop' }));
    assert.equal((await capable.next('typing')).op, 'stop');
  });

  test('channels with more than 100 subscribers get no typing notifications', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const db = s.app.services.db.kysely;
    const extras = await db
      .insertInto('users')
      .values(
        Array.from({ length: 100 }, (_, i) => ({
          realm_id: s.realm.id,
          email: `crowd${i}@example.com`,
          email_lc: `crowd${i}@example.com`,
          delivery_email: `crowd${i}@example.com`,
          full_name: `Crowd ${i}`,
          password_hash: null,
          api_key: `crowdkey${i}`.padEnd(32, 'x'),
          date_joined: 1,
        })),
      )
      .returningAll()
      .execute();
    const big = await createChannel(s, 'Crowded', { subscribers: [hamlet.user, othello.user, ...extras] });
    const q = await registerQueue(othello.client, { event_types: ['typing'], client_capabilities: { stream_typing_notifications: true } });
    ok(await hamlet.client.post('/typing', { type: 'channel', stream_id: big.id, topic: 't', op: 'start' }));
    await q.expectNone('typing', 300);
  });

  test('errors', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    err(await hamlet.client.post('/typing', { op: 'start' }), 400, 'BAD_REQUEST', "Missing 'to' argument");
    err(await hamlet.client.post('/typing', { to: [], op: 'start' }), 400, 'BAD_REQUEST', "Empty 'to' list");
    err(await hamlet.client.post('/typing', { to: [othello.user.id, 99999], op: 'start' }), 400, 'BAD_REQUEST', 'Invalid user ID 99999');
    err(await hamlet.client.post('/typing', { to: [othello.user.id], op: 'typing' }), 400, 'BAD_REQUEST');
    err(await hamlet.client.post('/typing', { to: [othello.user.id] }), 400, 'REQUEST_VARIABLE_MISSING');
    const res = await hamlet.client.post('/typing', { type: 'channel', topic: 'x', op: 'start' });
    err(res, 400, 'BAD_REQUEST', 'Missing channel ID');
    assertConforms(res, 'POST', '/typing');
    err(await hamlet.client.post('/typing', { type: 'channel', stream_id: 1, op: 'start' }), 400, 'BAD_REQUEST', 'Missing topic');
    err(await hamlet.client.post('/typing', { type: 'channel', stream_id: 99999, topic: 'x', op: 'start' }), 400, 'BAD_REQUEST', 'Invalid channel ID');
  });
});
