import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { App } from '../../src/app.js';
import { openDatabase } from '../../src/db/index.js';
import { fetchRealmByStringId } from '../../src/db/repos/realms.js';
import { fetchUserByEmail } from '../../src/db/repos/users.js';
import { doCreateUser } from '../../src/actions/users.js';
import { MESSAGES_REWRITTEN, ReadCache, writtenTables } from '../../src/db/cache.js';
import { RedisCacheRemote } from '../../src/db/cache_remote.js';
import { ApiClient } from '../helpers/client.js';
import { err, ok } from '../helpers/assert.js';
import { forEachDatabase, freshDatabaseUrl, listenApp, OWNER_EMAIL, PASSWORD, testConfig } from '../helpers/server.js';
import { createChannel, systemGroups, uniqueName } from '../api/messages_send.fixtures.js';

/**
 * The read cache (db/cache.ts) serves the organization, the authenticated user, group
 * memberships and channels from memory. Every change must still take effect on the very
 * next request: made through the API, written straight to the database, written by another
 * process (SQLite's data_version; PostgreSQL notifications), and across server processes
 * sharing Redis.
 */

const probeAdmin = (c: ApiClient) => c.post('/users', {});

async function expectAdmin(c: ApiClient, admin: boolean): Promise<void> {
  const res = await probeAdmin(c);
  // POST /users checks the role before its parameters: administrators get the missing parameter.
  if (admin) err(res, 400, 'REQUEST_VARIABLE_MISSING');
  else err(res, 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
}

test('writtenTables names the tables a statement writes', () => {
  assert.deepEqual(writtenTables('select * from "users" where "id" = ?'), []);
  assert.deepEqual(writtenTables('update "users" set "role" = ? where "id" = ?'), ['users']);
  assert.deepEqual(writtenTables('insert into "group_members" ("group_id", "user_id") values (?, ?) on conflict do nothing'), ['group_members']);
  assert.deepEqual(writtenTables('delete from "subscriptions" where "user_id" = ?'), ['subscriptions']);
  assert.deepEqual(writtenTables('INSERT OR IGNORE INTO realms (id) VALUES (1)'), ['realms']);
  assert.deepEqual(writtenTables('WITH x AS (SELECT 1) UPDATE streams SET name = ? WHERE id = ?'), ['streams']);
  // Only updates and deletions of messages can make a topic empty.
  assert.deepEqual(writtenTables('insert into "messages" ("realm_id") values (?)'), ['messages']);
  assert.deepEqual(writtenTables('update "messages" set "topic" = ? where "id" = ?'), ['messages', MESSAGES_REWRITTEN]);
  assert.deepEqual(writtenTables('DELETE FROM messages WHERE id IN (?)'), ['messages', MESSAGES_REWRITTEN]);
  assert.deepEqual(writtenTables('begin'), []);
  assert.deepEqual(writtenTables('commit'), []);
});

test('a value read while a dependency was written is not stored', async () => {
  const cache = new ReadCache();
  let loads = 0;
  const read = (): Promise<number> =>
    cache.get('k', ['users'], async () => {
      loads++;
      // A commit lands while this read is in flight: what it read may be stale.
      if (loads === 1) cache.invalidate(['users']);
      return loads;
    });
  assert.equal(await read(), 1);
  assert.equal(await read(), 2);
  assert.equal(await read(), 2, 'the second read is cached');
  cache.invalidate(['streams']);
  assert.equal(await read(), 2, 'other tables do not matter');
  cache.invalidate(['users']);
  assert.equal(await read(), 3);
  const frozen = await cache.get('obj', [], async () => ({ list: [1] }));
  assert.ok(Object.isFrozen(frozen) && Object.isFrozen(frozen.list), 'cached values are frozen');
});

forEachDatabase('read cache', (server) => {
  test('a role change takes effect on the next request, both ways', async () => {
    const s = server();
    const { owner, othello } = s.cast;
    await expectAdmin(othello.client, false);
    ok(await owner.client.patch(`/users/${othello.user.id}`, { role: 200 }));
    await expectAdmin(othello.client, true);
    ok(await owner.client.patch(`/users/${othello.user.id}`, { role: 400 }));
    await expectAdmin(othello.client, false);
  });

  test('a regenerated API key and a deactivation take effect on the next request', async () => {
    const s = server();
    const realm = s.realm;
    const user = await doCreateUser(s.app.services, realm, { email: `cache-${randomBytes(3).toString('hex')}@example.com`, fullName: 'Cached', password: PASSWORD, actingUser: null });
    const before = s.clientFor(user);
    ok(await before.get('/users/me'));
    const key = ok(await before.post('/users/me/api_key/regenerate')).api_key as string;
    err(await before.get('/users/me'), 401, 'INVALID_API_KEY');
    const after = s.clientFor({ ...user, api_key: key });
    ok(await after.get('/users/me'));
    ok(await s.cast.owner.client.delete(`/users/${user.id}`));
    err(await after.get('/users/me'), 401, 'USER_DEACTIVATED');
  });

  test('group membership and channel permission changes take effect on the next request', async () => {
    const s = server();
    const { owner, hamlet, othello } = s.cast;
    const groupId = ok(await owner.client.post('/user_groups/create', { name: uniqueName('Posters'), description: 'may post', members: [othello.user.id] })).group_id as number;
    const name = uniqueName('Gated');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user], permissions: { can_send_message_group: groupId } });
    const send = (c: ApiClient) => c.post('/messages', { type: 'stream', to: name, topic: 't', content: 'hello' });
    ok(await send(othello.client));
    err(await send(hamlet.client), 400, 'BAD_REQUEST', 'You do not have permission to post in this channel.');
    ok(await owner.client.post(`/user_groups/${groupId}/members`, { add: [hamlet.user.id] }));
    ok(await send(hamlet.client));
    ok(await owner.client.post(`/user_groups/${groupId}/members`, { delete: [hamlet.user.id] }));
    err(await send(hamlet.client), 400, 'BAD_REQUEST', 'You do not have permission to post in this channel.');
    // Written straight to the database, as tests and migrations do.
    const g = await systemGroups(s);
    await s.app.services.db.kysely
      .updateTable('streams')
      .set({ permissions: JSON.stringify({ ...JSON.parse(stream.permissions), can_send_message_group: g['role:everyone'] }) })
      .where('id', '=', stream.id)
      .execute();
    ok(await send(hamlet.client));
  });

  test("register's cached lists (alert words, saved snippets, realm domains, default channels) follow writes at once", async () => {
    const s = server();
    const { hamlet, owner } = s.cast;
    const state = async () =>
      ok(await hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['alert_words', 'saved_snippets', 'realm_domains', 'default_streams']) }));
    const before = await state();
    assert.deepEqual(before.alert_words, []);
    // Through the API, then straight to the database: both must show in the very next register.
    ok(await hamlet.client.post('/users/me/alert_words', { alert_words: JSON.stringify(['kumquat']) }));
    ok(await hamlet.client.post('/saved_snippets', { title: 'hi', content: 'hello' }));
    ok(await owner.client.post('/realm/domains', { domain: 'cached.example.com', allow_subdomains: false }));
    let after = await state();
    assert.deepEqual(after.alert_words, ['kumquat']);
    assert.deepEqual(after.saved_snippets.map((x: { title: string }) => x.title), ['hi']);
    assert.ok(after.realm_domains.some((d: { domain: string }) => d.domain === 'cached.example.com'));
    const channel = await createChannel(s, uniqueName('default'));
    await s.app.services.db.kysely.insertInto('default_streams').values({ realm_id: s.realm.id, stream_id: channel.id }).execute();
    await s.app.services.db.kysely.deleteFrom('alert_words').where('user_id', '=', hamlet.user.id).execute();
    after = await state();
    assert.ok(after.realm_default_streams.includes(channel.id));
    assert.deepEqual(after.alert_words, []);
  });

  test('a change committed by another connection (another process) is seen', async () => {
    const s = server();
    const { othello, owner } = s.cast;
    await expectAdmin(othello.client, false);
    // A second connection to the same database, as the command-line tools open.
    const other = openDatabase(s.config.databaseUrl);
    try {
      await other.kysely.updateTable('users').set({ role: 200 }).where('id', '=', othello.user.id).execute();
      // SQLite reports other connections' commits at once; PostgreSQL notifies within milliseconds.
      const deadline = Date.now() + 5000;
      for (;;) {
        const res = await probeAdmin(othello.client);
        if (res.body.code === 'REQUEST_VARIABLE_MISSING') break;
        assert.ok(s.kind === 'postgres' && Date.now() < deadline, `still not an administrator: ${JSON.stringify(res.body)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await other.close();
    }
    ok(await owner.client.patch(`/users/${othello.user.id}`, { role: 400 }));
    await expectAdmin(othello.client, false);
  });
});

const redisUrl = process.env.TEST_REDIS_URL;
const postgresUrl = process.env.TEST_POSTGRES_URL;
const describeRedis = redisUrl && postgresUrl ? describe : describe.skip;
if (!redisUrl || !postgresUrl) {
  test('read cache across processes through Redis', { skip: 'TEST_REDIS_URL and TEST_POSTGRES_URL are needed' }, () => undefined);
}

/**
 * Two servers with their own caches (as two processes have) sharing PostgreSQL and Redis: a
 * change answered by one is seen by the very next request to the other.
 */
describeRedis('read cache across processes through Redis', () => {
  let a: App;
  let b: App;
  let urlA = '';
  let urlB = '';
  let drop: () => Promise<void> = async () => undefined;
  const dirs: string[] = [];

  async function start(databaseUrl: string, prefix: string): Promise<{ app: App; url: string }> {
    const config = testConfig(databaseUrl, { redisUrl: redisUrl! });
    config.events = { ...config.events, redisPrefix: prefix };
    dirs.push(config.dataDir);
    return listenApp(config);
  }

  before(async () => {
    const db = await freshDatabaseUrl('postgres');
    drop = db.drop;
    const prefix = `parley-cache-test-${randomBytes(4).toString('hex')}:`;
    ({ app: a, url: urlA } = await start(db.url, prefix));
    ({ app: b, url: urlB } = await start(db.url, prefix));
  });

  after(async () => {
    await a?.close();
    await b?.close();
    await drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test('requests arriving together share one read of the generations, never one sent before they arrived', async () => {
    const prefix = `parley-cache-sync-${randomBytes(4).toString('hex')}:`;
    const here = new ReadCache();
    const there = new ReadCache();
    const local = new RedisCacheRemote(redisUrl!, prefix, here);
    const other = new RedisCacheRemote(redisUrl!, prefix, there);
    const redis = (local as unknown as { redis: { hgetall: (key: string) => Promise<unknown> } }).redis;
    const hgetall = redis.hgetall.bind(redis);
    let reads = 0;
    // Holds back the answer to one read (sent, and answered by Redis, at once).
    let hold: Promise<void> | null = null;
    redis.hgetall = (key) => {
      reads++;
      const answer = hgetall(key);
      return hold ? hold.then(() => answer) : answer;
    };
    try {
      let loads = 0;
      const read = (): Promise<number> => here.get('k', ['users'], async () => ++loads);
      await local.sync();
      assert.equal(await read(), 1);
      reads = 0;
      await Promise.all(Array.from({ length: 100 }, () => local.sync()));
      assert.equal(reads, 1, 'one read for a hundred requests of one turn');
      // A read already sent when the other process commits cannot vouch for later requests,
      // even while its answer is still on the way.
      let release = (): void => undefined;
      hold = new Promise((resolve) => (release = resolve));
      const sent = local.sync();
      await new Promise((resolve) => setImmediate(resolve));
      hold = null;
      await other.publish(['users']);
      const later = local.sync();
      release();
      await sent;
      await later;
      assert.equal(reads, 3);
      assert.equal(await read(), 2, 'the commit published before the later request invalidated the value');
    } finally {
      await local.close();
      await other.close();
    }
  });

  test('an API key regenerated and a role changed through one server apply at once on the other', async () => {
    const realm = (await fetchRealmByStringId(a.services.db.kysely, ''))!;
    const owner = (await fetchUserByEmail(a.services.db.kysely, realm.id, OWNER_EMAIL))!;
    const user = await doCreateUser(a.services, realm, { email: 'cached@example.com', fullName: 'Cached', password: PASSWORD, actingUser: null });
    const onA = (key: string) => new ApiClient(urlA, user.email, key);
    const onB = (key: string) => new ApiClient(urlB, user.email, key);

    // Warm the other server's cache with the user as they are now.
    ok(await onB(user.api_key).get('/users/me'));
    await expectAdmin(onB(user.api_key), false);

    const key = ok(await onA(user.api_key).post('/users/me/api_key/regenerate')).api_key as string;
    err(await onB(user.api_key).get('/users/me'), 401, 'INVALID_API_KEY');
    ok(await onB(key).get('/users/me'));

    ok(await new ApiClient(urlA, owner.email, owner.api_key).patch(`/users/${user.id}`, { role: 200 }));
    await expectAdmin(onB(key), true);
    ok(await new ApiClient(urlB, owner.email, owner.api_key).patch(`/users/${user.id}`, { role: 400 }));
    await expectAdmin(onA(key), false);
  });

  test('a topic emptied through one server is started anew by the next message on the other', async () => {
    const realm = (await fetchRealmByStringId(a.services.db.kysely, ''))!;
    const owner = (await fetchUserByEmail(a.services.db.kysely, realm.id, OWNER_EMAIL))!;
    const user = await doCreateUser(a.services, realm, { email: 'starter@example.com', fullName: 'Starter', password: PASSWORD, actingUser: null });
    const ownerOnB = new ApiClient(urlB, owner.email, owner.api_key);
    const userOnA = new ApiClient(urlA, user.email, user.api_key);
    ok(await new ApiClient(urlA, owner.email, owner.api_key).post('/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'cached topics' }]) }));
    ok(await userOnA.post('/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'cached topics' }]) }));
    ok(await userOnA.patch('/settings', { automatically_follow_topics_policy: 3 }));
    const send = async (c: ApiClient) => ok(await c.post('/messages', { type: 'stream', to: 'cached topics', topic: 'emptied', content: 'x' }));
    const first = await send(ownerOnB);
    const reply = await send(userOnA);
    assert.equal(reply.automatic_new_visibility_policy, undefined);
    for (const m of [first, reply]) ok(await ownerOnB.delete(`/messages/${m.id as number}`));
    assert.equal((await send(userOnA)).automatic_new_visibility_policy, 3);
  });

  test('GET /messages on one server renders a linkifier, a channel name and a sender name changed through the other', async () => {
    const realm = (await fetchRealmByStringId(a.services.db.kysely, ''))!;
    const owner = (await fetchUserByEmail(a.services.db.kysely, realm.id, OWNER_EMAIL))!;
    const onA = new ApiClient(urlA, owner.email, owner.api_key);
    const onB = new ApiClient(urlB, owner.email, owner.api_key);
    ok(await onA.post('/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'cached names' }]) }));
    ok(await onA.post('/messages', { type: 'stream', to: 'cached names', topic: 'ticket CACHE-7', content: 'hello' }));
    const newest = async (): Promise<any> => {
      const body = ok(await onB.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0 }));
      return body.messages[0];
    };
    let m = await newest();
    assert.equal(m.display_recipient, 'cached names');
    assert.deepEqual(m.topic_links, []);

    ok(await onA.post('/realm/filters', { pattern: 'CACHE-(?P<id>[0-9]+)', url_template: 'https://tickets.example.com/{id}' }));
    ok(await onA.patch(`/streams/${m.stream_id}`, { new_name: 'renamed names' }));
    ok(await onA.patch(`/users/${owner.id}`, { full_name: 'Renamed Owner' }));
    m = await newest();
    assert.deepEqual(m.topic_links, [{ text: 'CACHE-7', url: 'https://tickets.example.com/7' }]);
    assert.equal(m.display_recipient, 'renamed names');
    assert.equal(m.sender_full_name, 'Renamed Owner');
  });
});
