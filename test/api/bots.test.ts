import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { ApiClient } from '../helpers/client.js';
import type { TestServer } from '../helpers/server.js';
import { PNG_1X1, postFiles } from '../helpers/uploads.js';
import { registerQueue, type ZEvent } from '../helpers/events.js';

type Dict = Record<string, any>;

async function groupIds(s: TestServer): Promise<Record<string, number>> {
  const groups = ok(await s.cast.owner.client.get('/user_groups')).user_groups as Dict[];
  return Object.fromEntries(groups.map((g) => [g.name, g.id]));
}

function eventsOf(events: { event: Dict }[], type: string): Dict[] {
  return events.map((e) => e.event).filter((e) => e.type === type);
}

async function realmBots(client: ApiClient): Promise<Dict[]> {
  const res = await client.post('/register', { fetch_event_types: ['realm_bot', 'realm_embedded_bots'] });
  assertConforms(res, 'POST', '/register');
  assert.deepEqual(ok(res).realm_embedded_bots, []);
  return ok(res).realm_bots;
}

forEachDatabase('bots', (server) => {
  test('a member creates a generic bot: the reply, realm_user and realm_bot add, GET /bots, register realm_bots', async () => {
    const s = server();
    const { hamlet, othello, admin, owner } = s.cast;
    const { result, events } = await captureEvents(s, () => hamlet.client.post('/bots', { full_name: 'Helper Bot', short_name: 'helper' }));
    const body = ok(result);
    assert.deepEqual(Object.keys(body).sort(), ['api_key', 'avatar_url', 'default_all_public_streams', 'default_events_register_stream', 'default_sending_stream', 'msg', 'result', 'user_id']);
    assert.equal(body.default_sending_stream, null);
    assert.equal(body.default_all_public_streams, false);
    assert.equal(typeof body.api_key, 'string');

    const userAdd = eventsOf(events, 'realm_user').find((e) => e.op === 'add')!;
    assert.equal(userAdd.person.user_id, body.user_id);
    assert.equal(userAdd.person.email, 'helper-bot@localhost');
    assert.equal(userAdd.person.bot_type, 1);
    assert.equal(userAdd.person.bot_owner_id, hamlet.user.id);
    const botAdd = events.find((e) => e.event.type === 'realm_bot')!;
    assert.deepEqual(botAdd.event, {
      type: 'realm_bot',
      op: 'add',
      bot: { user_id: body.user_id, default_sending_stream: null, default_events_register_stream: null, default_all_public_streams: false, services: [] },
    });
    assertEventConforms(botAdd.event as Dict);
    // Administrators and the owner only.
    assert.deepEqual(recipientIds(botAdd), [owner.user.id, admin.user.id, hamlet.user.id].sort((a, b) => a - b));
    // The realm_user add comes first, as in Zulip.
    assert.ok(events.findIndex((e) => e.event.type === 'realm_user' && (e.event as Dict).op === 'add') < events.indexOf(botAdd));

    const list = ok(await hamlet.client.get('/bots')).bots as Dict[];
    const mine = list.find((b) => b.username === 'helper-bot@localhost')!;
    assert.deepEqual(
      { ...mine, avatar_url: typeof mine.avatar_url },
      {
        username: 'helper-bot@localhost',
        full_name: 'Helper Bot',
        api_key: body.api_key,
        avatar_url: 'string',
        default_sending_stream: null,
        default_events_register_stream: null,
        default_all_public_streams: false,
      },
    );
    assert.equal(ok(await othello.client.get('/bots')).bots.length, 0);

    // The bot works with its key.
    const botClient = new ApiClient(s.url, 'helper-bot@localhost', body.api_key);
    assert.equal(ok(await botClient.get('/users/me')).user_id, body.user_id);

    const hamletBots = await realmBots(hamlet.client);
    assert.ok(hamletBots.some((b) => b.user_id === body.user_id));
    assert.ok(hamletBots.every((b) => b.user_id === body.user_id || b.user_id === s.cast.bot.user.id));
    assert.deepEqual(await realmBots(othello.client), []);
    const adminBots = await realmBots(admin.client);
    assert.ok(adminBots.some((b) => b.user_id === body.user_id) && adminBots.some((b) => b.user_id === s.cast.bot.user.id));
  });

  test('POST /bots refuses bad names, taken names, embedded and unknown types, bad URLs and interfaces, guests and bots', async () => {
    const s = server();
    const { hamlet, guest, bot } = s.cast;
    ok(await hamlet.client.post('/bots', { full_name: 'Taken Bot', short_name: 'taken' }));
    err(await hamlet.client.post('/bots', { full_name: 'X Bot', short_name: '  ' }), 400, 'BAD_REQUEST', 'Bad name or username');
    err(await hamlet.client.post('/bots', { full_name: 'X Bot', short_name: 'a b' }), 400, 'BAD_REQUEST', 'Bad name or username');
    err(await hamlet.client.post('/bots', { full_name: '', short_name: 'x' }), 400, 'BAD_REQUEST', 'Name must not be empty!');
    err(await hamlet.client.post('/bots', { full_name: 'Bad*Name', short_name: 'x' }), 400, 'BAD_REQUEST', 'Invalid characters in name!');
    err(await hamlet.client.post('/bots', { full_name: 'Other Bot', short_name: 'taken' }), 400, 'BAD_REQUEST', 'Username already in use');
    err(await hamlet.client.post('/bots', { full_name: 'Taken Bot', short_name: 'other' }), 400, 'BAD_REQUEST', 'Name is already in use!');
    err(await hamlet.client.post('/bots', { full_name: 'King Hamlet', short_name: 'other' }), 400, 'BAD_REQUEST', 'Name is already in use!');
    err(await hamlet.client.post('/bots', { full_name: 'Emb Bot', short_name: 'emb', bot_type: 4 }), 400, 'BAD_REQUEST', 'Embedded bots are not enabled.');
    err(await hamlet.client.post('/bots', { full_name: 'Odd Bot', short_name: 'odd', bot_type: 7 }), 400, 'BAD_REQUEST', 'Invalid bot type');
    err(await hamlet.client.post('/bots', { full_name: 'Odd Bot', short_name: 'odd', bot_type: 3, interface_type: 9, payload_url: JSON.stringify('http://example.com/') }), 400, 'BAD_REQUEST', 'Invalid interface type');
    err(await hamlet.client.post('/bots', { full_name: 'Odd Bot', short_name: 'odd', bot_type: 3, payload_url: JSON.stringify('not a url') }), 400, 'BAD_REQUEST', 'payload_url is not a URL');
    err(await hamlet.client.post('/bots', { full_name: 'Odd Bot', short_name: 'odd', bot_type: 3, payload_url: 'http://example.com/' }), 400, 'BAD_REQUEST', 'Argument "payload_url" is not valid JSON.');
    err(await hamlet.client.post('/bots', { full_name: 'Odd Bot', short_name: 'odd', default_sending_stream: 'no such channel' }), 400, 'BAD_REQUEST', "Invalid channel name 'no such channel'");
    err(await hamlet.client.post('/bots', { short_name: 'odd' }), 400, 'REQUEST_VARIABLE_MISSING');
    err(await guest.client.post('/bots', { full_name: 'G Bot', short_name: 'g' }), 400, 'BAD_REQUEST', 'Not allowed for guest users');
    err(await bot.client.post('/bots', { full_name: 'B Bot', short_name: 'b' }), 400, 'BAD_REQUEST', 'This endpoint does not accept bot requests.');
    err(await guest.client.get('/bots'), 400, 'BAD_REQUEST', 'Not allowed for guest users');
  });

  test("the organization's bot-creation policy: can_create_bots_group, and can_create_write_only_bots_group for incoming webhooks", async () => {
    const s = server();
    const { owner, othello, admin } = s.cast;
    const g = await groupIds(s);
    try {
      ok(await owner.client.patch('/realm', { can_create_bots_group: { new: g['role:administrators'] } }));
      err(await othello.client.post('/bots', { full_name: 'Gen Bot', short_name: 'gen' }), 400, 'BAD_REQUEST', 'Insufficient permission');
      err(await othello.client.post('/bots', { full_name: 'Out Bot', short_name: 'out', bot_type: 3, payload_url: JSON.stringify('http://example.com/') }), 400, 'BAD_REQUEST', 'Insufficient permission');
      ok(await othello.client.post('/bots', { full_name: 'Incoming Bot', short_name: 'incoming', bot_type: 2 }));
      ok(await admin.client.post('/bots', { full_name: 'Admin Gen Bot', short_name: 'admingen' }));
      ok(await owner.client.patch('/realm', { can_create_write_only_bots_group: { new: g['role:administrators'] } }));
      err(await othello.client.post('/bots', { full_name: 'Incoming Two', short_name: 'incoming2', bot_type: 2 }), 400, 'BAD_REQUEST', 'Insufficient permission');
    } finally {
      ok(await owner.client.patch('/realm', { can_create_bots_group: { new: g['role:members'] }, can_create_write_only_bots_group: { new: g['role:members'] } }));
    }
  });

  test('PATCH /bots/{id}: name, owner, default channels and the outgoing-webhook service, with their events and refusals', async () => {
    const s = server();
    const { hamlet, othello, admin, owner, guest } = s.cast;
    const created = ok(
      await hamlet.client.post('/bots', { full_name: 'Hook Bot', short_name: 'hook', bot_type: 3, payload_url: JSON.stringify('http://127.0.0.1:9/hook'), interface_type: 1 }),
    );
    const id = created.user_id;
    const state = (await realmBots(hamlet.client)).find((b) => b.user_id === id)!;
    assert.equal(state.services.length, 1);
    assert.deepEqual({ ...state.services[0], token: typeof state.services[0].token }, { base_url: 'http://127.0.0.1:9/hook', interface: 1, token: 'string' });

    const rename = await captureEvents(s, () => hamlet.client.patch(`/bots/${id}`, { full_name: 'Hook Bot Renamed' }));
    const patched = ok(rename.result);
    assert.equal(patched.full_name, 'Hook Bot Renamed');
    assert.equal(patched.bot_owner, hamlet.user.email);
    assert.deepEqual(rename.events.map((e) => e.event), [{ type: 'realm_user', op: 'update', person: { user_id: id, full_name: 'Hook Bot Renamed' } }]);

    const service = await captureEvents(s, () => hamlet.client.patch(`/bots/${id}`, { service_payload_url: JSON.stringify('http://example.com/new'), service_interface: 2 }));
    ok(service.result);
    const upd = service.events.map((e) => e.event as Dict).find((e) => e.type === 'realm_bot')!;
    assert.deepEqual(upd, { type: 'realm_bot', op: 'update', bot: { user_id: id, services: [{ base_url: 'http://example.com/new', interface: 2, token: state.services[0].token }] } });
    assertEventConforms(upd);

    ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'bot defaults' }] }));
    const channel = await captureEvents(s, () => hamlet.client.patch(`/bots/${id}`, { default_sending_stream: 'bot defaults' }));
    assert.equal(ok(channel.result).default_sending_stream, 'bot defaults');
    const channelEvent = channel.events.map((e) => e.event as Dict);
    assert.deepEqual(channelEvent, [{ type: 'realm_bot', op: 'update', bot: { user_id: id, default_sending_stream: 'bot defaults' } }]);
    assertEventConforms(channelEvent[0]!);

    // Owner change: the old owner (not an administrator) loses the bot, the new one gains it.
    const moved = await captureEvents(s, () => hamlet.client.patch(`/bots/${id}`, { bot_owner_id: othello.user.id }));
    assert.equal(ok(moved.result).bot_owner, othello.user.email);
    const evs: Dict[] = moved.events.map((e) => ({ ...(e.event as Dict), to: recipientIds(e) }));
    assert.deepEqual(evs.find((e) => e.op === 'delete'), { type: 'realm_bot', op: 'delete', bot: { user_id: id }, to: [hamlet.user.id] });
    const added = evs.find((e) => e.type === 'realm_bot' && e.op === 'add')!;
    assert.deepEqual(added.to, [othello.user.id]);
    assert.equal(added.bot.user_id, id);
    const person = evs.find((e) => e.type === 'realm_user')!;
    assert.deepEqual(person.person, { user_id: id, bot_owner_id: othello.user.id });
    assert.ok(person.to.includes(guest.user.id));
    assert.deepEqual((await realmBots(hamlet.client)).filter((b) => b.user_id === id), []);
    assert.equal((await realmBots(othello.client)).filter((b) => b.user_id === id).length, 1);

    err(await hamlet.client.patch(`/bots/${id}`, { full_name: 'Mine Again' }), 400, 'BAD_REQUEST', 'Insufficient permission');
    err(await othello.client.patch(`/bots/${hamlet.user.id}`, { full_name: 'X' }), 400, 'BAD_REQUEST', 'No such bot');
    err(await othello.client.patch('/bots/999999', { full_name: 'X' }), 400, 'BAD_REQUEST', 'No such bot');
    err(await othello.client.patch(`/bots/${id}`, { bot_owner_id: 999999 }), 400, 'BAD_REQUEST', 'Failed to change owner, no such user');
    err(await othello.client.patch(`/bots/${id}`, { bot_owner_id: s.cast.bot.user.id }), 400, 'BAD_REQUEST', "Failed to change owner, bots can't own other bots");
    err(await othello.client.patch(`/bots/${id}`, { role: 200 }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    err(await admin.client.patch(`/bots/${id}`, { role: 100 }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    err(await othello.client.patch(`/bots/${id}`, { service_payload_url: JSON.stringify('http://example.com/'), service_interface: 3 }), 400, 'BAD_REQUEST', 'Invalid interface type');
    ok(await owner.client.patch(`/bots/${id}`, { role: 300 }));
  });
});

forEachDatabase('bots: API keys and deactivation', (server) => {
  test('GET /bots/{id}/api_key and regenerate: the owner and administrators only; the old key stops working', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const created = ok(await hamlet.client.post('/bots', { full_name: 'Key Bot', short_name: 'key' }));
    const id = created.user_id;
    const got = await hamlet.client.get(`/bots/${id}/api_key`);
    assertConforms(got, 'GET', '/bots/{bot_id}/api_key');
    assert.equal(ok(got).api_key, created.api_key);
    assert.equal(ok(await admin.client.get(`/bots/${id}/api_key`)).api_key, created.api_key);
    err(await othello.client.get(`/bots/${id}/api_key`), 400, 'BAD_REQUEST', 'Insufficient permission');
    const missing = await othello.client.get('/bots/999999/api_key');
    assertConforms(missing, 'GET', '/bots/{bot_id}/api_key');
    err(missing, 400, 'BAD_REQUEST', 'No such bot');
    err(await hamlet.client.get(`/bots/${othello.user.id}/api_key`), 400, 'BAD_REQUEST', 'No such bot');

    const { result, events } = await captureEvents(s, () => hamlet.client.post(`/bots/${id}/api_key/regenerate`));
    assertConforms(result, 'POST', '/bots/{bot_id}/api_key/regenerate');
    const key = ok(result).api_key;
    assert.notEqual(key, created.api_key);
    // Since feature level 474 no realm_bot event carries the key.
    assert.deepEqual(events, []);
    err(await new ApiClient(s.url, 'key-bot@localhost', created.api_key).get('/users/me'), 401, 'INVALID_API_KEY');
    ok(await new ApiClient(s.url, 'key-bot@localhost', key).get('/users/me'));
    err(await othello.client.post(`/bots/${id}/api_key/regenerate`), 400, 'BAD_REQUEST', 'Insufficient permission');
  });

  test('DELETE /bots/{id} deactivates the bot: realm_user update, gone from GET /bots, its key refused', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const created = ok(await hamlet.client.post('/bots', { full_name: 'Gone Bot', short_name: 'gone' }));
    err(await othello.client.delete(`/bots/${created.user_id}`), 400, 'BAD_REQUEST', 'Insufficient permission');
    const { result, events } = await captureEvents(s, () => hamlet.client.delete(`/bots/${created.user_id}`));
    ok(result);
    assert.deepEqual(events.map((e) => e.event), [{ type: 'realm_user', op: 'update', person: { user_id: created.user_id, is_active: false } }]);
    assert.deepEqual(ok(await hamlet.client.get('/bots')).bots.filter((b: Dict) => b.username === 'gone-bot@localhost'), []);
    err(await new ApiClient(s.url, 'gone-bot@localhost', created.api_key).get('/users/me'), 401, 'USER_DEACTIVATED');
    // Its name is free again for a new bot.
    ok(await hamlet.client.post('/bots', { full_name: 'Gone Bot', short_name: 'gone2' }));
  });
});

forEachDatabase('bots: avatars', (server) => {
  test('POST /bots takes one optional image as the avatar; two files or a non-image are refused', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const png = { name: 'bot.png', data: PNG_1X1, type: 'image/png' };
    const { result, events } = await captureEvents(s, () => postFiles(hamlet.client, '/bots', [png], { full_name: 'Pic Bot', short_name: 'pic' }));
    const created = ok(result);
    assert.match(created.avatar_url, /\/user_avatars\//);
    const avatarUpdate = events.map((e) => e.event as Dict).find((e) => e.type === 'realm_user' && e.op === 'update')!;
    assert.equal(avatarUpdate.person.user_id, created.user_id);
    assert.equal(avatarUpdate.person.avatar_source, 'U');
    err(await postFiles(hamlet.client, '/bots', [png, png], { full_name: 'Two Bot', short_name: 'two' }), 400, 'BAD_REQUEST', 'You may only upload one file at a time');
    err(await postFiles(hamlet.client, '/bots', [{ name: 'x.txt', data: Buffer.from('text') }], { full_name: 'Txt Bot', short_name: 'txt' }), 400, 'BAD_IMAGE', 'Invalid image format');
    assert.equal(ok(await hamlet.client.get('/bots')).bots.filter((b: Dict) => b.full_name === 'Two Bot' || b.full_name === 'Txt Bot').length, 0);
  });
});

/** What a client does with realm_bot events (Zulip's apply_event); the result must equal a fresh register. */
function applyBotEvent(bots: Dict[], e: ZEvent): Dict[] {
  if (e.type !== 'realm_bot') return bots;
  if (e.op === 'add') return [...bots.filter((b) => b.user_id !== e.bot.user_id), e.bot].sort((a, b) => a.user_id - b.user_id);
  if (e.op === 'update') return bots.map((b) => (b.user_id === e.bot.user_id ? { ...b, ...e.bot } : b));
  if (e.op === 'delete') return bots.filter((b) => b.user_id !== e.bot.user_id);
  return assert.fail(`unexpected op ${e.op}`);
}

forEachDatabase('bots: register and events', (server) => {
  test("realm_bot events applied to a stale realm_bots give a fresh register's, for an owner and an administrator", async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const queues = await Promise.all([hamlet, othello, admin].map((m) => registerQueue(m.client, { event_types: ['realm_bot'] })));
    let stale = queues.map((q) => q.state.realm_bots as Dict[]);
    const id = ok(await hamlet.client.post('/bots', { full_name: 'State Bot', short_name: 'state', bot_type: 3, payload_url: JSON.stringify('http://example.com/a') })).user_id;
    ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'state channel' }] }));
    ok(await hamlet.client.patch(`/bots/${id}`, { default_sending_stream: 'state channel', default_all_public_streams: true }));
    ok(await hamlet.client.patch(`/bots/${id}`, { service_payload_url: JSON.stringify('http://example.com/b'), service_interface: 2 }));
    ok(await hamlet.client.patch(`/bots/${id}`, { bot_owner_id: othello.user.id }));
    ok(await othello.client.patch(`/bots/${id}`, { default_events_register_stream: '' }));
    // A new bot for each owner marks the end of the events to apply (administrators see both).
    const marker = async (owner: typeof hamlet, name: string): Promise<number> =>
      ok(await owner.client.post('/bots', { full_name: name, short_name: name.toLowerCase().replace(' ', '-'), bot_type: 1 })).user_id;
    const hamletMarker = await marker(hamlet, 'Hamlet marker');
    const othelloMarker = await marker(othello, 'Othello marker');
    const markers = [hamletMarker, othelloMarker, othelloMarker];
    for (let i = 0; i < queues.length; i++) {
      const events = await queues[i]!.through((e) => e.op === 'add' && e.bot.user_id === markers[i]);
      for (const e of events) {
        const { id: _id, ...event } = e;
        assertEventConforms(event);
        stale[i] = applyBotEvent(stale[i]!, e);
      }
    }
    const fresh = await Promise.all([hamlet, othello, admin].map((m) => realmBots(m.client)));
    stale = stale.map((list) => [...list].sort((a, b) => a.user_id - b.user_id));
    assert.deepEqual(stale, fresh.map((list) => [...list].sort((a, b) => a.user_id - b.user_id)));
    assert.deepEqual(fresh[1]!.find((b) => b.user_id === id)!.default_sending_stream, 'state channel');
  });
});
