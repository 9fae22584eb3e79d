import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { updateUserRow } from '../../src/db/repos/users.js';
import { now } from '../../src/db/index.js';
import { fetchOrgState } from '../../src/events/state/org.js';
import type { User } from '../../src/db/tables.js';

interface Channels {
  denmark: number;
  secret: number;
  archived: number;
}

/** A public channel everyone but the guest may post to, a private one only Othello is in, an archived one. */
async function makeChannels(s: TestServer): Promise<Channels> {
  const db = s.app.services.db.kysely;
  const mk = async (name: string, inviteOnly: number, deactivated = 0) =>
    (
      await db
        .insertInto('streams')
        .values({ realm_id: s.realm.id, name, name_lc: name.toLowerCase(), invite_only: inviteOnly, deactivated, date_created: now() })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id;
  const channels = { denmark: await mk('Denmark', 0), secret: await mk('Secret', 1), archived: await mk('Old', 0, 1) };
  await db.insertInto('subscriptions').values({ user_id: s.cast.othello.user.id, stream_id: channels.secret, realm_id: s.realm.id }).execute();
  return channels;
}

const draft = (over: Record<string, unknown> = {}) => ({ type: '', to: [], topic: '', content: 'Some text', ...over });

async function setDraftSync(s: TestServer, user: User, on: boolean): Promise<void> {
  await updateUserRow(s.app.services.db.kysely, user.id, { settings: JSON.stringify({ enable_drafts_synchronization: on }) });
}

forEachDatabase('drafts', (server) => {
  let ch: Channels;
  before(async () => {
    ch = await makeChannels(server());
  });

  test('POST /drafts creates drafts of every type, returns their ids in order and sends one add event', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const start = now();
    const drafts = [
      draft({ type: 'stream', to: [ch.denmark], topic: 'sync drafts', content: "  Let's add backend support.  ", timestamp: 1595479019 }),
      draft({ type: 'private', to: [othello.user.id], topic: 'ignored for DMs', content: 'Hello', timestamp: 1595479020 }),
      draft({ type: 'private', to: [othello.user.id, admin.user.id, hamlet.user.id], content: 'Group', timestamp: 1595479021.7 }),
      draft({ type: 'private', to: [hamlet.user.id], content: 'Note to self', timestamp: 1595479022 }),
      draft({ type: 'private', to: [], topic: 'x', content: 'Nobody yet', timestamp: 1595479023 }),
      draft({ type: '', to: [othello.user.id], topic: 'x', content: 'Unaddressed' }),
    ];
    const { result, events } = await captureEvents(s, () => hamlet.client.post('/drafts', { drafts }));
    const body = ok(result);
    assertConforms(result, 'POST', '/drafts');
    assert.equal(body.ids.length, 6);
    assert.deepEqual([...body.ids].sort((a: number, b: number) => a - b), body.ids);
    const expected = [
      { type: 'stream', to: [ch.denmark], topic: 'sync drafts', content: "Let's add backend support.", timestamp: 1595479019 },
      { type: 'private', to: [othello.user.id], topic: '', content: 'Hello', timestamp: 1595479020 },
      { type: 'private', to: [admin.user.id, othello.user.id].sort((a, b) => a - b), topic: '', content: 'Group', timestamp: 1595479021 },
      { type: 'private', to: [hamlet.user.id], topic: '', content: 'Note to self', timestamp: 1595479022 },
      { type: '', to: [], topic: '', content: 'Nobody yet', timestamp: 1595479023 },
    ].map((d, i) => ({ id: body.ids[i], ...d }));
    assert.equal(events.length, 1);
    assert.deepEqual(recipientIds(events[0]!), [hamlet.user.id]);
    const added = events[0]!.event.drafts as Record<string, unknown>[];
    assert.equal(events[0]!.event.op, 'add');
    assert.deepEqual(added.slice(0, 5), expected);
    // The server fills in a missing timestamp.
    assert.deepEqual({ ...added[5], timestamp: 0 }, { id: body.ids[5], type: '', to: [], topic: '', content: 'Unaddressed', timestamp: 0 });
    assert.ok((added[5]!.timestamp as number) >= start);
    assertEventConforms(events[0]!.event);

    const list = await hamlet.client.get('/drafts');
    assertConforms(list, 'GET', '/drafts');
    const got = ok(list);
    assert.equal(got.count, 6);
    // Zulip lists drafts by last edit time, oldest first.
    assert.deepEqual(got.drafts, added);
    assert.deepEqual(ok(await othello.client.get('/drafts')), { result: 'success', msg: '', count: 0, drafts: [] });
  });

  test('channel drafts need exactly one accessible channel; direct-message drafts need existing users', async () => {
    const s = server();
    const c = s.cast.hamlet.client;
    const post = (d: Record<string, unknown>) => c.post('/drafts', { drafts: [draft(d)] });
    const one = 'Must specify exactly 1 channel ID for channel messages';
    const res = await post({ type: 'stream', to: [], topic: 't' });
    err(res, 400, 'BAD_REQUEST', one);
    assertConforms(res, 'POST', '/drafts');
    err(await post({ type: 'stream', to: [ch.denmark, ch.denmark], topic: 't' }), 400, 'BAD_REQUEST', one);
    err(await post({ type: 'stream', to: [ch.secret], topic: 't' }), 400, 'BAD_REQUEST', 'Invalid channel ID');
    err(await post({ type: 'stream', to: [99999999], topic: 't' }), 400, 'BAD_REQUEST', 'Invalid channel ID');
    err(await post({ type: 'stream', to: [ch.archived], topic: 't' }), 400, 'BAD_REQUEST', 'Invalid channel ID');
    // The subscriber of the private channel may draft to it; a guest may not draft to a public channel it is not in.
    ok(await s.cast.othello.client.post('/drafts', { drafts: [draft({ type: 'stream', to: [ch.secret], topic: 't' })] }));
    err(await s.cast.guest.client.post('/drafts', { drafts: [draft({ type: 'stream', to: [ch.denmark], topic: 't' })] }), 400, 'BAD_REQUEST', 'Invalid channel ID');
    err(await post({ type: 'private', to: [s.cast.othello.user.id, 99999999] }), 400, 'BAD_REQUEST', 'Invalid user ID 99999999');
    // Nothing was stored by the refused requests.
    assert.equal(ok(await c.get('/drafts')).drafts.some((d: { topic: string }) => d.topic === 't'), false);
  });

  test('drafts refuse null bytes, empty content, negative timestamps and malformed objects', async () => {
    const s = server();
    const c = s.cast.hamlet.client;
    const post = (d: unknown) => c.post('/drafts', { drafts: [d] });
    err(await post(draft({ content: 'Some \u0000 content' })), 400, 'BAD_REQUEST', 'Message must not contain null bytes');
    err(await post(draft({ type: 'stream', to: [ch.denmark], topic: 'thinking about \u0000' })), 400, 'BAD_REQUEST', 'Topic must not contain null bytes');
    err(await post(draft({ timestamp: -10.1 })), 400, 'BAD_REQUEST', 'Timestamp must not be negative.');
    err(await post(draft({ content: '   ' })), 400, 'BAD_REQUEST', 'drafts[0]["content"] cannot be blank');
    err(await post(draft({ type: 'direct' })), 400, 'BAD_REQUEST', 'Invalid drafts[0]["type"]');
    err(await post(draft({ to: 5 })), 400, 'BAD_REQUEST', 'drafts[0]["to"] is not a list');
    err(await post(draft({ to: [1, 'two'] })), 400, 'BAD_REQUEST', 'drafts[0]["to"][1] is not an integer');
    err(await post(draft({ topic: 7 })), 400, 'BAD_REQUEST', 'drafts[0]["topic"] is not a string');
    err(await post(draft({ timestamp: 'now' })), 400, 'BAD_REQUEST', 'drafts[0]["timestamp"] is not a float');
    err(await post(draft({ color: 'red' })), 400, 'BAD_REQUEST', 'Argument "color" at drafts[0]["color"] is unexpected');
    err(await post({ type: '', to: [], content: 'x' }), 400, 'BAD_REQUEST', 'topic key is missing from drafts[0]');
    err(await post('a draft'), 400, 'BAD_REQUEST', 'drafts[0] is not a dict');
    err(await c.post('/drafts', { drafts: '{"type": ""}' }), 400, 'BAD_REQUEST', 'drafts is not a list');
    err(await c.post('/drafts', { drafts: '[{' }), 400, 'BAD_REQUEST', 'drafts is not valid JSON');
    const missing = err(await c.post('/drafts', {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'drafts' argument");
    assert.equal(missing.var_name, 'drafts');
    // Long topics are truncated as in message sending; an empty list creates nothing.
    const long = ok(await post(draft({ type: 'stream', to: [ch.denmark], topic: 'x'.repeat(70) })));
    const stored = ok(await c.get('/drafts')).drafts.find((d: { id: number }) => d.id === long.ids[0]);
    assert.equal(stored.topic, `${'x'.repeat(57)}...`);
    assert.deepEqual(ok(await c.post('/drafts', { drafts: [] })).ids, []);
  });

  test('PATCH /drafts/{id} replaces the draft and sends an update event to the owner', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const [id] = ok(await hamlet.client.post('/drafts', { drafts: [draft({ type: 'stream', to: [ch.denmark], topic: 'drafts', content: 'The API should be good', timestamp: 1595505700 })] })).ids;
    const replacement = { type: 'private', to: [s.cast.othello.user.id], topic: 'designing drafts', content: 'Structured yet simple.', timestamp: 1595505800 };
    const { result, events } = await captureEvents(s, () => hamlet.client.patch(`/drafts/${id}`, { draft: replacement }));
    ok(result);
    assertConforms(result, 'PATCH', '/drafts/{draft_id}');
    const expected = { id, ...replacement, topic: '' };
    assert.deepEqual(events.map((e) => e.event), [{ type: 'drafts', op: 'update', draft: expected }]);
    assert.deepEqual(recipientIds(events[0]!), [hamlet.user.id]);
    assertEventConforms(events[0]!.event);
    assert.deepEqual(ok(await hamlet.client.get('/drafts')).drafts.find((d: { id: number }) => d.id === id), expected);
    // Without a timestamp the server stamps the edit.
    ok(await hamlet.client.patch(`/drafts/${id}`, { draft: draft({ content: 'Later' }) }));
    const edited = ok(await hamlet.client.get('/drafts')).drafts.find((d: { id: number }) => d.id === id);
    assert.ok(edited.timestamp >= now() - 5);
    err(await hamlet.client.patch(`/drafts/${id}`, { draft: draft({ type: 'stream', to: [ch.secret], topic: 'x' }) }), 400, 'BAD_REQUEST', 'Invalid channel ID');
    err(await hamlet.client.patch(`/drafts/${id}`, { draft: draft({ content: '' }) }), 400, 'BAD_REQUEST', 'draft["content"] cannot be blank');
    err(await hamlet.client.patch(`/drafts/${id}`, {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'draft' argument");
  });

  test('a missing or foreign draft answers 404 BAD_REQUEST "Draft does not exist"', async () => {
    const s = server();
    const [id] = ok(await s.cast.hamlet.client.post('/drafts', { drafts: [draft({ content: 'mine' })] })).ids;
    const patch = await s.cast.othello.client.patch(`/drafts/${id}`, { draft: draft({ content: '???' }) });
    err(patch, 404, 'BAD_REQUEST', 'Draft does not exist');
    assertConforms(patch, 'PATCH', '/drafts/{draft_id}');
    const del = await s.cast.othello.client.delete(`/drafts/${id}`);
    err(del, 404, 'BAD_REQUEST', 'Draft does not exist');
    assertConforms(del, 'DELETE', '/drafts/{draft_id}');
    err(await s.cast.hamlet.client.patch('/drafts/999999999', { draft: draft() }), 404, 'BAD_REQUEST', 'Draft does not exist');
    assert.equal(ok(await s.cast.hamlet.client.get('/drafts')).drafts.find((d: { id: number }) => d.id === id).content, 'mine');
  });

  test('DELETE /drafts/{id} removes the draft with a remove event', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const [id] = ok(await hamlet.client.post('/drafts', { drafts: [draft({ content: 'bye' })] })).ids;
    const { result, events } = await captureEvents(s, () => hamlet.client.delete(`/drafts/${id}`));
    ok(result);
    assertConforms(result, 'DELETE', '/drafts/{draft_id}');
    assert.deepEqual(events.map((e) => e.event), [{ type: 'drafts', op: 'remove', draft_id: id }]);
    assert.deepEqual(recipientIds(events[0]!), [hamlet.user.id]);
    assertEventConforms(events[0]!.event);
    err(await hamlet.client.delete(`/drafts/${id}`), 404, 'BAD_REQUEST', 'Draft does not exist');
  });

  test('with draft synchronization off every draft endpoint refuses and register lists no drafts', async () => {
    const s = server();
    const { admin } = s.cast;
    const [kept] = ok(await admin.client.post('/drafts', { drafts: [draft({ content: 'kept' })] })).ids;
    await setDraftSync(s, admin.user, false);
    try {
      const msg = 'User has disabled synchronizing drafts.';
      err(await admin.client.get('/drafts'), 400, 'BAD_REQUEST', msg);
      err(await admin.client.post('/drafts', { drafts: '[]' }), 400, 'BAD_REQUEST', msg);
      err(await admin.client.post('/drafts', {}), 400, 'BAD_REQUEST', msg);
      err(await admin.client.patch(`/drafts/${kept}`, { draft: {} }), 400, 'BAD_REQUEST', msg);
      err(await admin.client.delete(`/drafts/${kept}`), 400, 'BAD_REQUEST', msg);
      const services = s.app.services;
      const userRow = await services.db.kysely.selectFrom('users').selectAll().where('id', '=', admin.user.id).executeTakeFirstOrThrow();
      const ctx = { services, realm: s.realm, user: userRow, options: {} as never, want: (t: string) => t === 'drafts' };
      assert.deepEqual(await fetchOrgState(ctx), { drafts: [] });
    } finally {
      await setDraftSync(s, admin.user, true);
    }
    // Setting it back on restores access to the stored draft.
    assert.deepEqual(ok(await admin.client.get('/drafts')).drafts.map((d: { id: number }) => d.id), [kept]);
  });

  test('turning draft synchronization off through PATCH /settings deletes the stored drafts without events', async () => {
    const s = server();
    const { moderator } = s.cast;
    ok(await moderator.client.post('/drafts', { drafts: [draft({ content: 'one' }), draft({ content: 'two' })] }));
    const { result, events } = await captureEvents(s, () => moderator.client.patch('/settings', { enable_drafts_synchronization: false }));
    ok(result);
    assert.equal(events.some((e) => e.event.type === 'drafts'), false);
    ok(await moderator.client.patch('/settings', { enable_drafts_synchronization: true }));
    assert.deepEqual(ok(await moderator.client.get('/drafts')), { result: 'success', msg: '', count: 0, drafts: [] });
  });
});
