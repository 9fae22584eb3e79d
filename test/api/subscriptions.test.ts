import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import type { ApiClient } from '../helpers/client.js';
import type { EventEnvelope } from '../../src/events/bus.js';

async function subscribe(client: ApiClient, names: string[], extra: Record<string, unknown> = {}): Promise<any> {
  return ok(await client.post('/users/me/subscriptions', { subscriptions: names.map((name) => ({ name })), ...extra }));
}

async function streamId(s: TestServer, name: string, client: ApiClient = s.cast.owner.client): Promise<number> {
  return ok(await client.get('/get_stream_id', { stream: name })).stream_id;
}

async function members(s: TestServer, id: number): Promise<number[]> {
  return ok(await s.cast.owner.client.get(`/streams/${id}/members`)).subscribers;
}

function eventsOf(events: EventEnvelope[], type: string, op?: string): EventEnvelope[] {
  return events.filter((e) => e.event.type === type && (op === undefined || e.event.op === op));
}

const sortNum = (ids: number[]): number[] => [...ids].sort((a, b) => a - b);

forEachDatabase('subscriptions', (server) => {
  test('POST /users/me/subscriptions creates a public channel, subscribes the caller and announces it', async () => {
    const s = server();
    const { hamlet, othello, guest, admin } = s.cast;
    const { result, events } = await captureEvents(s, () =>
      hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: '  Verona ', description: 'Italian\ncity' }] }),
    );
    const body = ok(result);
    assertConforms(result, 'POST', '/users/me/subscriptions');
    assert.deepEqual(body.subscribed, { [String(hamlet.user.id)]: ['Verona'] });
    assert.deepEqual(body.already_subscribed, {});
    assert.equal('unauthorized' in body, false);

    const id = await streamId(s, 'verona');
    const stream = ok(await hamlet.client.get(`/streams/${id}`)).stream;
    assert.equal(stream.name, 'Verona');
    assert.equal(stream.description, 'Italian city');
    assert.equal(stream.rendered_description, '<p>Italian city</p>');
    assert.equal(stream.invite_only, false);
    assert.equal(stream.history_public_to_subscribers, true);
    assert.equal(stream.creator_id, hamlet.user.id);
    assert.equal(stream.subscriber_count, 1);
    assert.equal(stream.stream_post_policy, 1);
    assert.deepEqual(stream.can_administer_channel_group, { direct_members: [hamlet.user.id], direct_subgroups: [] });

    const [create] = eventsOf(events, 'stream', 'create');
    assert.ok(create);
    assertEventConforms(create.event);
    // A public channel is announced to every active non-guest user; guests do not see it.
    const ids = recipientIds(create);
    assert.ok(ids.includes(othello.user.id) && ids.includes(admin.user.id) && ids.includes(hamlet.user.id));
    assert.ok(!ids.includes(guest.user.id));
    assert.equal((create.event.streams as any[])[0].subscriber_count, 0);

    const [add] = eventsOf(events, 'subscription', 'add');
    assertEventConforms(add!.event);
    assert.deepEqual(recipientIds(add!), [hamlet.user.id]);
    const sub = (add!.event.subscriptions as any[])[0];
    assert.equal(sub.name, 'Verona');
    assert.deepEqual(sub.subscribers, [hamlet.user.id]);
    assert.match(sub.color, /^#[0-9a-f]{6}$/);
    assert.equal(sub.in_home_view, true);

    const [peer] = eventsOf(events, 'subscription', 'peer_add');
    assertEventConforms(peer!.event);
    assert.deepEqual(peer!.event.stream_ids, [id]);
    assert.deepEqual(peer!.event.user_ids, [hamlet.user.id]);
    assert.ok(!recipientIds(peer!).includes(hamlet.user.id));
    assert.ok(recipientIds(peer!).includes(othello.user.id));
    assert.ok(!recipientIds(peer!).includes(guest.user.id));
  });

  test('subscribing again reports already_subscribed; principals by ID and email, keyed by user ID', async () => {
    const s = server();
    const { hamlet, othello, bot } = s.cast;
    await subscribe(hamlet.client, ['Denmark']);
    const again = await subscribe(hamlet.client, ['denmark']);
    assert.deepEqual(again.subscribed, {});
    assert.deepEqual(again.already_subscribed, { [String(hamlet.user.id)]: ['Denmark'] });

    const res = await hamlet.client.post('/users/me/subscriptions', {
      subscriptions: [{ name: 'Denmark' }],
      principals: [othello.user.email, hamlet.user.email],
    });
    const body = ok(res);
    assertConforms(res, 'POST', '/users/me/subscriptions');
    assert.deepEqual(body.subscribed, { [String(othello.user.id)]: ['Denmark'] });
    assert.deepEqual(body.already_subscribed, { [String(hamlet.user.id)]: ['Denmark'] });

    const byId = await subscribe(hamlet.client, ['Denmark'], { principals: [bot.user.id] });
    assert.deepEqual(byId.subscribed, { [String(bot.user.id)]: ['Denmark'] });
    assert.deepEqual(await members(s, await streamId(s, 'Denmark')), sortNum([hamlet.user.id, othello.user.id, bot.user.id]));
  });

  test('principals that do not exist or are deactivated answer 400 BAD_REQUEST', async () => {
    const s = server();
    const { hamlet } = s.cast;
    await subscribe(hamlet.client, ['Principals']);
    err(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Principals' }], principals: [999999] }), 400, 'BAD_REQUEST', 'No such user');
    err(
      await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Principals' }], principals: ['nobody@example.com'] }),
      400,
      'BAD_REQUEST',
      'No such user',
    );
    err(await hamlet.client.delete('/users/me/subscriptions', { subscriptions: ['Principals'], principals: [999999] }), 400, 'BAD_REQUEST', 'No such user');
    const gone = await s.app.services.db.kysely
      .insertInto('users')
      .values({
        realm_id: s.realm.id,
        email: 'gone@example.com',
        email_lc: 'gone@example.com',
        delivery_email: 'gone@example.com',
        full_name: 'Gone',
        password_hash: null,
        api_key: 'x'.repeat(32),
        is_active: 0,
        date_joined: 0,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    err(
      await hamlet.client.delete('/users/me/subscriptions', { subscriptions: ['Principals'], principals: [gone.id] }),
      400,
      'BAD_REQUEST',
      'User is deactivated',
    );
    err(
      await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Principals' }], principals: [gone.id] }),
      400,
      'BAD_REQUEST',
      'User is deactivated',
    );
  });

  test('GET /users/me/subscriptions returns Subscription dicts, with subscribers on request', async () => {
    const s = server();
    const { othello, hamlet } = s.cast;
    await subscribe(othello.client, ['Scotland'], { principals: [othello.user.id, hamlet.user.id] });
    const res = await othello.client.get('/users/me/subscriptions');
    const body = ok(res);
    assertConforms(res, 'GET', '/users/me/subscriptions');
    const sub = body.subscriptions.find((x: any) => x.name === 'Scotland');
    assert.ok(sub);
    assert.equal('subscribers' in sub, false);
    for (const key of ['color', 'is_muted', 'in_home_view', 'pin_to_top', 'desktop_notifications', 'audible_notifications', 'push_notifications',
      'email_notifications', 'wildcard_mentions_notify', 'stream_weekly_traffic', 'stream_post_policy', 'date_created', 'first_message_id',
      'rendered_description', 'message_retention_days', 'is_archived', 'subscriber_count', 'can_send_message_group', 'can_remove_subscribers_group']) {
      assert.ok(key in sub, key);
    }
    assert.equal(sub.desktop_notifications, null);
    assert.equal(sub.subscriber_count, 2);
    const names = body.subscriptions.map((x: any) => x.name);
    assert.deepEqual(names, [...names].sort());

    const withSubs = await othello.client.get('/users/me/subscriptions', { include_subscribers: true });
    assertConforms(withSubs, 'GET', '/users/me/subscriptions');
    const sub2 = ok(withSubs).subscriptions.find((x: any) => x.name === 'Scotland');
    assert.deepEqual(sub2.subscribers, sortNum([othello.user.id, hamlet.user.id]));
    // zulip-js sends booleans as the strings it was given; "partial" is accepted too.
    const partial = ok(await othello.client.get('/users/me/subscriptions', { include_subscribers: 'partial' }));
    assert.ok(Array.isArray(partial.subscriptions.find((x: any) => x.name === 'Scotland').subscribers));
  });

  test('private channels: created by invite_only, invisible and unjoinable to others', async () => {
    const s = server();
    const { hamlet, othello, admin, guest } = s.cast;
    const { result, events } = await captureEvents(s, () => hamlet.client.post('/users/me/subscriptions', {
      subscriptions: [{ name: 'Secret' }],
      invite_only: true,
    }));
    ok(result);
    const creates = eventsOf(events, 'stream', 'create');
    // Administrators and the creator (who administers the new channel) learn of it at creation.
    assert.equal(creates.length, 1);
    assert.deepEqual(recipientIds(creates[0]!), sortNum([s.cast.owner.user.id, admin.user.id, hamlet.user.id]));
    const id = ok(await hamlet.client.get('/get_stream_id', { stream: 'Secret' })).stream_id;
    const stream = ok(await hamlet.client.get(`/streams/${id}`)).stream;
    assert.equal(stream.invite_only, true);
    assert.equal(stream.history_public_to_subscribers, false);

    err(await othello.client.get('/get_stream_id', { stream: 'Secret' }), 400, 'BAD_REQUEST', "Invalid channel name 'Secret'");
    err(await othello.client.get(`/streams/${id}`), 400, 'BAD_REQUEST', 'Invalid channel ID');
    err(await othello.client.get(`/streams/${id}/members`), 400, 'BAD_REQUEST', 'Invalid channel ID');
    err(await guest.client.get(`/streams/${id}`), 400, 'BAD_REQUEST', 'Invalid channel ID');
    const unknown = await othello.client.get('/streams/987654');
    err(unknown, 400, 'BAD_REQUEST', 'Invalid channel ID');
    assertConforms(unknown, 'GET', '/streams/{stream_id}');

    const denied = await othello.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'secret' }] });
    err(denied, 400, 'BAD_REQUEST', 'Unable to access channel (Secret).');
    assertConforms(denied, 'POST', '/users/me/subscriptions');
    const soft = ok(await othello.client.post('/users/me/subscriptions', {
      subscriptions: [{ name: 'Secret' }, { name: 'Open air' }],
      authorization_errors_fatal: false,
    }));
    assert.deepEqual(soft.unauthorized, ['Secret']);
    assert.deepEqual(soft.subscribed, { [String(othello.user.id)]: ['Open air'] });

    // Administrators see it exists (metadata) without being able to read it.
    ok(await admin.client.get(`/streams/${id}`));
    assert.deepEqual(ok(await admin.client.get(`/streams/${id}/members`)).subscribers, [hamlet.user.id]);
    err(await admin.client.get('/get_stream_id', { stream: 'Secret' }), 400, 'BAD_REQUEST', "Invalid channel name 'Secret'");
  });

  test('subscribing others to a private channel: subscriber gets stream create first; peers are its subscribers and admins', async () => {
    const s = server();
    const { hamlet, othello, admin, owner } = s.cast;
    await subscribe(hamlet.client, ['Cabal'], { invite_only: true });
    const id = ok(await hamlet.client.get('/get_stream_id', { stream: 'Cabal' })).stream_id;
    const { result, events } = await captureEvents(s, () =>
      hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Cabal' }], principals: [othello.user.id] }),
    );
    ok(result);
    const types = events.map((e) => `${e.event.type}/${e.event.op}`);
    assert.deepEqual(types, ['stream/create', 'subscription/add', 'subscription/peer_add']);
    assert.deepEqual(recipientIds(events[0]!), [othello.user.id]);
    assert.deepEqual(recipientIds(events[1]!), [othello.user.id]);
    assert.deepEqual(recipientIds(events[2]!), sortNum([hamlet.user.id, admin.user.id, owner.user.id]));
    assert.deepEqual(events[2]!.event.user_ids, [othello.user.id]);
    assert.deepEqual((events[1]!.event.subscriptions as any[])[0].subscribers, sortNum([hamlet.user.id, othello.user.id]));
    for (const e of events) assertEventConforms(e.event);
    ok(await othello.client.get(`/streams/${id}`));
  });

  test('guests cannot subscribe themselves and see only channels they are subscribed to', async () => {
    const s = server();
    const { guest, hamlet } = s.cast;
    err(await guest.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Guest room' }] }), 400, 'BAD_REQUEST', 'Not allowed for guest users');
    await subscribe(hamlet.client, ['Lobby']);
    const lobby = await streamId(s, 'Lobby');
    err(await guest.client.get(`/streams/${lobby}`), 400, 'BAD_REQUEST', 'Invalid channel ID');
    err(await guest.client.get('/get_stream_id', { stream: 'Lobby' }), 400, 'BAD_REQUEST', "Invalid channel name 'Lobby'");
    assert.ok(!ok(await guest.client.get('/streams')).streams.some((x: any) => x.name === 'Lobby'));

    const { events } = await captureEvents(s, () => subscribe(hamlet.client, ['Lobby'], { principals: [guest.user.id] }));
    // A guest needs the channel itself before the subscription.
    assert.deepEqual(events.slice(0, 2).map((e) => `${e.event.type}/${e.event.op}`), ['stream/create', 'subscription/add']);
    assert.deepEqual(recipientIds(events[0]!), [guest.user.id]);
    ok(await guest.client.get(`/streams/${lobby}`));
    assert.ok(ok(await guest.client.get('/streams')).streams.some((x: any) => x.name === 'Lobby'));
    assert.ok((await members(s, lobby)).includes(guest.user.id));
  });

  test('DELETE /users/me/subscriptions: removed / not_removed, events, and unknown channels', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    await subscribe(hamlet.client, ['Elsinore'], { principals: [hamlet.user.id, othello.user.id] });
    const id = await streamId(s, 'Elsinore');
    const { result, events } = await captureEvents(s, () => hamlet.client.delete('/users/me/subscriptions', { subscriptions: ['elsinore'] }));
    const body = ok(result);
    assertConforms(result, 'DELETE', '/users/me/subscriptions');
    assert.deepEqual(body.removed, ['Elsinore']);
    assert.deepEqual(body.not_removed, []);
    const [remove] = eventsOf(events, 'subscription', 'remove');
    assertEventConforms(remove!.event);
    assert.deepEqual(remove!.event.subscriptions, [{ name: 'Elsinore', stream_id: id }]);
    assert.deepEqual(recipientIds(remove!), [hamlet.user.id]);
    const [peer] = eventsOf(events, 'subscription', 'peer_remove');
    assertEventConforms(peer!.event);
    assert.deepEqual(peer!.event.user_ids, [hamlet.user.id]);
    assert.ok(recipientIds(peer!).includes(othello.user.id) && !recipientIds(peer!).includes(hamlet.user.id));
    // A public channel stays visible: no stream delete.
    assert.equal(eventsOf(events, 'stream', 'delete').length, 0);

    const again = ok(await hamlet.client.delete('/users/me/subscriptions', { subscriptions: ['Elsinore'] }));
    assert.deepEqual(again, { result: 'success', msg: '', removed: [], not_removed: ['Elsinore'] });

    const missing = await hamlet.client.delete('/users/me/subscriptions', { subscriptions: ['Elsinore', 'Nowhere'] });
    const e = err(missing, 400, 'STREAM_DOES_NOT_EXIST', "Channel 'Nowhere' does not exist");
    assert.equal(e.stream, 'Nowhere');
    assertConforms(missing, 'DELETE', '/users/me/subscriptions');
    // zulip-js sends DELETE parameters in the query string.
    const viaQuery = await othello.client.delete('/users/me/subscriptions', { subscriptions: ['Elsinore'] }, 'query');
    assert.deepEqual(ok(viaQuery).removed, ['Elsinore']);
  });

  test('unsubscribing from a private channel removes it from the user and others cannot probe it', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    await subscribe(hamlet.client, ['Hidden'], { invite_only: true, principals: [hamlet.user.id, othello.user.id] });
    const id = await streamId(s, 'Hidden', hamlet.client);
    const { result, events } = await captureEvents(s, () => othello.client.delete('/users/me/subscriptions', { subscriptions: ['Hidden'] }));
    ok(result);
    const [gone] = eventsOf(events, 'stream', 'delete');
    assertEventConforms(gone!.event);
    assert.deepEqual(recipientIds(gone!), [othello.user.id]);
    assert.deepEqual(gone!.event.stream_ids, [id]);
    const [peer] = eventsOf(events, 'subscription', 'peer_remove');
    assert.ok(recipientIds(peer!).includes(hamlet.user.id));
    assert.ok(!recipientIds(peer!).includes(othello.user.id));
    // Now invisible to othello: the same answer as a channel that does not exist.
    const probe = err(await othello.client.delete('/users/me/subscriptions', { subscriptions: ['Hidden'] }), 400, 'STREAM_DOES_NOT_EXIST');
    assert.equal(probe.stream, 'Hidden');
  });

  test('who may unsubscribe others: administrators, bot owners, can_remove_subscribers_group', async () => {
    const s = server();
    const { hamlet, othello, admin, bot, moderator } = s.cast;
    await subscribe(admin.client, ['Court'], { principals: [hamlet.user.id, othello.user.id, bot.user.id, moderator.user.id] });
    const id = await streamId(s, 'Court');

    // A member may not remove another member (default can_remove_subscribers_group: administrators).
    err(
      await hamlet.client.delete('/users/me/subscriptions', { subscriptions: ['Court'], principals: [othello.user.id] }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    // ...but may remove their own bot, and themselves by principal.
    assert.deepEqual(ok(await hamlet.client.delete('/users/me/subscriptions', { subscriptions: ['Court'], principals: [bot.user.id] })).removed, ['Court']);
    assert.deepEqual(ok(await hamlet.client.delete('/users/me/subscriptions', { subscriptions: ['Court'], principals: [hamlet.user.email] })).removed, ['Court']);
    // Administrators may remove anyone.
    assert.deepEqual(ok(await admin.client.delete('/users/me/subscriptions', { subscriptions: ['Court'], principals: [othello.user.id] })).removed, ['Court']);

    // Members of can_remove_subscribers_group (here through nesting: role:members contains
    // moderators) may remove others.
    const groups = ok(await admin.client.get('/user_groups')).user_groups;
    const membersGroup = groups.find((g: any) => g.name === 'role:members').id;
    const adminsGroup = groups.find((g: any) => g.name === 'role:administrators').id;
    ok(await admin.client.patch(`/streams/${id}`, { can_remove_subscribers_group: { new: membersGroup, old: adminsGroup } }));
    await subscribe(admin.client, ['Court'], { principals: [othello.user.id] });
    assert.deepEqual(ok(await moderator.client.delete('/users/me/subscriptions', { subscriptions: ['Court'], principals: [othello.user.id] })).removed, ['Court']);
    assert.deepEqual(await members(s, id), [moderator.user.id]);
  });

  test('PATCH /users/me/subscriptions adds and deletes in one request', async () => {
    const s = server();
    const { hamlet } = s.cast;
    await subscribe(hamlet.client, ['Combined old']);
    const res = await hamlet.client.patch('/users/me/subscriptions', { add: [{ name: 'Combined new', color: '#abc' }], delete: ['Combined old'] });
    assertConforms(res, 'PATCH', '/users/me/subscriptions');
    assert.deepEqual(ok(res), {
      result: 'success',
      msg: '',
      subscribed: { [String(hamlet.user.id)]: ['Combined new'] },
      already_subscribed: {},
      removed: ['Combined old'],
      not_removed: [],
    });
    const sub = ok(await hamlet.client.get('/users/me/subscriptions')).subscriptions.find((x: any) => x.name === 'Combined new');
    assert.equal(sub.color, '#aabbcc');
    err(await hamlet.client.patch('/users/me/subscriptions', {}), 400, 'BAD_REQUEST', 'Nothing to do. Specify at least one of "add" or "delete".');
    err(await hamlet.client.patch('/users/me/subscriptions', { delete: ['Combined nowhere'] }), 400, 'STREAM_DOES_NOT_EXIST');
    err(await hamlet.client.patch('/users/me/subscriptions', { add: [{ name: 'Combined x', color: 'blue' }] }), 400, 'BAD_REQUEST', 'add.color is not a valid hex color code');
  });

  test('POST /users/me/subscriptions/properties updates personal settings with events', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    await subscribe(hamlet.client, ['Props']);
    const id = await streamId(s, 'Props');
    const { result, events } = await captureEvents(s, () =>
      hamlet.client.post('/users/me/subscriptions/properties', {
        subscription_data: [
          { stream_id: id, property: 'color', value: '#F00F00' },
          { stream_id: id, property: 'is_muted', value: true },
          { stream_id: id, property: 'pin_to_top', value: true },
          { stream_id: id, property: 'desktop_notifications', value: false },
        ],
      }),
    );
    assertConforms(result, 'POST', '/users/me/subscriptions/properties');
    ok(result);
    assert.deepEqual(
      events.map((e) => [e.event.property, e.event.value]),
      [['color', '#f00f00'], ['in_home_view', false], ['is_muted', true], ['pin_to_top', true], ['desktop_notifications', false]],
    );
    for (const e of events) {
      assertEventConforms(e.event);
      assert.deepEqual(recipientIds(e), [hamlet.user.id]);
    }
    const sub = ok(await hamlet.client.get('/users/me/subscriptions')).subscriptions.find((x: any) => x.stream_id === id);
    assert.equal(sub.color, '#f00f00');
    assert.equal(sub.is_muted, true);
    assert.equal(sub.in_home_view, false);
    assert.equal(sub.pin_to_top, true);
    assert.equal(sub.desktop_notifications, false);

    ok(await hamlet.client.post('/users/me/subscriptions/properties', { subscription_data: [{ stream_id: id, property: 'in_home_view', value: true }] }));
    ok(await hamlet.client.patch(`/users/me/subscriptions/${id}`, { property: 'audible_notifications', value: true }));
    const sub2 = ok(await hamlet.client.get('/users/me/subscriptions')).subscriptions.find((x: any) => x.stream_id === id);
    assert.equal(sub2.is_muted, false);
    assert.equal(sub2.audible_notifications, true);

    const bad = (data: object) => hamlet.client.post('/users/me/subscriptions/properties', { subscription_data: data });
    err(await bad([{ stream_id: id, property: 'color', value: 'red' }]), 400, 'BAD_REQUEST', 'color is not a valid hex color code');
    err(await bad([{ stream_id: id, property: 'is_muted', value: 'yes' }]), 400, 'BAD_REQUEST', 'is_muted is not a boolean');
    err(await bad([{ stream_id: id, property: 'nonsense', value: true }]), 400, 'BAD_REQUEST', 'Unknown subscription property: nonsense');
    err(await bad([{ stream_id: 999999, property: 'pin_to_top', value: true }]), 400, 'BAD_REQUEST', 'Invalid channel ID');
    err(
      await othello.client.post('/users/me/subscriptions/properties', { subscription_data: [{ stream_id: id, property: 'pin_to_top', value: true }] }),
      400,
      'BAD_REQUEST',
      `Not subscribed to channel ID ${id}`,
    );
  });

  test('GET /users/{user_id}/subscriptions/{stream_id} and /users/{user_id}/channels', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    await subscribe(hamlet.client, ['Status']);
    await subscribe(hamlet.client, ['Status private'], { invite_only: true });
    const id = await streamId(s, 'Status');
    const priv = await streamId(s, 'Status private', hamlet.client);
    const res = await othello.client.get(`/users/${hamlet.user.id}/subscriptions/${id}`);
    assert.deepEqual(ok(res), { result: 'success', msg: '', is_subscribed: true });
    assertConforms(res, 'GET', '/users/{user_id}/subscriptions/{stream_id}');
    assert.equal(ok(await hamlet.client.get(`/users/${othello.user.id}/subscriptions/${id}`)).is_subscribed, false);
    err(await othello.client.get(`/users/${hamlet.user.id}/subscriptions/${priv}`), 400, 'BAD_REQUEST', 'Invalid channel ID');
    err(await othello.client.get(`/users/999999/subscriptions/${id}`), 400, 'BAD_REQUEST', 'No such user');

    const mine = await hamlet.client.get(`/users/${hamlet.user.id}/channels`);
    assertConforms(mine, 'GET', '/users/{user_id}/channels');
    assert.ok(ok(mine).subscribed_channel_ids.includes(priv));
    const theirs = ok(await othello.client.get(`/users/${hamlet.user.id}/channels`)).subscribed_channel_ids;
    assert.ok(theirs.includes(id) && !theirs.includes(priv));
  });

  test('subscribing others needs can_add_subscribers_group (realm or channel)', async () => {
    const s = server();
    const { hamlet, othello, owner } = s.cast;
    await subscribe(hamlet.client, ['Invites']);
    const groups = ok(await owner.client.get('/user_groups')).user_groups;
    const nobody = groups.find((g: any) => g.name === 'role:nobody').id;
    const membersGroup = groups.find((g: any) => g.name === 'role:members').id;
    ok(await owner.client.patch('/realm', { can_add_subscribers_group: { new: nobody } }));
    try {
      err(
        await othello.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Invites' }], principals: [s.cast.moderator.user.id] }),
        400,
        'BAD_REQUEST',
        'Insufficient permission',
      );
      // hamlet administers the channel he created, which also lets him add subscribers.
      ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Invites' }], principals: [s.cast.moderator.user.id] }));
      // New channels are always authorized for their creator.
      ok(await othello.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Othello new' }], principals: [hamlet.user.id] }));
    } finally {
      ok(await owner.client.patch('/realm', { can_add_subscribers_group: { new: membersGroup } }));
    }
  });
});

