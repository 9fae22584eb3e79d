import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { registerQueue, type TestQueue, type ZEvent } from '../helpers/events.js';
import type { ApiClient } from '../helpers/client.js';

type Dict = Record<string, any>;

/** What a client does with channel_folder events (Zulip's apply_event); the result must equal a fresh register. */
function applyEvent(folders: Dict[], e: ZEvent): Dict[] {
  if (e.type !== 'channel_folder') assert.fail(`unexpected event ${JSON.stringify(e)}`);
  if (e.op === 'add') return [...folders, e.channel_folder];
  if (e.op === 'update') return folders.map((f) => (f.id === e.channel_folder_id ? { ...f, ...e.data } : f));
  if (e.op === 'reorder') {
    const position = new Map<number, number>((e.order as number[]).map((id, i) => [id, i]));
    return folders.map((f) => ({ ...f, order: position.get(f.id)! })).sort((a, b) => a.order - b.order);
  }
  return assert.fail(`unexpected op ${e.op}`);
}

async function registeredFolders(client: ApiClient): Promise<Dict[]> {
  const res = await client.post('/register', { fetch_event_types: ['channel_folders'] });
  assertConforms(res, 'POST', '/register');
  return ok(res).channel_folders;
}

async function nextFolderEvent(q: TestQueue): Promise<ZEvent> {
  const e = await q.next('channel_folder');
  const { id: _id, ...event } = e;
  assertEventConforms(event);
  return e;
}

forEachDatabase('channel folders', (server) => {
  test('administrators create, rename, describe, archive and reorder folders; everyone gets the events', async () => {
    const s = server();
    const { admin, hamlet, guest } = s.cast;
    const q = await registerQueue(guest.client, { event_types: ['channel_folder'] });

    const before = Math.floor(Date.now() / 1000);
    const { result, events } = await captureEvents(s, () => admin.client.post('/channel_folders/create', { name: 'Frontend', description: 'Channels for **frontend**' }));
    assertConforms(result, 'POST', '/channel_folders/create');
    const frontend = ok(result).channel_folder_id;
    assert.equal(events.length, 1);
    // Every active user, guests included.
    assert.ok(recipientIds(events[0]!).includes(guest.user.id) && recipientIds(events[0]!).includes(hamlet.user.id));
    const added = await nextFolderEvent(q);
    assert.equal(added.op, 'add');
    const folder = added.channel_folder;
    assert.deepEqual({ ...folder, date_created: 0 }, {
      id: frontend,
      name: 'Frontend',
      description: 'Channels for **frontend**',
      rendered_description: '<p>Channels for <strong>frontend</strong></p>',
      date_created: 0,
      creator_id: admin.user.id,
      is_archived: false,
      order: frontend,
    });
    assert.ok(folder.date_created >= before);
    const backend = ok(await admin.client.post('/channel_folders/create', { name: 'Backend', description: '' })).channel_folder_id;
    const docs = ok(await s.cast.owner.client.post('/channel_folders/create', { name: 'Docs', description: 'Manuals' })).channel_folder_id;
    await nextFolderEvent(q);
    await nextFolderEvent(q);

    const list = await guest.client.get('/channel_folders');
    assertConforms(list, 'GET', '/channel_folders');
    assert.deepEqual(ok(list).channel_folders.map((f: Dict) => f.name), ['Frontend', 'Backend', 'Docs']);

    // Update: name and description changes come as separate events.
    const upd = await admin.client.patch(`/channel_folders/${frontend}`, { name: 'Web', description: 'The *web* app' });
    assertConforms(upd, 'PATCH', '/channel_folders/{channel_folder_id}');
    ok(upd);
    const renamed = await nextFolderEvent(q);
    assert.deepEqual({ op: renamed.op, id: renamed.channel_folder_id, data: renamed.data }, { op: 'update', id: frontend, data: { name: 'Web' } });
    const described = await nextFolderEvent(q);
    assert.deepEqual(described.data, { description: 'The *web* app', rendered_description: '<p>The <em>web</em> app</p>' });
    // Unchanged values send nothing.
    const same = await captureEvents(s, () => admin.client.patch(`/channel_folders/${frontend}`, { name: 'Web', is_archived: false }));
    ok(same.result);
    assert.equal(same.events.length, 0);

    // Archive, reorder (archived folders included), unarchive.
    ok(await admin.client.patch(`/channel_folders/${docs}`, { is_archived: true }));
    assert.deepEqual((await nextFolderEvent(q)).data, { is_archived: true });
    assert.deepEqual(ok(await hamlet.client.get('/channel_folders')).channel_folders.map((f: Dict) => f.id), [frontend, backend]);
    assert.deepEqual(ok(await hamlet.client.get('/channel_folders', { include_archived: true })).channel_folders.map((f: Dict) => f.id), [frontend, backend, docs]);
    const reorder = await admin.client.patch('/channel_folders', { order: JSON.stringify([docs, backend, frontend]) });
    assertConforms(reorder, 'PATCH', '/channel_folders');
    ok(reorder);
    const reordered = await nextFolderEvent(q);
    assert.deepEqual(reordered.order, [docs, backend, frontend]);
    const ordered = ok(await hamlet.client.get('/channel_folders', { include_archived: true })).channel_folders;
    assert.deepEqual(ordered.map((f: Dict) => [f.id, f.order]), [[docs, 0], [backend, 1], [frontend, 2]]);
    ok(await admin.client.patch(`/channel_folders/${docs}`, { is_archived: false }));
    assert.deepEqual((await nextFolderEvent(q)).data, { is_archived: false });

  });

  test('a stale register state updated by channel_folder events equals a fresh one', async () => {
    const s = server();
    const { admin, othello } = s.cast;
    const stale = await registeredFolders(othello.client);
    const q = await registerQueue(othello.client, { event_types: ['channel_folder'] });
    const a = ok(await admin.client.post('/channel_folders/create', { name: 'Stale A', description: 'a' })).channel_folder_id;
    const b = ok(await admin.client.post('/channel_folders/create', { name: 'Stale B', description: 'b' })).channel_folder_id;
    ok(await admin.client.patch(`/channel_folders/${a}`, { name: 'Stale A2', description: '**a2**', is_archived: true }));
    const all = ok(await admin.client.get('/channel_folders', { include_archived: true })).channel_folders.map((f: Dict) => f.id);
    ok(await admin.client.patch('/channel_folders', { order: JSON.stringify([b, ...all.filter((id: number) => id !== b)]) }));
    const events: ZEvent[] = [];
    for (let i = 0; i < 6; i++) events.push(await nextFolderEvent(q));
    let state = stale;
    for (const e of events) state = applyEvent(state, e);
    assert.deepEqual(state, await registeredFolders(othello.client));
  });

  test('folder endpoints refuse non-administrators and bad input as Zulip does', async () => {
    const s = server();
    const { admin, moderator, hamlet, guest } = s.cast;
    for (const c of [moderator.client, hamlet.client, guest.client]) {
      const res = await c.post('/channel_folders/create', { name: 'Nope', description: '' });
      assertConforms(res, 'POST', '/channel_folders/create');
      err(res, 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
      err(await c.patch('/channel_folders', { order: '[]' }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
      err(await c.patch('/channel_folders/1', { name: 'x' }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    }
    const create = (params: Dict) => admin.client.post('/channel_folders/create', params);
    err(await create({ name: '  ', description: '' }), 400, 'BAD_REQUEST', "Channel folder name can't be empty.");
    err(await create({ name: 'a\u0000b', description: '' }), 400, 'BAD_REQUEST', 'Invalid character in channel folder name, at position 2.');
    err(await create({ name: 'x'.repeat(61), description: '' }), 400, 'BAD_REQUEST', 'name is too long (limit: 60 characters)');
    err(await create({ name: 'Long', description: 'd'.repeat(1025) }), 400, 'BAD_REQUEST', 'description is too long (limit: 1024 characters)');
    const missing = err(await create({ name: 'No description' }), 400, 'REQUEST_VARIABLE_MISSING');
    assert.equal(missing.var_name, 'description');
    const id = ok(await create({ name: 'Design', description: '' })).channel_folder_id;
    err(await create({ name: 'DESIGN', description: '' }), 400, 'BAD_REQUEST', "Channel folder 'DESIGN' already exists");
    const other = ok(await create({ name: 'Ops', description: '' })).channel_folder_id;
    err(await admin.client.patch(`/channel_folders/${other}`, { name: 'design' }), 400, 'BAD_REQUEST', "Channel folder 'design' already exists");
    err(await admin.client.patch(`/channel_folders/${other}`, { name: '' }), 400, 'BAD_REQUEST', "Channel folder name can't be empty.");
    const invalid = await admin.client.patch('/channel_folders/999999', { name: 'x' });
    assertConforms(invalid, 'PATCH', '/channel_folders/{channel_folder_id}');
    err(invalid, 400, 'BAD_REQUEST', 'Invalid channel folder ID');

    const all = ok(await admin.client.get('/channel_folders', { include_archived: true })).channel_folders.map((f: Dict) => f.id);
    for (const order of [all.slice(1), [...all, 999999], [...all, all[0]], [...all.slice(1), 999999]]) {
      const res = await admin.client.patch('/channel_folders', { order: JSON.stringify(order) });
      assertConforms(res, 'PATCH', '/channel_folders');
      err(res, 400, 'BAD_REQUEST', 'Invalid order mapping.');
    }
    err(await admin.client.patch('/channel_folders', {}), 400, 'REQUEST_VARIABLE_MISSING');
    assert.ok(id > 0);
  });

  test("channels carry folder_id: set at creation, changed and cleared by PATCH /streams/{id}, and a folder in use cannot be archived", async () => {
    const s = server();
    const { admin, hamlet, othello } = s.cast;
    const folder = ok(await admin.client.post('/channel_folders/create', { name: 'Team', description: '' })).channel_folder_id;
    const second = ok(await admin.client.post('/channel_folders/create', { name: 'Team 2', description: '' })).channel_folder_id;
    err(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'foldered bad' }], folder_id: 999999 }), 400, 'BAD_REQUEST', 'Invalid channel folder ID');
    ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'foldered' }], principals: [hamlet.user.id, othello.user.id], folder_id: folder }));
    const streamId = ok(await hamlet.client.get('/get_stream_id', { stream: 'foldered' })).stream_id;
    const channel = await hamlet.client.get(`/streams/${streamId}`);
    assertConforms(channel, 'GET', '/streams/{stream_id}');
    assert.equal(ok(channel).stream.folder_id, folder);
    const sub = ok(await othello.client.get('/users/me/subscriptions')).subscriptions.find((x: Dict) => x.stream_id === streamId);
    assert.equal(sub.folder_id, folder);

    err(await admin.client.patch(`/channel_folders/${folder}`, { is_archived: true }), 400, 'BAD_REQUEST', 'You need to remove all the channels from this folder to archive it.');

    const q = await registerQueue(othello.client, { event_types: ['stream', 'subscription'] });
    // The channel's creator administers it.
    ok(await hamlet.client.patch(`/streams/${streamId}`, { folder_id: second }));
    const moved = await q.next((e) => e.type === 'stream' && e.op === 'update');
    const { id: _id, ...event } = moved;
    assertEventConforms(event);
    assert.deepEqual({ property: moved.property, value: moved.value, stream_id: moved.stream_id }, { property: 'folder_id', value: second, stream_id: streamId });
    err(await othello.client.patch(`/streams/${streamId}`, { folder_id: folder }), 400, 'CANNOT_ADMINISTER_CHANNEL');
    err(await hamlet.client.patch(`/streams/${streamId}`, { folder_id: 999999 }), 400, 'BAD_REQUEST', 'Invalid channel folder ID');
    ok(await hamlet.client.patch(`/streams/${streamId}`, { folder_id: JSON.stringify(null) }));
    const cleared = await q.next((e) => e.type === 'stream' && e.op === 'update');
    assert.equal(cleared.value, null);
    assert.equal(ok(await hamlet.client.get(`/streams/${streamId}`)).stream.folder_id, null);
    ok(await admin.client.patch(`/channel_folders/${second}`, { is_archived: true }));
  });
});
