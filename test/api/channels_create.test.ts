import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';

forEachDatabase('POST /channels/create', (server) => {
  test('creates the channel with its settings, subscribes exactly the subscribers, answers its id', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const folder = ok(await admin.client.post('/channel_folders/create', { name: 'Music folder', description: '' })).channel_folder_id;
    const { result: res, events } = await captureEvents(s, () =>
      hamlet.client.post('/channels/create', {
        name: '  music ',
        description: 'All things\nmusic',
        subscribers: [othello.user.id],
        invite_only: true,
        history_public_to_subscribers: true,
        folder_id: folder,
      }),
    );
    const body = ok(res);
    assertConforms(res, 'POST', '/channels/create');
    assert.equal(typeof body.id, 'number');
    const stream = ok(await admin.client.get(`/streams/${body.id}`)).stream;
    assert.equal(stream.name, 'music');
    assert.equal(stream.description, 'All things music');
    assert.equal(stream.invite_only, true);
    assert.equal(stream.history_public_to_subscribers, true);
    assert.equal(stream.folder_id, folder);
    assert.deepEqual(ok(await othello.client.get(`/streams/${body.id}/members`)).subscribers, [othello.user.id]);
    const create = events.find((e) => e.event.type === 'stream' && e.event.op === 'create')!;
    assert.ok(create);
    assertEventConforms(create.event);
    const subAdd = events.find((e) => e.event.type === 'subscription' && e.event.op === 'add')!;
    assert.deepEqual(recipientIds(subAdd), [othello.user.id]);
    assertEventConforms(subAdd.event);
  });

  test('a name any channel has, archived or not, in any case: 409 CHANNEL_ALREADY_EXISTS', async () => {
    const s = server();
    const { hamlet, admin } = s.cast;
    ok(await hamlet.client.post('/channels/create', { name: 'Denmark', subscribers: [hamlet.user.id] }));
    const res = await hamlet.client.post('/channels/create', { name: 'denmark', subscribers: [hamlet.user.id] });
    err(res, 409, 'CHANNEL_ALREADY_EXISTS', "Channel 'denmark' already exists");
    assertConforms(res, 'POST', '/channels/create');
    const archived = ok(await hamlet.client.post('/channels/create', { name: 'old', subscribers: [hamlet.user.id] })).id;
    ok(await admin.client.delete(`/streams/${archived}`));
    err(await hamlet.client.post('/channels/create', { name: 'old', subscribers: [] }), 409, 'CHANNEL_ALREADY_EXISTS');
  });

  test('parameters and permissions', async () => {
    const s = server();
    const { hamlet, guest, owner } = s.cast;
    err(await hamlet.client.post('/channels/create', { subscribers: [] }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'name' argument");
    err(await hamlet.client.post('/channels/create', { name: 'x1' }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'subscribers' argument");
    err(await hamlet.client.post('/channels/create', { name: '  ', subscribers: [] }), 400, 'BAD_REQUEST', "Channel name can't be empty.");
    err(await hamlet.client.post('/channels/create', { name: 'x2', subscribers: [99999] }), 400, 'BAD_REQUEST', 'No such user');
    err(await hamlet.client.post('/channels/create', { name: 'x3', subscribers: [], folder_id: 99999 }), 400, 'BAD_REQUEST');
    err(await guest.client.post('/channels/create', { name: 'x4', subscribers: [] }), 400, 'BAD_REQUEST', 'Not allowed for guest users');
    err(await hamlet.client.post('/channels/create', { name: 'x5', subscribers: [], is_default_stream: true }), 400, 'BAD_REQUEST', 'Insufficient permission');
    err(await hamlet.client.post('/channels/create', { name: 'x6', subscribers: [], message_retention_days: 10 }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    const id = ok(await owner.client.post('/channels/create', { name: 'x7', subscribers: [owner.user.id], message_retention_days: 10, is_default_stream: true })).id;
    const stream = ok(await owner.client.get(`/streams/${id}`)).stream;
    assert.equal(stream.message_retention_days, 10);
    const reg = ok(await owner.client.post('/register', { fetch_event_types: ['default_streams'] }));
    assert.ok(reg.realm_default_streams.includes(id));
  });
});
