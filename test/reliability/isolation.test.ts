import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, PASSWORD, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import type { ApiClient, ApiResponse, ParamValue } from '../helpers/client.js';
import { registerQueue } from '../helpers/events.js';
import { collectRoutes, diffSnapshots, snapshotDb, type Snapshot } from '../helpers/fuzz.js';
import { doCreateUser } from '../../src/actions/users.js';
import { doCreateRealm } from '../../src/actions/realms.js';
import { ROLE_MEMBER, ROLE_OWNER } from '../../src/lib/roles.js';
import type { Realm } from '../../src/db/tables.js';
import { OrgClient } from './org_client.js';

/**
 * Two organizations on one server, chosen by host name: the default one (string_id "", the
 * seeded cast) and "zephyr" (zephyr.localhost). Nothing of zephyr's may be visible or
 * changeable from the default organization, by any route; zephyr's IDs used there must get
 * the same answer as IDs that exist nowhere.
 */
const SECRET = 'xyzzyzephyrsecret';
/** Larger than any ID either organization has. */
const NOWHERE = 987654;

interface Zephyr {
  realm: Realm;
  owner: OrgClient;
  member: OrgClient;
  ownerId: number;
  memberId: number;
  ownerEmail: string;
  streamId: number;
  streamName: string;
  messageIds: number[];
  dmId: number;
  groupId: number;
  draftId: number;
  snippetId: number;
  fieldId: number;
  folderId: number;
  scheduledMessageId: number;
  reminderId: number;
}

/**
 * Parameters that make a change on most routes that take a path ID (unknown ones are ignored),
 * so that requests get past "nothing to change" shortcuts to the object lookup.
 */
const CHANGES: Record<string, ParamValue> = {
  title: 'isolation',
  content: 'isolation',
  name: 'isolation name',
  description: 'isolation',
  full_name: 'Isolation',
  new_name: 'isolation',
  topic_name: 'secret plans',
  is_pinned: true,
  property: 'pin_to_top',
  value: true,
  draft: { type: '', to: [], topic: '', content: 'isolation', timestamp: 1700000000 },
  add: [],
  delete: [],
};

/** An answer with the ID written as <id>, so that two answers can be compared. */
function shape(res: ApiResponse, ...ids: (number | string)[]): string {
  let text = JSON.stringify({ status: res.status, body: res.body });
  for (const id of ids) {
    const escaped = String(id).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    text = text.replace(new RegExp(`(?<![0-9A-Za-z])${escaped}(?![0-9A-Za-z])`, 'g'), '<id>');
  }
  return text;
}

/** Rows of zephyr's data (its realm row, users, channels, messages, groups, drafts ...), sorted. */
async function zephyrRows(s: TestServer, z: Zephyr): Promise<Snapshot> {
  const all = await snapshotDb(s.app.services);
  const realmTag = `"realm_id":${z.realm.id}`;
  const userIds = [z.ownerId, z.memberId];
  const mine = (row: string): boolean =>
    row.includes(realmTag) ||
    userIds.some((id) => row.includes(`"user_id":${id},`) || row.includes(`"user_id":${id}}`)) ||
    z.messageIds.some((id) => row.includes(`"message_id":${id},`)) ||
    row.includes(`"stream_id":${z.streamId},`);
  const out: Snapshot = new Map();
  for (const [table, rows] of all) out.set(table, rows.filter(mine));
  assert.ok((out.get('messages') ?? []).length >= z.messageIds.length, "zephyr's messages are missing from the snapshot");
  return out;
}

forEachDatabase('isolation between organizations', (server) => {
  let z: Zephyr;

  before(async () => {
    const s = server();
    const services = s.app.services;
    const realm = await doCreateRealm(services, { stringId: 'zephyr', name: 'Zephyr' });
    const zo = await doCreateUser(services, realm, { email: 'owner@zephyr.example', fullName: 'Zephyr Owner', password: PASSWORD, role: ROLE_OWNER, actingUser: null });
    const zm = await doCreateUser(services, realm, { email: 'member@zephyr.example', fullName: 'Zephyr Member', password: PASSWORD, role: ROLE_MEMBER, actingUser: null });
    const owner = OrgClient.forSubdomain(s.url, 'zephyr', zo.email, zo.api_key);
    const member = OrgClient.forSubdomain(s.url, 'zephyr', zm.email, zm.api_key);
    ok(await owner.post('/users/me/subscriptions', { subscriptions: [{ name: 'zephyr channel' }], principals: [zo.id, zm.id] }));
    const streamId = ok(await owner.get('/get_stream_id', { stream: 'zephyr channel' })).stream_id as number;
    const messageIds: number[] = [];
    for (let i = 0; i < 3; i++) {
      messageIds.push(ok(await member.post('/messages', { type: 'stream', to: streamId, topic: 'secret plans', content: `${SECRET} number ${i}` })).id);
    }
    const dmId = ok(await owner.post('/messages', { type: 'direct', to: [zm.id], content: `${SECRET} direct` })).id as number;
    messageIds.push(dmId);
    ok(await owner.post('/user_groups/create', { name: 'zephyr group', description: SECRET, members: [zo.id, zm.id] }));
    const groups = ok(await owner.get('/user_groups')).user_groups as { id: number; name: string }[];
    const draftIds = ok(await member.post('/drafts', { drafts: [{ type: 'stream', to: [streamId], topic: 'draft', content: SECRET, timestamp: 1700000000 }] })).ids as number[];
    const snippetId = ok(await member.post('/saved_snippets', { title: SECRET, content: SECRET })).saved_snippet_id as number;
    const fieldId = ok(await owner.post('/realm/profile_fields', { name: 'Zephyr field', field_type: 1, hint: SECRET })).id as number;
    const folderId = ok(await owner.post('/channel_folders/create', { name: 'Zephyr folder', description: SECRET })).channel_folder_id as number;
    const later = Math.floor(Date.now() / 1000) + 86400;
    const scheduledMessageId = ok(await member.post('/scheduled_messages', { type: 'stream', to: streamId, topic: 'later', content: SECRET, scheduled_delivery_timestamp: later }))
      .scheduled_message_id as number;
    const reminderId = ok(await member.post('/reminders', { message_id: messageIds[0]!, scheduled_delivery_timestamp: later, note: SECRET })).reminder_id as number;
    z = {
      realm,
      owner,
      member,
      ownerId: zo.id,
      memberId: zm.id,
      ownerEmail: zo.email,
      streamId,
      streamName: 'zephyr channel',
      messageIds,
      dmId,
      groupId: groups.find((g) => g.name === 'zephyr group')!.id,
      draftId: draftIds[0]!,
      snippetId,
      fieldId,
      folderId,
      scheduledMessageId,
      reminderId,
    };
  });

  test('the host name selects the organization; keys work only on their own host', async () => {
    const s = server();
    const settings = ok(await z.member.get('/server_settings'));
    assert.equal(settings.realm_name, 'Zephyr');
    assert.match(settings.realm_uri ?? settings.realm_url, /^http:\/\/zephyr\.localhost:\d+$/);
    assert.equal(ok(await z.member.get('/users/me')).user_id, z.memberId);
    // Each organization's credentials on the other's host: unknown there.
    const zephyrKeyHere = await new OrgClient(s.url, z.member.email, z.member.apiKey, `localhost:${new URL(s.url).port}`).get('/users/me');
    assert.equal(zephyrKeyHere.status, 401);
    const hamlet = s.cast.hamlet.user;
    const defaultKeyThere = await OrgClient.forSubdomain(s.url, 'zephyr', hamlet.email, hamlet.api_key).get('/users/me');
    assert.equal(defaultKeyThere.status, 401);
    // A subdomain no organization has.
    const nowhere = await OrgClient.forSubdomain(s.url, 'nowhere', hamlet.email, hamlet.api_key).get('/users/me');
    assert.equal(nowhere.status, 404);
    assert.equal(nowhere.body.code, 'NONEXISTENT_SUBDOMAIN');
    // fetch_api_key with zephyr's password on the default host.
    const fetched = await s.anonymous.post('/fetch_api_key', { username: z.member.email!, password: PASSWORD });
    assert.equal(fetched.status, 401);
  });

  test('lists never show the other organization: users, channels, groups, drafts, snippets, fields, messages', async () => {
    const s = server();
    for (const client of [s.cast.owner.client, s.cast.hamlet.client, s.cast.guest.client]) {
      const text = JSON.stringify([
        (await client.get('/users', { include_custom_profile_fields: true })).body,
        (await client.get('/streams', { include_all: true, include_public: true })).body,
        (await client.get('/user_groups')).body,
        (await client.get('/drafts')).body,
        (await client.get('/saved_snippets')).body,
        (await client.get('/realm/profile_fields')).body,
        (await client.get('/messages', { anchor: 'newest', num_before: 100, num_after: 0 })).body,
        (await client.get('/users/me/subscriptions')).body,
        (await client.get('/realm/presence')).body,
        (await client.get('/channel_folders', { include_archived: true })).body,
        (await client.get('/scheduled_messages')).body,
        (await client.get('/reminders')).body,
      ]);
      for (const leak of [SECRET, 'zephyr', z.ownerEmail]) assert.ok(!text.includes(leak), `${client.email} sees ${leak}: ${text.slice(text.indexOf(leak) - 200, text.indexOf(leak) + 100)}`);
    }
    const register = JSON.stringify(ok(await s.cast.owner.client.post('/register', {})));
    assert.ok(!register.includes(SECRET) && !register.includes('zephyr'), 'POST /register shows the other organization');
  });

  test('search, narrows and matches_narrow find nothing of the other organization', async () => {
    const s = server();
    const c = s.cast.owner.client;
    const narrows: { operator: string; operand: ParamValue }[][] = [
      [{ operator: 'search', operand: SECRET }],
      [{ operator: 'channel', operand: z.streamId }],
      [{ operator: 'channel', operand: z.streamName }],
      [{ operator: 'sender', operand: z.memberId }],
      [{ operator: 'dm', operand: [z.memberId] }],
      [{ operator: 'dm-including', operand: z.memberId }],
      [{ operator: 'id', operand: z.messageIds[0]! }],
      [{ operator: 'channels', operand: 'public' }, { operator: 'search', operand: SECRET }],
    ];
    for (const narrow of narrows) {
      const res = await c.get('/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow });
      if (res.status === 200) assert.deepEqual(res.body.messages, [], `narrow ${JSON.stringify(narrow)}`);
      const text = JSON.stringify(res.body);
      assert.ok(!text.includes(SECRET), `narrow ${JSON.stringify(narrow)} leaks: ${text.slice(0, 500)}`);
    }
    // Message IDs from zephyr: as if they did not exist.
    for (const id of z.messageIds) {
      assert.equal(shape(await c.get(`/messages/${id}`), id), shape(await c.get(`/messages/${NOWHERE}`), NOWHERE));
      assert.equal(
        shape(await c.get('/messages', { message_ids: [id], narrow: [] }), id),
        shape(await c.get('/messages', { message_ids: [NOWHERE], narrow: [] }), NOWHERE),
      );
      assert.equal(
        shape(await c.get('/messages/matches_narrow', { msg_ids: [id], narrow: [] }), id),
        shape(await c.get('/messages/matches_narrow', { msg_ids: [NOWHERE], narrow: [] }), NOWHERE),
      );
      assert.equal(
        shape(await c.get('/messages/matches_narrow', { msg_ids: [id], narrow: [{ operator: 'search', operand: SECRET }] }), id),
        shape(await c.get('/messages/matches_narrow', { msg_ids: [NOWHERE], narrow: [{ operator: 'search', operand: SECRET }] }), NOWHERE),
      );
    }
  });

  test("every route with a path ID: the other organization's IDs answer exactly like IDs that exist nowhere, and change nothing", async () => {
    const s = server();
    const routes = (await collectRoutes(s.app.services)).filter((r) => /:[a-z_]+/.test(r.path) && r.prefixes.includes('/api/v1') && r.method !== 'HEAD');
    const idOf: Record<string, number> = {
      user_id: z.memberId,
      user_id_or_email: z.memberId,
      stream_id: z.streamId,
      message_id: z.messageIds[0]!,
      user_group_id: z.groupId,
      draft_id: z.draftId,
      saved_snippet_id: z.snippetId,
      field_id: z.fieldId,
      channel_folder_id: z.folderId,
      scheduled_message_id: z.scheduledMessageId,
      reminder_id: z.reminderId,
    };
    const before = await zephyrRows(s, z);
    const checked: string[] = [];
    for (const route of routes) {
      const names = [...route.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1]!);
      if (!names.some((n) => n in idOf)) continue;
      for (const caller of [s.cast.owner.client, s.cast.hamlet.client]) {
        const foreign = route.path.replace(/:([a-z_]+)/g, (_m, n: string) => String(idOf[n] ?? NOWHERE));
        const nowhere = route.path.replace(/:([a-z_]+)/g, () => String(NOWHERE));
        const body = route.method === 'GET' ? {} : CHANGES;
        const a = await caller.request(route.method, foreign, body);
        const b = await caller.request(route.method, nowhere, body);
        const ids = Object.values(idOf);
        assert.equal(shape(a, ...ids), shape(b, NOWHERE), `${route.method} ${foreign} vs ${nowhere} as ${caller.email}`);
      }
      checked.push(`${route.method} ${route.path}`);
    }
    assert.ok(checked.length >= 20, `only ${checked.length} routes checked`);
    assert.deepEqual(diffSnapshots(before, await zephyrRows(s, z)), []);
  });

  test("IDs and names of the other organization in parameters: refused like nonexistent ones, nothing changed", async () => {
    const s = server();
    const c: ApiClient = s.cast.owner.client;
    const before = await zephyrRows(s, z);
    const pairs: [string, string, (id: number | string) => Record<string, ParamValue>, number | string, number | string][] = [
      ['POST', '/messages', (id) => ({ type: 'direct', to: [id], content: 'hi' }), z.memberId, NOWHERE],
      ['POST', '/messages', (id) => ({ type: 'direct', to: JSON.stringify([id]), content: 'hi' }), z.ownerEmail, 'nobody@zephyr.example'],
      ['POST', '/messages', (id) => ({ type: 'stream', to: id, topic: 't', content: 'hi' }), z.streamId, NOWHERE],
      ['POST', '/messages/flags', (id) => ({ messages: [id], op: 'add', flag: 'starred' }), z.messageIds[0]!, NOWHERE],
      ['POST', '/users/me/subscriptions', (id) => ({ subscriptions: [{ name: 'isolation check' }], principals: [id] }), z.memberId, NOWHERE],
      ['DELETE', '/users/me/subscriptions', (id) => ({ subscriptions: ['isolation check'], principals: [id] }), z.memberId, NOWHERE],
      ['POST', '/user_groups/create', (id) => ({ name: `iso ${id}`, description: 'x', members: [id] }), z.memberId, NOWHERE],
      ['POST', '/user_groups/create', (id) => ({ name: 'iso subgroups', description: 'x', members: [], subgroups: [id] }), z.groupId, NOWHERE],
      ['POST', '/drafts', (id) => ({ drafts: [{ type: 'stream', to: [id], topic: 't', content: 'x', timestamp: 1700000000 }] }), z.streamId, NOWHERE],
      ['POST', '/drafts', (id) => ({ drafts: [{ type: 'private', to: [id], topic: '', content: 'x', timestamp: 1700000000 }] }), z.memberId, NOWHERE],
      ['POST', '/user_topics', (id) => ({ stream_id: id, topic: 'secret plans', visibility_policy: 1 }), z.streamId, NOWHERE],
      ['POST', '/mark_stream_as_read', (id) => ({ stream_id: id }), z.streamId, NOWHERE],
      ['POST', '/mark_topic_as_read', (id) => ({ stream_id: id, topic_name: 'secret plans' }), z.streamId, NOWHERE],
      ['POST', '/typing', (id) => ({ op: 'start', to: [id] }), z.memberId, NOWHERE],
      ['POST', '/typing', (id) => ({ op: 'start', type: 'stream', stream_id: id, topic: 'secret plans' }), z.streamId, NOWHERE],
      ['POST', '/default_streams', (id) => ({ stream_id: id }), z.streamId, NOWHERE],
      ['GET', '/get_stream_id', (id) => ({ stream: id }), z.streamName, 'no such channel'],
      ['PATCH', '/users/me/subscriptions/muted_topics', (id) => ({ stream: id, topic: 'secret plans', op: 'add' }), z.streamName, 'no such channel'],
      ['PATCH', '/realm', (id) => ({ can_create_groups: JSON.stringify({ new: id }) }), z.groupId, NOWHERE],
      ['POST', '/invites', (id) => ({ invitee_emails: 'iso@example.com', stream_ids: [id] }), z.streamId, NOWHERE],
      ['POST', '/invites', (id) => ({ invitee_emails: 'iso2@example.com', stream_ids: [], group_ids: [id] }), z.groupId, NOWHERE],
      ['POST', '/fetch_api_key', (id) => ({ username: id, password: PASSWORD }), z.ownerEmail, 'nobody@zephyr.example'],
      ['POST', '/users/me/subscriptions', (id) => ({ subscriptions: [{ name: 'isolation folder' }], folder_id: id }), z.folderId, NOWHERE],
      ['PATCH', '/channel_folders', (id) => ({ order: [id] }), z.folderId, NOWHERE],
      ['POST', '/scheduled_messages', (id) => ({ type: 'stream', to: id, topic: 't', content: 'x', scheduled_delivery_timestamp: 4102444800 }), z.streamId, NOWHERE],
      ['POST', '/scheduled_messages', (id) => ({ type: 'direct', to: [id], content: 'x', scheduled_delivery_timestamp: 4102444800 }), z.memberId, NOWHERE],
      ['POST', '/reminders', (id) => ({ message_id: id, scheduled_delivery_timestamp: 4102444800 }), z.messageIds[0]!, NOWHERE],
    ];
    for (const [method, path, params, foreign, nowhere] of pairs) {
      if (!s.app.fastify.hasRoute({ method: method as 'GET', url: `/api/v1${path}` })) continue;
      const a = await c.request(method, path, params(foreign));
      const b = await c.request(method, path, params(nowhere));
      assert.equal(shape(a, foreign), shape(b, nowhere), `${method} ${path} with ${foreign} vs ${nowhere}`);
    }
    assert.deepEqual(diffSnapshots(before, await zephyrRows(s, z)), []);
  });

  test("events: a queue in one organization receives nothing of the other's activity", async () => {
    const s = server();
    const queue = await registerQueue(s.cast.owner.client, {});
    const watcher = await registerQueue(s.cast.hamlet.client, { all_public_streams: true });
    // Activity in zephyr of every kind the default organization's queues could be told about.
    ok(await z.member.post('/messages', { type: 'stream', to: z.streamId, topic: 'more plans', content: `${SECRET} event` }));
    ok(await z.owner.post('/users/me/subscriptions', { subscriptions: [{ name: 'zephyr new channel' }] }));
    ok(await z.owner.patch(`/user_groups/${z.groupId}`, { description: `${SECRET} changed` }));
    ok(await z.owner.patch('/realm', { description: `${SECRET} realm` }));
    ok(await z.member.patch('/settings', { full_name: 'Zephyr Renamed' }));
    ok(await z.owner.post('/users/me/presence', { status: 'active' }));
    ok(await z.owner.post('/typing', { op: 'start', to: [z.memberId] }));
    ok(await z.owner.patch(`/channel_folders/${z.folderId}`, { description: `${SECRET} folder` }));
    // Then something in the default organization, so we know the queues are delivering.
    ok(await s.cast.owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'isolation marker' }] }));
    const marker = (e: { type: string; op?: string; streams?: { name: string }[] }) =>
      e.type === 'stream' && e.op === 'create' && !!e.streams?.some((x) => x.name === 'isolation marker');
    for (const q of [queue, watcher]) {
      const events = await q.upTo(marker);
      const text = JSON.stringify(events);
      for (const leak of [SECRET, 'zephyr', 'Zephyr']) assert.ok(!text.includes(leak), `event leak (${leak}): ${text.slice(0, 800)}`);
    }
    await queue.delete();
    await watcher.delete();
  });

  test("a queue ID of the other organization is unknown here", async () => {
    const s = server();
    const theirs = ok(await z.owner.post('/register', { event_types: ['message'] })).queue_id as string;
    const c = s.cast.owner.client;
    const a = await c.get('/events', { queue_id: theirs, last_event_id: -1, dont_block: true });
    const b = await c.get('/events', { queue_id: 'no-such-queue', last_event_id: -1, dont_block: true });
    assert.equal(shape(a, theirs), shape(b, 'no-such-queue'));
    const d = await c.delete('/events', { queue_id: theirs });
    assert.equal(d.status, 400);
    assert.ok(ok(await z.owner.get('/events', { queue_id: theirs, last_event_id: -1, dont_block: true })));
  });
});
