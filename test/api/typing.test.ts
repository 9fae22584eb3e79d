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

forEachDatabase('message-edit typing notifications', (server) => {
  test('a channel message: typing_edit_message to the channel subscribers', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const stream = (await createChannel(s, 'Edit typing', { subscribers: [hamlet.user, othello.user] })).id;
    const id = ok(await hamlet.client.post('/messages', { type: 'stream', to: stream, topic: 'plans', content: 'draft' })).id;
    const qo = await registerQueue(othello.client, { event_types: ['typing_edit_message'] });
    const qa = await registerQueue(admin.client, { event_types: ['typing_edit_message'] });
    const res = await hamlet.client.post(`/messages/${id}/typing`, { op: 'start' });
    ok(res);
    assertConforms(res, 'POST', '/messages/{message_id}/typing');
    const e = await qo.next('typing_edit_message');
    assertEventConforms(e);
    assert.deepEqual(
      { op: e.op, sender_id: e.sender_id, message_id: e.message_id, recipient: e.recipient },
      { op: 'start', sender_id: hamlet.user.id, message_id: id, recipient: { type: 'channel', channel_id: stream, topic: 'plans' } },
    );
    await qa.expectNone('typing_edit_message', 200);
    ok(await hamlet.client.post(`/messages/${id}/typing`, { op: 'stop' }));
    const stop = await qo.next('typing_edit_message');
    assertEventConforms(stop);
    assert.equal(stop.op, 'stop');
  });

  test('a direct message: the participants, the editor first', async () => {
    const s = server();
    const { hamlet, othello, moderator } = s.cast;
    const id = ok(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'hi' })).id;
    const qo = await registerQueue(othello.client, { event_types: ['typing_edit_message'] });
    ok(await hamlet.client.post(`/messages/${id}/typing`, { op: 'start' }));
    const e = await qo.next('typing_edit_message');
    assertEventConforms(e);
    assert.deepEqual(e.recipient, { type: 'direct', user_ids: [hamlet.user.id, othello.user.id] });
    const group = ok(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id, moderator.user.id], content: 'all' })).id;
    ok(await hamlet.client.post(`/messages/${group}/typing`, { op: 'start' }));
    const g = await qo.next('typing_edit_message');
    assert.deepEqual(g.recipient.user_ids, [hamlet.user.id, othello.user.id, moderator.user.id].sort((a, b) => a - b));
  });

  test('only who may edit the content, within the limit, with typing notifications on', async () => {
    const s = server();
    const { hamlet, othello, owner, admin } = s.cast;
    const id = ok(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'hi' })).id;
    err(await hamlet.client.post(`/messages/${id}/typing`, {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'op' argument");
    err(await hamlet.client.post(`/messages/${id}/typing`, { op: 'begin' }), 400, 'BAD_REQUEST');
    err(await othello.client.post(`/messages/${id}/typing`, { op: 'start' }), 400, 'BAD_REQUEST', "You don't have permission to edit this message");
    err(await admin.client.post(`/messages/${id}/typing`, { op: 'start' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    err(await hamlet.client.post('/messages/999999/typing', { op: 'start' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    ok(await hamlet.client.patch('/settings', { send_private_typing_notifications: false }));
    err(await hamlet.client.post(`/messages/${id}/typing`, { op: 'start' }), 400, 'BAD_REQUEST', 'User has disabled typing notifications for direct messages');
    ok(await hamlet.client.patch('/settings', { send_private_typing_notifications: true }));
    ok(await owner.client.patch('/realm', { allow_message_editing: false }));
    err(await hamlet.client.post(`/messages/${id}/typing`, { op: 'start' }), 400, 'BAD_REQUEST', 'Your organization has turned off message editing');
    ok(await owner.client.patch('/realm', { allow_message_editing: true }));
  });
});
