import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, PASSWORD, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertMatchesComponent } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { doCreateUser, doSetSpecialPermission, syncEmailVisibility } from '../../src/actions/users.js';
import { transaction } from '../../src/db/index.js';
import { doCreateRealm } from '../../src/actions/realms.js';
import { fetchUserById, updateUserRow } from '../../src/db/repos/users.js';
import { gravatarHash } from '../../src/lib/avatar.js';
import { ROLE_ADMINISTRATOR, ROLE_GUEST, ROLE_MEMBER, ROLE_MODERATOR, ROLE_OWNER } from '../../src/lib/roles.js';
import type { User } from '../../src/db/tables.js';

let counter = 0;
/** A fresh member for tests that change or deactivate users, so the seeded cast stays intact. */
async function freshUser(s: TestServer, role = ROLE_MEMBER, extra: { isBot?: boolean; botOwnerId?: number } = {}): Promise<User> {
  counter += 1;
  const name = `${extra.isBot ? 'bot' : 'user'}${counter}-${s.kind}`;
  return doCreateUser(s.app.services, s.realm, {
    email: `${name}@example.com`,
    fullName: `Fresh ${name}`,
    password: PASSWORD,
    role,
    actingUser: null,
    ...extra,
  });
}

async function reload(s: TestServer, id: number): Promise<User> {
  return (await fetchUserById(s.app.services.db.kysely, s.realm.id, id))!;
}

/** Sets a user's email_address_visibility the way the settings area does, then syncs the API email. */
async function setVisibility(s: TestServer, userId: number, visibility: number): Promise<User> {
  const services = s.app.services;
  await transaction(services.db, async (tx, afterCommit) => {
    const before = (await fetchUserById(tx, s.realm.id, userId))!;
    const settings = { ...JSON.parse(before.settings), email_address_visibility: visibility };
    await updateUserRow(tx, userId, { settings: JSON.stringify(settings) });
    await syncEmailVisibility(services, tx, afterCommit, s.realm, [before]);
  });
  return reload(s, userId);
}

const USER_KEYS = [
  'avatar_url', 'avatar_version', 'bot_type', 'date_joined', 'delivery_email', 'email', 'full_name', 'is_active',
  'is_admin', 'is_bot', 'is_guest', 'is_imported_stub', 'is_owner', 'role', 'timezone', 'user_id',
];

forEachDatabase('users', (server) => {
  test('GET /users/{user_id} returns every field of the User object', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const res = await othello.client.get(`/users/${hamlet.user.id}`, { client_gravatar: false });
    const body = ok(res);
    assertConforms(res, 'GET', '/users/{user_id}');
    assertMatchesComponent(body.user, 'User');
    const u = body.user;
    assert.deepEqual(Object.keys(u).sort(), USER_KEYS);
    assert.equal(u.user_id, hamlet.user.id);
    assert.equal(u.email, 'hamlet@example.com');
    assert.equal(u.delivery_email, 'hamlet@example.com');
    assert.equal(u.full_name, 'King Hamlet');
    assert.equal(u.role, ROLE_MEMBER);
    assert.equal(u.is_admin, false);
    assert.equal(u.is_owner, false);
    assert.equal(u.is_guest, false);
    assert.equal(u.is_bot, false);
    assert.equal(u.bot_type, null);
    assert.equal(u.is_active, true);
    assert.equal(u.is_imported_stub, false);
    assert.equal(u.timezone, '');
    assert.equal(u.avatar_version, 1);
    assert.match(u.date_joined, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}\+00:00$/);
    assert.equal(u.avatar_url, `https://secure.gravatar.com/avatar/${gravatarHash('hamlet@example.com')}?d=identicon&version=1`);
    assert.equal('profile_data' in u, false);
    assert.equal('is_deleted' in u, false);
  });

  test('client_gravatar (and client_extavatar) default to true: Gravatar avatars come back null', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    assert.equal(ok(await othello.client.get(`/users/${hamlet.user.id}`)).user.avatar_url, null);
    assert.equal(ok(await othello.client.get(`/users/${hamlet.user.id}`, { client_gravatar: true })).user.avatar_url, null);
    assert.match(ok(await othello.client.get(`/users/${hamlet.user.id}`, { client_extavatar: false })).user.avatar_url, /^https:\/\/secure\.gravatar\.com/);
    const res = await othello.client.get(`/users/${hamlet.user.id}`, { client_extavatar: true, client_gravatar: false });
    // Both names accepted; the canonical one wins when both are sent.
    assert.match(ok(res).user.avatar_url, /gravatar/);
    err(await othello.client.get(`/users/${hamlet.user.id}`, { client_gravatar: 'yes' }), 400, 'BAD_REQUEST', 'client_gravatar is not a boolean');
  });

  test('bots: real delivery_email always, bot_type and bot_owner_id, no profile_data', async () => {
    const s = server();
    const { bot, guest, hamlet } = s.cast;
    const res = await guest.client.get(`/users/${bot.user.id}`, { include_custom_profile_fields: true });
    const u = ok(res).user;
    assertConforms(res, 'GET', '/users/{user_id}');
    assert.equal(u.is_bot, true);
    assert.equal(u.bot_type, 1);
    assert.equal(u.bot_owner_id, hamlet.user.id);
    assert.equal(u.delivery_email, bot.user.delivery_email);
    assert.equal(u.email, bot.user.delivery_email);
    assert.equal('profile_data' in u, false);
  });

  test('include_custom_profile_fields adds profile_data for humans', async () => {
    const s = server();
    const u = ok(await s.cast.othello.client.get(`/users/${s.cast.hamlet.user.id}`, { include_custom_profile_fields: true })).user;
    assert.deepEqual(u.profile_data, {});
  });

  test('unknown, other-shaped and deactivated targets', async () => {
    const s = server();
    const c = s.cast.hamlet.client;
    err(await c.get('/users/987654'), 400, 'BAD_REQUEST', 'No such user');
    err(await c.get('/users/99999999999999999999'), 400, 'BAD_REQUEST', 'No such user');
    err(await c.get('/users/notanid'), 404, 'NOT_FOUND');
    err(await c.get('/users/nobody@example.com'), 400, 'BAD_REQUEST', 'No such user');
    const gone = await freshUser(s);
    ok(await s.cast.admin.client.delete(`/users/${gone.id}`));
    const res = await c.get(`/users/${gone.id}`);
    assert.equal(ok(res).user.is_active, false);
    assertConforms(res, 'GET', '/users/{user_id}');
  });

  test('GET /users/{email} finds users by real email or by their dummy address', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const res = await othello.client.get(`/users/${encodeURIComponent('Hamlet@Example.com')}`);
    assertConforms(res, 'GET', '/users/{email}');
    assert.equal(ok(res).user.user_id, hamlet.user.id);
    const host = new URL(s.config.externalUrl).hostname;
    assert.equal(ok(await othello.client.get(`/users/user${hamlet.user.id}@${host}`)).user.user_id, hamlet.user.id);
    assert.equal(ok(await othello.client.get(`/users/${s.cast.bot.user.email}`)).user.user_id, s.cast.bot.user.id);
  });

  test('GET /users lists every user, with user_ids and include_custom_profile_fields', async () => {
    const s = server();
    const res = await s.cast.guest.client.get('/users', { client_gravatar: false });
    const body = ok(res);
    assertConforms(res, 'GET', '/users');
    const ids = body.members.map((m: { user_id: number }) => m.user_id);
    for (const m of Object.values(s.cast)) assert.ok(ids.includes(m.user.id));
    assert.deepEqual(ids, [...ids].sort((a: number, b: number) => a - b));
    for (const m of body.members) assert.equal('profile_data' in m, false);
    const some = ok(await s.cast.hamlet.client.get('/users', { user_ids: [s.cast.othello.user.id, s.cast.bot.user.id, 424242], include_custom_profile_fields: true }));
    assert.deepEqual(some.members.map((m: { user_id: number }) => m.user_id), [s.cast.othello.user.id, s.cast.bot.user.id]);
    assert.deepEqual(some.members[0].profile_data, {});
    assert.equal('profile_data' in some.members[1], false);
    err(await s.cast.hamlet.client.get('/users', { user_ids: 'x' }), 400, 'BAD_REQUEST', 'Argument "user_ids" is not valid JSON.');
  });

  test('GET /users/me returns the caller with max_message_id and profile_data', async () => {
    const s = server();
    const res = await s.cast.hamlet.client.get('/users/me');
    const body = ok(res);
    assertConforms(res, 'GET', '/users/me');
    assert.equal(body.user_id, s.cast.hamlet.user.id);
    assert.equal(body.email, 'hamlet@example.com');
    assert.equal(body.delivery_email, 'hamlet@example.com');
    assert.equal(body.full_name, 'King Hamlet');
    assert.equal(body.max_message_id, -1);
    assert.deepEqual(body.profile_data, {});
    assert.match(body.avatar_url, /^https:\/\/secure\.gravatar\.com/);
    const bot = ok(await s.cast.bot.client.get('/users/me'));
    assert.equal(bot.is_bot, true);
    assert.equal('profile_data' in bot, false);
  });

  test('email visibility: fake API emails, delivery_email by role, lookups that never leak', async () => {
    const s = server();
    const { owner, admin, moderator, othello, guest } = s.cast;
    const target = await freshUser(s);
    const host = new URL(s.config.externalUrl).hostname;
    const dummy = `user${target.id}@${host}`;
    const { result: updated, events } = await captureEvents(s, () => setVisibility(s, target.id, 3));
    assert.equal(updated.email, dummy);
    assert.equal(updated.delivery_email, target.delivery_email);
    const newEmail = events.find((e) => (e.event.person as any)?.new_email);
    assert.deepEqual(newEmail!.event, { type: 'realm_user', op: 'update', person: { user_id: target.id, new_email: dummy } });
    const lost = events.find((e) => (e.event.person as any)?.delivery_email === null);
    assert.ok(lost, 'members lose sight of the real email');
    assert.ok(recipientIds(lost!).includes(othello.user.id));
    assert.ok(!recipientIds(lost!).includes(admin.user.id));

    const asOthello = ok(await othello.client.get(`/users/${target.id}`)).user;
    assert.equal(asOthello.email, dummy);
    assert.equal(asOthello.delivery_email, null);
    // A client cannot compute a Gravatar URL from a fake email.
    assert.match(asOthello.avatar_url, /^https:\/\/secure\.gravatar\.com/);
    const asAdmin = ok(await admin.client.get(`/users/${target.id}`)).user;
    assert.equal(asAdmin.email, dummy);
    assert.equal(asAdmin.delivery_email, target.delivery_email);
    assert.equal(ok(await moderator.client.get(`/users/${target.id}`)).user.delivery_email, null);
    // The real address finds the user only for those allowed to see it.
    err(await othello.client.get(`/users/${target.delivery_email}`), 400, 'BAD_REQUEST', 'No such user');
    assert.equal(ok(await admin.client.get(`/users/${target.delivery_email}`)).user.user_id, target.id);
    assert.equal(ok(await othello.client.get(`/users/${dummy}`)).user.user_id, target.id);
    // The fake address is the API email: it authenticates.
    ok(await s.clientFor(await reload(s, target.id)).get('/users/me'));
    const me = ok(await s.clientFor(updated).get('/users/me'));
    assert.equal(me.email, dummy);
    assert.equal(me.delivery_email, target.delivery_email);

    await setVisibility(s, target.id, 5);
    assert.equal(ok(await moderator.client.get(`/users/${target.id}`)).user.delivery_email, target.delivery_email);
    assert.equal(ok(await othello.client.get(`/users/${target.id}`)).user.delivery_email, null);
    await setVisibility(s, target.id, 4);
    assert.equal(ok(await owner.client.get(`/users/${target.id}`)).user.delivery_email, null);
    await setVisibility(s, target.id, 2);
    assert.equal(ok(await othello.client.get(`/users/${target.id}`)).user.delivery_email, target.delivery_email);
    assert.equal(ok(await guest.client.get(`/users/${target.id}`)).user.delivery_email, null);
    const back = await setVisibility(s, target.id, 1);
    assert.equal(back.email, target.delivery_email);
    assert.equal(ok(await guest.client.get(`/users/${target.id}`)).user.delivery_email, target.delivery_email);
  });

  test('POST /users: administrators holding can_create_users, with Zulip errors', async () => {
    const s = server();
    const { admin, hamlet } = s.cast;
    const params = { email: `new-${s.kind}@example.com`, password: 'a-new-secret', full_name: 'New Person' };
    err(await hamlet.client.post('/users', params), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    err(await hamlet.client.post('/users', {}), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    err(await admin.client.post('/users', params), 400, 'BAD_REQUEST', 'User not authorized to create users');
    await doSetSpecialPermission(s.app.services, s.realm, admin.user, 'can_create_users', true);
    const missing = err(await admin.client.post('/users', { email: params.email, full_name: 'x' }), 400, 'REQUEST_VARIABLE_MISSING');
    assert.equal(missing.var_name, 'password');
    err(await admin.client.post('/users', { ...params, email: 'not-an-email' }), 400, 'BAD_REQUEST', 'Bad name or username');
    err(await admin.client.post('/users', { ...params, password: 'abc' }), 400, 'BAD_REQUEST', 'The password is too weak.');
    err(await admin.client.post('/users', { ...params, full_name: '  ' }), 400, 'BAD_REQUEST', 'Name must not be empty!');
    err(await admin.client.post('/users', { ...params, full_name: 'a'.repeat(101) }), 400, 'BAD_REQUEST', 'Name too long!');
    err(await admin.client.post('/users', { ...params, full_name: 'Bad*Name' }), 400, 'BAD_REQUEST', 'Invalid characters in name!');
    err(await admin.client.post('/users', { ...params, email: 'HAMLET@example.com' }), 400, 'BAD_REQUEST', "Email 'HAMLET@example.com' already in use");

    const { result, events } = await captureEvents(s, () => admin.client.post('/users', params, 'multipart'));
    const body = ok(result);
    assertConforms(result, 'POST', '/users');
    assert.equal(typeof body.user_id, 'number');
    const add = events.find((e) => e.event.type === 'realm_user' && e.event.op === 'add')!;
    assert.ok(add);
    assertMatchesComponent(add.event.person, 'User');
    assert.equal((add.event.person as any).user_id, body.user_id);
    assert.equal((add.event.person as any).email, params.email);
    assert.deepEqual((add.event.person as any).profile_data, {});
    assert.ok(recipientIds(add).includes(hamlet.user.id));
    assert.ok(recipientIds(add).includes(body.user_id));
    assert.ok(events.some((e) => e.event.type === 'user_group' && e.event.op === 'add_members'));
    const login = ok(await s.anonymous.post('/fetch_api_key', { username: params.email, password: params.password }));
    assert.equal(login.user_id, body.user_id);
    const created = ok(await hamlet.client.get(`/users/${body.user_id}`)).user;
    assert.equal(created.full_name, 'New Person');
    assert.equal(created.role, ROLE_MEMBER);
    await doSetSpecialPermission(s.app.services, s.realm, admin.user, 'can_create_users', false);
  });

  test('DELETE /users/{user_id} deactivates; the key stops working at once', async () => {
    const s = server();
    const { admin, hamlet, owner } = s.cast;
    const target = await freshUser(s);
    const targetClient = s.clientFor(target);
    ok(await targetClient.get('/users/me'));
    err(await hamlet.client.delete(`/users/${target.id}`), 400, 'BAD_REQUEST', 'Insufficient permission');
    const { result, events } = await captureEvents(s, () => admin.client.delete(`/users/${target.id}`));
    ok(result);
    assertConforms(result, 'DELETE', '/users/{user_id}');
    const upd = events.find((e) => e.event.type === 'realm_user')!;
    assert.deepEqual(upd.event, { type: 'realm_user', op: 'update', person: { user_id: target.id, is_active: false } });
    assert.ok(recipientIds(upd).includes(hamlet.user.id));
    assert.ok(!recipientIds(upd).includes(target.id));
    err(await targetClient.get('/users/me'), 401, 'USER_DEACTIVATED', 'Account is deactivated');
    err(await s.anonymous.post('/fetch_api_key', { username: target.delivery_email, password: PASSWORD }), 401, 'USER_DEACTIVATED');
    err(await admin.client.delete(`/users/${target.id}`), 400, 'BAD_REQUEST', 'User is deactivated');
    err(await admin.client.delete(`/users/${s.cast.bot.user.id}`), 400, 'BAD_REQUEST', 'No such user');
    err(await admin.client.delete(`/users/${owner.user.id}`), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    const last = err(await owner.client.delete(`/users/${owner.user.id}`), 400, 'BAD_REQUEST', 'Cannot deactivate the only organization owner');
    assertConforms({ status: 400, headers: new Headers(), body: last }, 'DELETE', '/users/{user_id}');
    err(await admin.client.delete('/users/987654'), 400, 'BAD_REQUEST', 'No such user');
    err(await admin.client.delete(`/users/${encodeURIComponent(hamlet.user.email)}`), 404, 'NOT_FOUND');
  });

  test('deactivating a user deactivates their bots first', async () => {
    const s = server();
    const human = await freshUser(s);
    const bot = await freshUser(s, ROLE_MEMBER, { isBot: true, botOwnerId: human.id });
    const { events } = await captureEvents(s, () => s.cast.admin.client.delete(`/users/${human.id}`));
    const order = events.filter((e) => e.event.type === 'realm_user').map((e) => (e.event.person as any).user_id);
    assert.deepEqual(order, [bot.id, human.id]);
    assert.equal((await reload(s, bot.id)).is_active, 0);
    err(await s.clientFor(bot).get('/users/me'), 401, 'USER_DEACTIVATED');
  });

  test('POST /users/{user_id}/reactivate', async () => {
    const s = server();
    const { admin, hamlet } = s.cast;
    const target = await freshUser(s);
    err(await admin.client.post(`/users/${target.id}/reactivate`), 400, 'BAD_REQUEST', 'User is already active.');
    ok(await admin.client.delete(`/users/${target.id}`));
    err(await hamlet.client.post(`/users/${target.id}/reactivate`), 400, 'BAD_REQUEST', 'Insufficient permission');
    const { result, events } = await captureEvents(s, () => admin.client.post(`/users/${target.id}/reactivate`));
    ok(result);
    assertConforms(result, 'POST', '/users/{user_id}/reactivate');
    const upd = events.find((e) => e.event.type === 'realm_user')!;
    assert.deepEqual(upd.event.person, { user_id: target.id, is_active: true });
    assert.ok(recipientIds(upd).includes(target.id));
    ok(await s.clientFor(target).get('/users/me'));
    err(await admin.client.post('/users/987654/reactivate'), 400, 'BAD_REQUEST', 'No such user');
  });

  test('DELETE /users/me: the last owner and the last user cannot leave', async () => {
    const s = server();
    const res = await s.cast.owner.client.delete('/users/me');
    const body = err(res, 400, 'CANNOT_DEACTIVATE_LAST_USER', 'Cannot deactivate the only organization owner');
    assert.equal(body.is_last_owner, true);
    assert.equal(body.entity, 'organization owner');
    assertConforms(res, 'DELETE', '/users/me');
    const leaver = await freshUser(s);
    const client = s.clientFor(leaver);
    const done = await client.delete('/users/me');
    ok(done);
    assertConforms(done, 'DELETE', '/users/me');
    err(await client.get('/users/me'), 401, 'USER_DEACTIVATED');
  });

  test('DELETE /users/me: the only user of an organization cannot leave either', async () => {
    const s = server();
    const realm = await doCreateRealm(s.app.services, { stringId: `solo${s.kind}`, name: 'Solo' });
    const only = await doCreateUser(s.app.services, realm, { email: 'only@example.com', fullName: 'Only One', password: PASSWORD, role: ROLE_OWNER, actingUser: null });
    const host = `solo${s.kind}.${new URL(s.config.externalUrl).host}`;
    // fetch() does not let a request choose its Host header; inject() does.
    const reply = await s.app.fastify.inject({
      method: 'DELETE',
      url: '/api/v1/users/me',
      headers: { host, authorization: `Basic ${Buffer.from(`${only.email}:${only.api_key}`).toString('base64')}` },
    });
    const res = { status: reply.statusCode, headers: new Headers(), body: reply.json() };
    const body = err(res, 400, 'CANNOT_DEACTIVATE_LAST_USER', 'Cannot deactivate the only user');
    assert.equal(body.is_last_owner, false);
    assert.equal(body.entity, 'user');
    assertConforms(res, 'DELETE', '/users/me');
  });

  test('PATCH /users/{user_id}: names, roles and their rules, with events', async () => {
    const s = server();
    const { admin, owner, hamlet } = s.cast;
    const target = await freshUser(s);
    err(await hamlet.client.patch(`/users/${target.id}`, { full_name: 'Nope' }), 400, 'BAD_REQUEST', 'Insufficient permission');
    const renamed = await captureEvents(s, () => admin.client.patch(`/users/${target.id}`, { full_name: '  Renamed Person ' }));
    ok(renamed.result);
    assertConforms(renamed.result, 'PATCH', '/users/{user_id}');
    assert.deepEqual(renamed.events.map((e) => e.event), [{ type: 'realm_user', op: 'update', person: { user_id: target.id, full_name: 'Renamed Person' } }]);
    assert.equal((await reload(s, target.id)).full_name, 'Renamed Person');
    // A blank name is ignored, as in Zulip.
    ok(await admin.client.patch(`/users/${target.id}`, { full_name: '   ' }));
    err(await admin.client.patch(`/users/${target.id}`, { full_name: 'x|12' }), 400, 'BAD_REQUEST', 'Invalid format!');

    const promoted = await captureEvents(s, () => admin.client.patch(`/users/${target.id}`, { role: ROLE_MODERATOR }));
    ok(promoted.result);
    const roleEvent = promoted.events.find((e) => e.event.type === 'realm_user')!;
    assert.deepEqual(roleEvent.event.person, { user_id: target.id, role: ROLE_MODERATOR });
    const ops = promoted.events.filter((e) => e.event.type === 'user_group').map((e) => e.event.op);
    assert.deepEqual(ops, ['remove_members', 'remove_members', 'add_members']);
    const groups = ok(await hamlet.client.get('/user_groups')).user_groups;
    const mods = groups.find((g: { name: string }) => g.name === 'role:moderators');
    assert.ok(mods.members.includes(target.id));
    assert.equal(ok(await hamlet.client.get(`/users/${target.id}`)).user.role, ROLE_MODERATOR);

    err(await admin.client.patch(`/users/${target.id}`, { role: ROLE_OWNER }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    err(await admin.client.patch(`/users/${target.id}`, { role: 250 }), 400, 'BAD_REQUEST', 'Invalid role');
    err(await admin.client.patch(`/users/${target.id}`, { is_admin: true, is_guest: true }), 400, 'BAD_REQUEST', 'Guests cannot be organization administrators');
    ok(await admin.client.patch(`/users/${target.id}`, { is_guest: true }));
    assert.equal((await reload(s, target.id)).role, ROLE_GUEST);
    ok(await admin.client.patch(`/users/${target.id}`, { is_admin: true }));
    assert.equal((await reload(s, target.id)).role, ROLE_ADMINISTRATOR);
    err(
      await owner.client.patch(`/users/${owner.user.id}`, { role: ROLE_ADMINISTRATOR }),
      400,
      'BAD_REQUEST',
      'The owner permission cannot be removed from the only organization owner.',
    );
    ok(await owner.client.patch(`/users/${target.id}`, { role: ROLE_OWNER }));
    // With a second owner the first may step down, and an administrator cannot demote owners.
    err(await admin.client.patch(`/users/${target.id}`, { role: ROLE_MEMBER }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    ok(await owner.client.patch(`/users/${target.id}`, { role: ROLE_MEMBER }));
    // The PATCH by email form of the same endpoint.
    ok(await admin.client.patch(`/users/${encodeURIComponent(target.delivery_email)}`, { full_name: 'By Email' }));
    assert.equal((await reload(s, target.id)).full_name, 'By Email');
    err(await admin.client.patch('/users/987654', { full_name: 'x' }), 400, 'BAD_REQUEST', 'No such user');
  });

  test('PATCH /users/{user_id}: a bot owner may rename their bot but not change its role', async () => {
    const s = server();
    const bot = await freshUser(s, ROLE_MEMBER, { isBot: true, botOwnerId: s.cast.hamlet.user.id });
    ok(await s.cast.hamlet.client.patch(`/users/${bot.id}`, { full_name: 'Renamed Bot' }));
    err(await s.cast.hamlet.client.patch(`/users/${bot.id}`, { role: ROLE_MODERATOR }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    err(await s.cast.othello.client.patch(`/users/${bot.id}`, { full_name: 'x' }), 400, 'BAD_REQUEST', 'Insufficient permission');
  });

  test('PATCH /users/{user_id} new_email: owners holding can_change_user_emails only', async () => {
    const s = server();
    const { admin, owner, hamlet } = s.cast;
    const target = await freshUser(s);
    const newEmail = `renamed-${s.kind}@example.com`;
    err(await admin.client.patch(`/users/${target.id}`, { new_email: newEmail }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    err(await owner.client.patch(`/users/${target.id}`, { new_email: newEmail }), 400, 'BAD_REQUEST', 'User not authorized to change user emails');
    await doSetSpecialPermission(s.app.services, s.realm, owner.user, 'can_change_user_emails', true);
    const ownerNow = await reload(s, owner.user.id);
    const client = s.clientFor(ownerNow);
    err(await client.patch(`/users/${target.id}`, { new_email: 'bad' }), 400, 'BAD_REQUEST', 'Invalid address.');
    err(await client.patch(`/users/${target.id}`, { new_email: hamlet.user.email }), 400, 'BAD_REQUEST', `Email '${hamlet.user.email}' already in use`);
    const { result, events } = await captureEvents(s, () => client.patch(`/users/${target.id}`, { new_email: newEmail }));
    ok(result);
    const persons = events.map((e) => e.event.person);
    assert.deepEqual(persons, [
      { user_id: target.id, delivery_email: newEmail },
      { user_id: target.id, new_email: newEmail },
    ]);
    const after = await reload(s, target.id);
    assert.equal(after.delivery_email, newEmail);
    assert.equal(after.email, newEmail);
    ok(await s.anonymous.post('/fetch_api_key', { username: newEmail, password: PASSWORD }));
    await doSetSpecialPermission(s.app.services, s.realm, owner.user, 'can_change_user_emails', false);
  });

  test('POST /users/me/api_key/regenerate: the new key works at once, the old one fails at once', async () => {
    const s = server();
    const user = await freshUser(s);
    const oldClient = s.clientFor(user);
    const res = await oldClient.post('/users/me/api_key/regenerate');
    const body = ok(res);
    assertConforms(res, 'POST', '/users/me/api_key/regenerate');
    assert.match(body.api_key, /^[A-Za-z0-9]{32}$/);
    assert.notEqual(body.api_key, user.api_key);
    err(await oldClient.get('/users/me'), 401, 'INVALID_API_KEY', 'Invalid API key');
    const fresh = s.clientFor({ ...user, api_key: body.api_key });
    assert.equal(ok(await fresh.get('/users/me')).user_id, user.id);
    assert.equal(ok(await s.anonymous.post('/fetch_api_key', { username: user.email, password: PASSWORD })).api_key, body.api_key);
  });
});
