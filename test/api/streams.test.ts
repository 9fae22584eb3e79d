import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { stringifyJson } from '../../src/lib/raw_json.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms, assertMatchesComponent } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import type { ApiClient } from '../helpers/client.js';
import type { EventEnvelope } from '../../src/events/bus.js';
import { transaction } from '../../src/db/index.js';
import { subscribeNewUserToDefaultStreams } from '../../src/actions/streams.js';
import { fetchStreamsState } from '../../src/events/state/streams.js';
import type { RegisterOptions } from '../../src/events/state/types.js';
import type { User } from '../../src/db/tables.js';

async function create(client: ApiClient, name: string, extra: Record<string, unknown> = {}): Promise<void> {
  ok(await client.post('/users/me/subscriptions', { subscriptions: [{ name, description: `About ${name}` }], ...extra }));
}

async function idOf(client: ApiClient, name: string): Promise<number> {
  return ok(await client.get('/get_stream_id', { stream: name })).stream_id;
}

async function groupIds(s: TestServer): Promise<Record<string, number>> {
  const groups = ok(await s.cast.owner.client.get('/user_groups', { include_deactivated_groups: true })).user_groups;
  return Object.fromEntries(groups.map((g: { name: string; id: number }) => [g.name, g.id]));
}

const names = (streams: { name: string }[]): string[] => streams.map((x) => x.name);
const sortNum = (ids: number[]): number[] => [...ids].sort((a, b) => a - b);
const only = (events: EventEnvelope[], type: string, op: string): EventEnvelope[] => events.filter((e) => e.event.type === type && e.event.op === op);

function registerOptions(extra: Partial<RegisterOptions> = {}): RegisterOptions {
  return {
    applyMarkdown: true,
    clientGravatar: false,
    includeSubscribers: false,
    slimPresence: true,
    allPublicStreams: false,
    narrow: [],
    clientCapabilities: {},
    userListIncomplete: false,
    ...extra,
  };
}

async function registerState(s: TestServer, user: User, extra: Partial<RegisterOptions> = {}, types?: string[]): Promise<any> {
  const state = await fetchStreamsState({
    services: s.app.services,
    realm: s.realm,
    user,
    options: registerOptions(extra),
    want: (t) => !types || types.includes(t),
  });
  // As it goes on the wire: parts of it are already serialized (RawJson).
  return JSON.parse(stringifyJson(state));
}

forEachDatabase('channels', (server) => {
  test('GET /streams: public and subscribed by default; include_* parameters; guests', async () => {
    const s = server();
    const { hamlet, othello, admin, guest, bot } = s.cast;
    await create(hamlet.client, 'List public');
    await create(hamlet.client, 'List private', { invite_only: true });
    await create(othello.client, 'List othello private', { invite_only: true });

    const res = await hamlet.client.get('/streams');
    assertConforms(res, 'GET', '/streams');
    const mine = names(ok(res).streams);
    assert.ok(mine.includes('List public') && mine.includes('List private') && !mine.includes('List othello private'));
    assert.deepEqual(mine, [...mine].sort());

    const subscribedOnly = names(ok(await othello.client.get('/streams', { include_public: false })).streams);
    assert.ok(subscribedOnly.includes('List othello private') && !subscribedOnly.includes('List public'));
    assert.deepEqual(names(ok(await othello.client.get('/streams', { include_public: false, include_subscribed: false })).streams), []);

    // Administrators see every channel with include_all (and the deprecated include_all_active).
    for (const param of ['include_all', 'include_all_active']) {
      const all = names(ok(await admin.client.get('/streams', { [param]: true })).streams);
      assert.ok(all.includes('List othello private') && all.includes('List private'), param);
    }
    // Members see only what they have metadata access to, even with include_all.
    assert.ok(!names(ok(await hamlet.client.get('/streams', { include_all: true })).streams).includes('List othello private'));

    const withDefault = ok(await hamlet.client.get('/streams', { include_default: true }));
    assert.ok(withDefault.streams.every((x: any) => x.is_default === false));
    assertConforms(await hamlet.client.get('/streams', { include_default: true }), 'GET', '/streams');

    // A bot may ask for its owner's channels.
    const botStreams = names(ok(await bot.client.get('/streams', { include_public: false, include_owner_subscribed: true })).streams);
    assert.ok(botStreams.includes('List private'));

    // Guests: no public channels unless subscribed.
    assert.ok(!names(ok(await guest.client.get('/streams')).streams).includes('List public'));
  });

  test('GET /streams/{stream_id}, /get_stream_id and /streams/{stream_id}/members', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    await create(hamlet.client, 'Detail');
    const id = await idOf(othello.client, 'detail');
    const res = await othello.client.get(`/streams/${id}`);
    assertConforms(res, 'GET', '/streams/{stream_id}');
    const stream = ok(res).stream;
    assertMatchesComponent(stream, 'BasicChannel');
    assert.equal(stream.stream_id, id);
    assert.equal(stream.is_archived, false);
    assert.equal(stream.first_message_id, null);
    assert.equal(stream.stream_weekly_traffic, null);
    assert.equal(stream.topics_policy, 'inherit');
    const g = await groupIds(s);
    assert.equal(stream.can_send_message_group, g['role:everyone']);
    assert.equal(stream.can_remove_subscribers_group, g['role:administrators']);
    assert.equal(stream.can_subscribe_group, g['role:nobody']);
    assert.equal(stream.can_add_subscribers_group, g['role:nobody']);
    assert.equal(stream.can_create_topic_group, g['role:everyone']);

    const idRes = await othello.client.get('/get_stream_id', { stream: 'Detail' });
    assertConforms(idRes, 'GET', '/get_stream_id');
    assert.equal(ok(idRes).stream_id, id);
    const missing = await othello.client.get('/get_stream_id', { stream: 'nonexistent' });
    err(missing, 400, 'BAD_REQUEST', "Invalid channel name 'nonexistent'");
    assertConforms(missing, 'GET', '/get_stream_id');
    err(await othello.client.get('/get_stream_id'), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'stream' argument");

    const mem = await othello.client.get(`/streams/${id}/members`);
    assertConforms(mem, 'GET', '/streams/{stream_id}/members');
    assert.deepEqual(ok(mem).subscribers, [hamlet.user.id]);
    const bad = await othello.client.get('/streams/999999/members');
    err(bad, 400, 'BAD_REQUEST', 'Invalid channel ID');
    assertConforms(bad, 'GET', '/streams/{stream_id}/members');
  });

  test('channel names are validated; existing names are reused case-insensitively', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const sub = (name: string) => hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name }] });
    err(await sub('   '), 400, 'BAD_REQUEST', "Channel name can't be empty.");
    err(await sub('x'.repeat(61)), 400, 'BAD_REQUEST', 'Channel name too long (limit: 60 characters).');
    err(await sub('bad\u0001name'), 400, 'BAD_REQUEST', 'Invalid character in channel name, at position 4.');
    err(await hamlet.client.post('/users/me/subscriptions', { subscriptions: 'Verona' }), 400, 'BAD_REQUEST', 'Argument "subscriptions" is not valid JSON.');
    err(await hamlet.client.post('/users/me/subscriptions', {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'subscriptions' argument");
    ok(await sub('x'.repeat(60)));
    ok(await sub('Case Test'));
    const again = ok(await sub('CASE test'));
    assert.deepEqual(again.already_subscribed, { [String(hamlet.user.id)]: ['Case Test'] });
  });

  test('creation options: private with shared history, permission settings, retention, topics policy', async () => {
    const s = server();
    const { hamlet, othello, owner } = s.cast;
    const g = await groupIds(s);
    await create(hamlet.client, 'Shared history', {
      invite_only: true,
      history_public_to_subscribers: true,
      can_subscribe_group: { direct_members: [othello.user.id], direct_subgroups: [g['role:moderators']!] },
      can_send_message_group: g['role:administrators'],
      topics_policy: 'disable_empty_topic',
    });
    const id = await idOf(hamlet.client, 'Shared history');
    const stream = ok(await hamlet.client.get(`/streams/${id}`)).stream;
    assert.equal(stream.history_public_to_subscribers, true);
    assert.deepEqual(stream.can_subscribe_group, { direct_members: [othello.user.id], direct_subgroups: [g['role:moderators']] });
    assert.equal(stream.can_send_message_group, g['role:administrators']);
    assert.equal(stream.stream_post_policy, 2);
    assert.equal(stream.is_announcement_only, true);
    assert.equal(stream.topics_policy, 'disable_empty_topic');
    // can_subscribe_group grants content access: othello may join without an invitation.
    ok(await othello.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Shared history' }] }));

    const sub = (extra: Record<string, unknown>) => hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: `Opt ${Math.random()}` }], ...extra });
    err(await sub({ can_add_subscribers_group: g['role:everyone'] }), 400, 'BAD_REQUEST', "'can_add_subscribers_group' setting cannot be set to 'role:everyone' group.");
    err(await sub({ can_send_message_group: 999999 }), 400, 'BAD_REQUEST', 'Invalid user group');
    err(await sub({ can_send_message_group: { direct_members: [999999], direct_subgroups: [] } }), 400, 'BAD_REQUEST', 'Invalid user ID: 999999');
    err(await sub({ can_send_message_group: 'x' }), 400, 'BAD_REQUEST');
    err(await sub({ message_retention_days: 30 }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    err(await sub({ message_retention_days: 'soon' }), 400, 'BAD_REQUEST', "Bad value for 'message_retention_days': soon");
    err(await sub({ is_default_stream: true }), 400, 'BAD_REQUEST', 'Insufficient permission');
    err(await sub({ topics_policy: 'whatever' }), 400, 'BAD_REQUEST', 'Invalid topics_policy');
    err(await sub({ folder_id: 3 }), 400, 'BAD_REQUEST', 'Invalid channel folder ID');
    err(
      await sub({ invite_only: true, can_create_topic_group: g['role:members'] }),
      400,
      'BAD_REQUEST',
      'Unsupported parameter combination: history_public_to_subscribers, can_create_topic_group',
    );
    err(await sub({ is_web_public: true }), 400, 'BAD_REQUEST', 'Web-public channels are not enabled.');

    await create(owner.client, 'Retained', { message_retention_days: 'unlimited' });
    assert.equal(ok(await owner.client.get(`/streams/${await idOf(owner.client, 'Retained')}`)).stream.message_retention_days, -1);
    await create(owner.client, 'Retained 30', { message_retention_days: 30 });
    assert.equal(ok(await owner.client.get(`/streams/${await idOf(owner.client, 'Retained 30')}`)).stream.message_retention_days, 30);
    err(await owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Def priv' }], invite_only: true, is_default_stream: true }), 400, 'BAD_REQUEST', 'A default channel cannot be private.');
  });

  test('web-public channels: need spectator access and the owners group; everyone, guests included, sees them', async () => {
    const s = server();
    const { owner, hamlet, guest } = s.cast;
    ok(await owner.client.patch('/realm', { enable_spectator_access: true }));
    try {
      err(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Web' }], is_web_public: true }), 400, 'BAD_REQUEST', 'Insufficient permission');
      const { events } = await captureEvents(s, () => create(owner.client, 'Web', { is_web_public: true }));
      const [created] = only(events, 'stream', 'create');
      assert.ok(recipientIds(created!).includes(guest.user.id));
      const id = await idOf(owner.client, 'Web');
      const stream = ok(await guest.client.get(`/streams/${id}`)).stream;
      assert.equal(stream.is_web_public, true);
      assert.deepEqual(ok(await guest.client.get(`/streams/${id}/members`)).subscribers, [owner.user.id]);
      assert.ok(names(ok(await guest.client.get('/streams', { include_web_public: true })).streams).includes('Web'));
      assert.ok(!names(ok(await guest.client.get('/streams')).streams).includes('Web'));
      // A guest may read a web-public channel, and be subscribed to it by others.
      assert.equal(ok(await guest.client.get('/get_stream_id', { stream: 'Web' })).stream_id, id);
    } finally {
      ok(await owner.client.patch('/realm', { enable_spectator_access: false }));
    }
  });

  test('PATCH /streams/{id}: rename and describe with events to everyone who sees the channel', async () => {
    const s = server();
    const { hamlet, othello, guest, admin } = s.cast;
    await create(hamlet.client, 'Old name');
    const id = await idOf(hamlet.client, 'Old name');
    const { result, events } = await captureEvents(s, () => hamlet.client.patch(`/streams/${id}`, { new_name: 'New name', description: 'Fresh\ntext <b>' }));
    ok(result);
    assertConforms(result, 'PATCH', '/streams/{stream_id}');
    const updates = only(events, 'stream', 'update');
    assert.deepEqual(updates.map((e) => e.event.property), ['description', 'name']);
    const [desc, rename] = updates;
    assert.equal(desc!.event.value, 'Fresh text <b>');
    assert.equal(desc!.event.rendered_description, '<p>Fresh text &lt;b&gt;</p>');
    assert.equal(rename!.event.value, 'New name');
    assert.equal(rename!.event.name, 'Old name');
    for (const e of updates) {
      assertEventConforms(e.event);
      assert.ok(recipientIds(e).includes(othello.user.id) && !recipientIds(e).includes(guest.user.id));
    }
    assert.equal(ok(await othello.client.get(`/streams/${id}`)).stream.name, 'New name');
    // Descriptions are Zulip-flavoured Markdown.
    ok(await hamlet.client.patch(`/streams/${id}`, { description: 'A **bold** place' }));
    assert.equal(ok(await othello.client.get(`/streams/${id}`)).stream.rendered_description, '<p>A <strong>bold</strong> place</p>');

    err(await hamlet.client.patch(`/streams/${id}`, { new_name: 'New name' }), 400, 'BAD_REQUEST', 'Channel already has that name.');
    ok(await hamlet.client.patch(`/streams/${id}`, { new_name: 'NEW NAME' }));
    await create(hamlet.client, 'Taken');
    err(await hamlet.client.patch(`/streams/${id}`, { new_name: 'taken' }), 400, 'STREAM_ALREADY_EXISTS', "Channel 'taken' already exists");
    err(await hamlet.client.patch(`/streams/${id}`, { new_name: '' }), 400, 'BAD_REQUEST', "Channel name can't be empty.");
    err(await hamlet.client.patch(`/streams/${id}`, { description: 'd'.repeat(1025) }), 400, 'BAD_REQUEST');

    // Only channel administrators (the creator here) and organization administrators.
    const denied = await othello.client.patch(`/streams/${id}`, { description: 'mine now' });
    err(denied, 400, 'CANNOT_ADMINISTER_CHANNEL', 'You do not have permission to administer this channel.');
    ok(await admin.client.patch(`/streams/${id}`, { description: 'admin was here' }));
    const unknown = await admin.client.patch('/streams/999999', { description: 'x' });
    // zulip.yaml's 400 schema here is a oneOf of two schemas that both match any coded error,
    // so no response can validate against it; the body is checked by hand.
    assert.deepEqual(err(unknown, 400, 'BAD_REQUEST', 'Invalid channel ID'), { result: 'error', msg: 'Invalid channel ID', code: 'BAD_REQUEST' });
    await create(hamlet.client, 'Patch private', { invite_only: true });
    const priv = await idOf(hamlet.client, 'Patch private');
    // A private channel othello cannot see answers as if it did not exist.
    err(await othello.client.patch(`/streams/${priv}`, { description: 'x' }), 400, 'BAD_REQUEST', 'Invalid channel ID');
  });

  test('PATCH /streams/{id}: privacy changes create, update and delete the channel for the right users', async () => {
    const s = server();
    const { hamlet, othello, guest, admin, owner } = s.cast;
    await create(hamlet.client, 'Flip', { principals: [hamlet.user.id, guest.user.id] });
    const id = await idOf(hamlet.client, 'Flip');

    const toPrivate = await captureEvents(s, () => hamlet.client.patch(`/streams/${id}`, { is_private: true }));
    ok(toPrivate.result);
    const [deleted] = only(toPrivate.events, 'stream', 'delete');
    assert.ok(recipientIds(deleted!).includes(othello.user.id));
    assert.ok(!recipientIds(deleted!).includes(guest.user.id));
    const [update] = only(toPrivate.events, 'stream', 'update');
    assertEventConforms(update!.event);
    assert.equal(update!.event.property, 'invite_only');
    assert.equal(update!.event.value, true);
    assert.equal(update!.event.history_public_to_subscribers, false);
    assert.equal(update!.event.is_web_public, false);
    assert.deepEqual(recipientIds(update!), sortNum([owner.user.id, hamlet.user.id, admin.user.id, guest.user.id]));
    err(await othello.client.get(`/streams/${id}`), 400, 'BAD_REQUEST', 'Invalid channel ID');

    const toPublic = await captureEvents(s, () => hamlet.client.patch(`/streams/${id}`, { is_private: false }));
    ok(toPublic.result);
    const [created] = only(toPublic.events, 'stream', 'create');
    assert.ok(recipientIds(created!).includes(othello.user.id));
    const [peers] = only(toPublic.events, 'subscription', 'peer_add');
    assert.deepEqual(peers!.event.user_ids, sortNum([hamlet.user.id, guest.user.id]));
    assert.deepEqual(recipientIds(peers!), recipientIds(created!));
    const stream = ok(await othello.client.get(`/streams/${id}`)).stream;
    assert.equal(stream.invite_only, false);
    assert.equal(stream.history_public_to_subscribers, true);

    err(await hamlet.client.patch(`/streams/${id}`, { history_public_to_subscribers: false }), 400, 'BAD_REQUEST', 'Invalid parameters');
    err(await hamlet.client.patch(`/streams/${id}`, { is_private: true, is_web_public: true }), 400, 'BAD_REQUEST', 'Invalid parameters');
    err(await hamlet.client.patch(`/streams/${id}`, { is_web_public: true }), 400, 'BAD_REQUEST', 'Web-public channels are not enabled.');
    err(await hamlet.client.patch(`/streams/${id}`, { is_default_stream: true }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    ok(await admin.client.patch(`/streams/${id}`, { is_default_stream: true }));
    err(await admin.client.patch(`/streams/${id}`, { is_private: true }), 400, 'BAD_REQUEST', 'A default channel cannot be private.');
    ok(await admin.client.patch(`/streams/${id}`, { is_default_stream: false }));

    // Changing privacy needs content access, even for administrators.
    await create(othello.client, 'Flip closed', { invite_only: true });
    const closed = await idOf(othello.client, 'Flip closed');
    err(await admin.client.patch(`/streams/${closed}`, { is_private: false }), 400, 'BAD_REQUEST', 'Channel content access is required.');
    ok(await admin.client.patch(`/streams/${closed}`, { description: 'administrators may still describe it' }));
  });

  test('PATCH /streams/{id}: group settings as {new, old} updates', async () => {
    const s = server();
    const { hamlet, othello, owner } = s.cast;
    const g = await groupIds(s);
    await create(hamlet.client, 'Groups');
    const id = await idOf(hamlet.client, 'Groups');
    const { result, events } = await captureEvents(s, () =>
      hamlet.client.patch(`/streams/${id}`, { can_send_message_group: { new: g['role:moderators'], old: g['role:everyone'] } }),
    );
    ok(result);
    const updates = only(events, 'stream', 'update');
    assert.deepEqual(updates.map((e) => [e.event.property, e.event.value]), [
      ['can_send_message_group', g['role:moderators']],
      ['stream_post_policy', 4],
      ['is_announcement_only', false],
    ]);
    for (const e of updates) assertEventConforms(e.event);
    const stale = await hamlet.client.patch(`/streams/${id}`, { can_send_message_group: { new: g['role:members'], old: g['role:everyone'] } });
    err(stale, 400, 'BAD_REQUEST', "'old' value does not match the expected value.");
    // An unchanged value is a no-op without events.
    const same = await captureEvents(s, () => hamlet.client.patch(`/streams/${id}`, { can_send_message_group: { new: g['role:moderators'] } }));
    ok(same.result);
    assert.equal(same.events.length, 0);

    const anon = { direct_members: [othello.user.id], direct_subgroups: [g['role:administrators']] };
    ok(await hamlet.client.patch(`/streams/${id}`, { can_remove_subscribers_group: { new: anon } }));
    assert.deepEqual(ok(await owner.client.get(`/streams/${id}`)).stream.can_remove_subscribers_group, anon);
    err(
      await hamlet.client.patch(`/streams/${id}`, { can_administer_channel_group: { new: g['role:everyone'] } }),
      400,
      'BAD_REQUEST',
      "'can_administer_channel_group' setting cannot be set to 'role:everyone' group.",
    );
    err(await hamlet.client.patch(`/streams/${id}`, { can_send_message_group: { old: 1 } }), 400, 'BAD_REQUEST');

    // Granting can_administer_channel_group lets othello administer the channel.
    ok(await hamlet.client.patch(`/streams/${id}`, { can_administer_channel_group: { new: { direct_members: [hamlet.user.id, othello.user.id], direct_subgroups: [] } } }));
    ok(await othello.client.patch(`/streams/${id}`, { description: 'co-admin' }));
  });

  test('PATCH /streams/{id}: topics policy and message retention', async () => {
    const s = server();
    const { hamlet, owner } = s.cast;
    await create(hamlet.client, 'Policies');
    const id = await idOf(hamlet.client, 'Policies');
    const { events } = await captureEvents(s, async () => ok(await hamlet.client.patch(`/streams/${id}`, { topics_policy: 'empty_topic_only' })));
    assert.deepEqual(events.map((e) => [e.event.property, e.event.value]), [['topics_policy', 'empty_topic_only']]);
    assertEventConforms(events[0]!.event);
    // empty_topic_only needs every existing message to be in the empty topic.
    await create(hamlet.client, 'Policies topics');
    const withTopics = await idOf(hamlet.client, 'Policies topics');
    await s.app.services.db.kysely
      .insertInto('messages')
      .values({ realm_id: s.realm.id, sender_id: hamlet.user.id, type: 'stream', stream_id: withTopics, topic: 'named', topic_lc: 'named', content: 'x', rendered_content: '<p>x</p>', date_sent: 0 })
      .execute();
    err(
      await hamlet.client.patch(`/streams/${withTopics}`, { topics_policy: 'empty_topic_only' }),
      400,
      'BAD_REQUEST',
      'To enable this configuration, all messages in this channel must be in the "general chat" topic. Consider renaming or deleting topics.',
    );
    ok(await hamlet.client.patch(`/streams/${withTopics}`, { topics_policy: 'allow_empty_topic' }));
    err(await hamlet.client.patch(`/streams/${id}`, { message_retention_days: 10 }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    ok(await owner.client.patch(`/streams/${id}`, { message_retention_days: 10 }));
    assert.equal(ok(await hamlet.client.get(`/streams/${id}`)).stream.message_retention_days, 10);
    ok(await owner.client.patch(`/streams/${id}`, { message_retention_days: 'realm_default' }));
    assert.equal(ok(await hamlet.client.get(`/streams/${id}`)).stream.message_retention_days, null);
  });

  test('DELETE /streams/{id} archives: update for archived_channels clients, delete for the others', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    await create(hamlet.client, 'Doomed', { principals: [hamlet.user.id, othello.user.id] });
    const id = await idOf(hamlet.client, 'Doomed');
    ok(await admin.client.patch(`/streams/${id}`, { is_default_stream: true }));
    err(await othello.client.delete(`/streams/${id}`), 400, 'CANNOT_ADMINISTER_CHANNEL');
    const { result, events } = await captureEvents(s, () => hamlet.client.delete(`/streams/${id}`));
    ok(result);
    assertConforms(result, 'DELETE', '/streams/{stream_id}');
    const defaults = events.filter((e) => e.event.type === 'default_streams');
    assert.equal(defaults.length, 1);
    assert.ok(!(defaults[0]!.event.default_streams as number[]).includes(id));
    const [update] = only(events, 'stream', 'update');
    assert.equal(update!.event.property, 'is_archived');
    assert.equal(update!.event.value, true);
    assert.deepEqual(update!.onlyIf, { capability: 'archived_channels', value: true });
    const [deleted] = only(events, 'stream', 'delete');
    assert.deepEqual(deleted!.onlyIf, { capability: 'archived_channels', value: false });
    assert.deepEqual(deleted!.event.stream_ids, [id]);
    assertEventConforms(update!.event);
    assertEventConforms(deleted!.event);
    assert.deepEqual(recipientIds(update!), recipientIds(deleted!));

    err(await hamlet.client.delete(`/streams/${id}`), 400, 'BAD_REQUEST', 'Channel is already deactivated');
    // Archived: gone from lists and name lookups, still readable by ID, subscriptions kept.
    assert.ok(!names(ok(await othello.client.get('/streams')).streams).includes('Doomed'));
    assert.ok(names(ok(await othello.client.get('/streams', { exclude_archived: false })).streams).includes('Doomed'));
    assert.equal(ok(await othello.client.get(`/streams/${id}`)).stream.is_archived, true);
    err(await othello.client.get('/get_stream_id', { stream: 'Doomed' }), 400, 'BAD_REQUEST', "Invalid channel name 'Doomed'");
    assert.deepEqual(ok(await othello.client.get(`/streams/${id}/members`)).subscribers, sortNum([hamlet.user.id, othello.user.id]));

    const restored = await captureEvents(s, () => hamlet.client.patch(`/streams/${id}`, { is_archived: false }));
    ok(restored.result);
    assert.deepEqual(restored.events.map((e) => `${e.event.type}/${e.event.op}`), ['stream/update', 'stream/create']);
    assert.equal(ok(await othello.client.get(`/streams/${id}`)).stream.is_archived, false);
    err(await hamlet.client.patch(`/streams/${id}`, { is_archived: false }), 400, 'BAD_REQUEST', 'Channel is not currently deactivated');
    err(await hamlet.client.delete('/streams/999999'), 400, 'BAD_REQUEST', 'Invalid channel ID');
  });

  test('default channels: administrators only; new users are subscribed to them', async () => {
    const s = server();
    const { hamlet, admin, othello } = s.cast;
    await create(hamlet.client, 'Welcome');
    await create(hamlet.client, 'Welcome private', { invite_only: true });
    const id = await idOf(hamlet.client, 'Welcome');
    const priv = await idOf(hamlet.client, 'Welcome private');
    err(await hamlet.client.post('/default_streams', { stream_id: id }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    const { result, events } = await captureEvents(s, () => admin.client.post('/default_streams', { stream_id: id }));
    assertConforms(result, 'POST', '/default_streams');
    ok(result);
    assert.equal(events.length, 1);
    assertEventConforms(events[0]!.event);
    assert.ok((events[0]!.event.default_streams as number[]).includes(id));
    assert.ok(!recipientIds(events[0]!).includes(s.cast.guest.user.id));
    assert.equal(ok(await othello.client.get('/streams', { include_default: true })).streams.find((x: any) => x.stream_id === id).is_default, true);
    // The admin cannot read a private channel they are not in; a readable one is refused anyway.
    err(await admin.client.post('/default_streams', { stream_id: priv }), 400, 'BAD_REQUEST', 'Invalid channel ID');
    ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Welcome private' }], principals: [admin.user.id] }));
    err(await admin.client.post('/default_streams', { stream_id: priv }), 400, 'BAD_REQUEST', 'Private channels cannot be made default.');
    err(await admin.client.post('/default_streams', { stream_id: 999999 }), 400, 'BAD_REQUEST', 'Invalid channel ID');

    // doCreateUser's hook: the new user ends up subscribed, and peers hear about it.
    const services = s.app.services;
    const newcomer = await services.db.kysely
      .insertInto('users')
      .values({
        realm_id: s.realm.id,
        email: 'newcomer@example.com',
        email_lc: 'newcomer@example.com',
        delivery_email: 'newcomer@example.com',
        full_name: 'Newcomer',
        password_hash: null,
        api_key: 'n'.repeat(32),
        date_joined: 0,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const joined = await captureEvents(s, () =>
      transaction(services.db, (tx, afterCommit) => subscribeNewUserToDefaultStreams(tx, afterCommit, services, s.realm, newcomer)),
    );
    assert.deepEqual(joined.events.map((e) => `${e.event.type}/${e.event.op}`), ['subscription/peer_add']);
    assert.ok(ok(await othello.client.get(`/streams/${id}/members`)).subscribers.includes(newcomer.id));

    const removal = await admin.client.delete('/default_streams', { stream_id: id });
    assertConforms(removal, 'DELETE', '/default_streams');
    ok(removal);
    assert.equal(ok(await othello.client.get('/streams', { include_default: true })).streams.find((x: any) => x.stream_id === id).is_default, false);
  });

  test('POST /register state: subscriptions, unsubscribed, never_subscribed, streams and creation rights', async () => {
    const s = server();
    const { hamlet, othello, guest, admin } = s.cast;
    await create(hamlet.client, 'Reg sub', { principals: [hamlet.user.id, othello.user.id] });
    await create(hamlet.client, 'Reg left');
    ok(await hamlet.client.delete('/users/me/subscriptions', { subscriptions: ['Reg left'] }));
    await create(othello.client, 'Reg never');
    await create(othello.client, 'Reg hidden', { invite_only: true });

    const state = await registerState(s, hamlet.user, { includeSubscribers: true });
    for (const sub of [...state.subscriptions, ...state.unsubscribed]) assertMatchesComponent(sub, 'Subscription');
    for (const st of state.streams) assertMatchesComponent(st, 'BasicChannel');
    const subNames = names(state.subscriptions);
    assert.ok(subNames.includes('Reg sub') && !subNames.includes('Reg left'));
    assert.deepEqual(state.subscriptions.find((x: any) => x.name === 'Reg sub').subscribers, sortNum([hamlet.user.id, othello.user.id]));
    assert.ok(names(state.unsubscribed).includes('Reg left'));
    const never = names(state.never_subscribed);
    assert.ok(never.includes('Reg never') && !never.includes('Reg hidden') && !never.includes('Reg sub'));
    assert.ok(!names(state.streams).includes('Reg hidden'));
    assert.equal(state.max_stream_name_length, 60);
    assert.equal(state.max_stream_description_length, 1024);
    assert.equal(state.can_create_public_streams, true);
    assert.equal(state.can_create_streams, true);
    assert.equal(state.can_create_web_public_streams, false);
    assert.equal(state.can_subscribe_other_users, true);
    assert.ok(Array.isArray(state.realm_default_streams));

    const plain = await registerState(s, hamlet.user, {}, ['subscription']);
    assert.equal('subscribers' in plain.subscriptions[0], false);
    assert.equal('streams' in plain, false);

    const adminState = await registerState(s, admin.user, {}, ['stream']);
    assert.ok(names(adminState.streams).includes('Reg hidden'));

    const guestState = await registerState(s, guest.user);
    assert.ok(!names(guestState.streams).includes('Reg never'));
    assert.deepEqual(names(guestState.never_subscribed).filter((n) => n.startsWith('Reg')), []);
    assert.equal(guestState.can_create_public_streams, false);
  });
});
