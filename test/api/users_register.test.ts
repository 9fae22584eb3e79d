import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, PASSWORD, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertMatchesComponent } from '../helpers/openapi.js';
import { registerQueue } from '../helpers/events.js';
import { doCreateUser, doDeactivateUser } from '../../src/actions/users.js';
import { fetchRealmByStringId, updateRealmRow } from '../../src/db/repos/realms.js';
import { fetchSystemGroups } from '../../src/db/repos/user_groups.js';
import { ROLE_MEMBER } from '../../src/lib/roles.js';

const TYPES = ['realm_user', 'custom_profile_fields'];

async function register(s: TestServer, client = s.cast.hamlet.client, extra: Record<string, unknown> = {}): Promise<any> {
  const res = await client.post('/register', { event_types: TYPES, fetch_event_types: TYPES, ...extra });
  assertConforms(res, 'POST', '/register');
  return ok(res);
}

/** Restricts guests to the users they share a conversation with, for the duration of `fn`. */
async function withRestrictedGuests(s: TestServer, fn: () => Promise<void>): Promise<void> {
  const db = s.app.services.db.kysely;
  const realm = (await fetchRealmByStringId(db, ''))!;
  const members = (await fetchSystemGroups(db, realm.id)).find((g) => g.name === 'role:members')!;
  await updateRealmRow(db, realm.id, { settings: JSON.stringify({ ...JSON.parse(realm.settings), can_access_all_users_group: members.id }) });
  try {
    await fn();
  } finally {
    await updateRealmRow(db, realm.id, { settings: realm.settings });
  }
}

forEachDatabase('users in POST /register', (server) => {
  test('realm_user: the user list (self included), non-active users and the caller\'s own identity', async () => {
    const s = server();
    const gone = await doCreateUser(s.app.services, s.realm, { email: `gone-${s.kind}@example.com`, fullName: 'Gone', password: PASSWORD, role: ROLE_MEMBER, actingUser: null });
    await doDeactivateUser(s.app.services, s.realm, gone, null);
    const state = await register(s, s.cast.hamlet.client, { client_gravatar: false });
    const ids = state.realm_users.map((u: { user_id: number }) => u.user_id);
    for (const m of Object.values(s.cast)) assert.ok(ids.includes(m.user.id));
    assert.ok(!ids.includes(gone.id));
    assert.deepEqual(state.realm_non_active_users.map((u: { user_id: number }) => u.user_id), [gone.id]);
    assert.deepEqual(state.cross_realm_bots.map((u: { full_name: string }) => u.full_name).sort(), ['Email Gateway', 'Notification Bot', 'Welcome Bot']);
    const self = state.realm_users.find((u: { user_id: number }) => u.user_id === s.cast.hamlet.user.id);
    assertMatchesComponent(self, 'User');
    // Flutter requires these; is_active is left out as Zulip does for these lists.
    for (const k of ['user_id', 'email', 'full_name', 'date_joined', 'is_bot', 'role', 'timezone', 'avatar_version', 'avatar_url']) assert.ok(k in self, k);
    assert.equal('is_active' in self, false);
    assert.deepEqual(self.profile_data, {});
    assert.match(self.avatar_url, /gravatar/);
    const bot = state.realm_users.find((u: { user_id: number }) => u.user_id === s.cast.bot.user.id);
    assert.equal(bot.bot_owner_id, s.cast.hamlet.user.id);

    assert.equal(state.user_id, s.cast.hamlet.user.id);
    assert.equal(state.email, 'hamlet@example.com');
    assert.equal(state.delivery_email, 'hamlet@example.com');
    assert.equal(state.full_name, 'King Hamlet');
    assert.equal(state.avatar_source, 'G');
    assert.match(state.avatar_url, /^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?d=identicon&version=1$/);
    assert.match(state.avatar_url_medium, /&s=500&/);
    assert.equal(state.is_admin, false);
    assert.equal(state.is_owner, false);
    assert.equal(state.is_moderator, false);
    assert.equal(state.is_guest, false);
    assert.equal(state.can_create_streams, true);
    assert.equal(state.can_create_public_streams, true);
    assert.equal(state.can_create_private_streams, true);
    assert.equal(state.can_create_web_public_streams, false);
    assert.equal(state.can_subscribe_other_users, true);
    assert.equal(state.can_invite_others_to_realm, true);
    assert.deepEqual(state.custom_profile_fields, []);
    assert.equal(state.custom_profile_field_types.USER.id, 6);

    // One's own entry always shows one's own email, even hidden from everyone else (the list
    // is cached per role, with the caller's entry made for them).
    ok(await s.cast.hamlet.client.patch('/settings', { email_address_visibility: 5 }));
    try {
      const entryOf = (st: { realm_users: { user_id: number; delivery_email: string | null }[] }) => st.realm_users.find((u) => u.user_id === s.cast.hamlet.user.id)!;
      assert.equal(entryOf(await register(s, s.cast.hamlet.client)).delivery_email, 'hamlet@example.com');
      assert.equal(entryOf(await register(s, s.cast.othello.client)).delivery_email, null);
    } finally {
      ok(await s.cast.hamlet.client.patch('/settings', { email_address_visibility: 1 }));
    }

    const guest = await register(s, s.cast.guest.client);
    assert.equal(guest.is_guest, true);
    assert.equal(guest.can_create_streams, false);
    assert.equal(guest.can_invite_others_to_realm, false);
    const admin = await register(s, s.cast.admin.client);
    assert.equal(admin.is_admin, true);
    assert.equal(admin.is_moderator, true);
  });

  test('client_gravatar defaults to true in register too', async () => {
    const s = server();
    const state = await register(s);
    const othello = state.realm_users.find((u: { user_id: number }) => u.user_id === s.cast.othello.user.id);
    assert.equal(othello.avatar_url, null);
  });

  test('realm_user and custom_profile_fields events reach registered queues', async () => {
    const s = server();
    const { queue_id, last_event_id } = await register(s);
    ok(await s.cast.admin.client.patch(`/users/${s.cast.othello.user.id}`, { full_name: 'Othello the Renamed' }));
    ok(await s.cast.admin.client.post('/realm/profile_fields', { name: `Team ${s.kind}`, field_type: 1 }));
    const res = await s.cast.hamlet.client.get('/events', { queue_id, last_event_id, dont_block: true });
    const events = ok(res).events;
    const rename = events.find((e: any) => e.type === 'realm_user');
    assert.deepEqual(rename.person, { user_id: s.cast.othello.user.id, full_name: 'Othello the Renamed' });
    const cpf = events.find((e: any) => e.type === 'custom_profile_fields');
    assert.ok(cpf.fields.some((f: { name: string }) => f.name === `Team ${s.kind}`));
    // The same state a fresh register reports.
    const fresh = await register(s);
    assert.equal(fresh.realm_users.find((u: { user_id: number }) => u.user_id === s.cast.othello.user.id).full_name, 'Othello the Renamed');
    assert.deepEqual(fresh.custom_profile_fields, cpf.fields);
  });

  test('a guest restricted by can_access_all_users_group sees placeholders or nothing of others', async () => {
    const s = server();
    await withRestrictedGuests(s, async () => {
      const { guest, hamlet, bot } = s.cast;
      const old = await register(s, guest.client);
      const unknown = old.realm_users.find((u: { user_id: number }) => u.user_id === hamlet.user.id);
      assert.equal(unknown.full_name, 'Unknown user');
      assert.equal(unknown.delivery_email, null);
      assertMatchesComponent(unknown, 'User');
      const incomplete = await register(s, guest.client, { client_capabilities: { user_list_incomplete: true } });
      const ids = incomplete.realm_users.map((u: { user_id: number }) => u.user_id);
      assert.ok(!ids.includes(hamlet.user.id));
      assert.ok(ids.includes(guest.user.id));
      assert.ok(ids.includes(bot.user.id));
      err(await guest.client.get(`/users/${hamlet.user.id}`), 400, 'BAD_REQUEST', 'Insufficient permission');
      ok(await guest.client.get(`/users/${bot.user.id}`));
      const listed = ok(await guest.client.get('/users')).members.map((u: { user_id: number }) => u.user_id);
      assert.ok(!listed.includes(hamlet.user.id));
      // Members are never restricted.
      ok(await hamlet.client.get(`/users/${guest.user.id}`));
      // A direct message between them makes each visible to the other.
      ok(await hamlet.client.post('/messages', { type: 'direct', to: JSON.stringify([guest.user.id]), content: 'hello' }));
      const later = await register(s, guest.client, { client_capabilities: { user_list_incomplete: true } });
      assert.ok(later.realm_users.some((u: { user_id: number }) => u.user_id === hamlet.user.id));
      ok(await guest.client.get(`/users/${hamlet.user.id}`));
    });
  });

  test('a restricted guest hears whom a subscription change shows or hides: realm_user add and remove', async () => {
    const s = server();
    await withRestrictedGuests(s, async () => {
      const { guest, othello, moderator, admin } = s.cast;
      const name = `sight-${s.kind}`;
      const subscribe = (ids: number[]) =>
        admin.client.post('/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify(ids) });
      ok(await subscribe([othello.user.id, moderator.user.id]));
      const q = await registerQueue(guest.client, { event_types: JSON.stringify(['realm_user']) });
      const visible = (state: any) => state.realm_users.filter((u: any) => u.full_name !== 'Unknown user').map((u: any) => u.user_id);
      assert.ok(!visible(q.state).includes(othello.user.id));

      ok(await subscribe([guest.user.id]));
      const added = [await q.next('realm_user'), await q.next('realm_user')];
      const expected = [moderator.user.id, othello.user.id].sort((a, b) => a - b);
      assert.deepEqual(added.map((e) => [e.op, e.person.user_id]), expected.map((id) => ['add', id]));
      const person = added.find((e) => e.person.user_id === othello.user.id)!.person;
      assert.equal(person.full_name, ok(await admin.client.get(`/users/${othello.user.id}`)).user.full_name);
      assert.equal(person.is_active, true);

      ok(await othello.client.delete('/users/me/subscriptions', { subscriptions: JSON.stringify([name]) }));
      const removed = await q.next('realm_user');
      assert.deepEqual({ op: removed.op, person: removed.person }, { op: 'remove', person: { user_id: othello.user.id, full_name: 'Unknown user' } });

      const guestRemoved = await admin.client.delete('/users/me/subscriptions', { subscriptions: JSON.stringify([name]), principals: JSON.stringify([guest.user.id]) });
      ok(guestRemoved);
      const hidden = await q.next('realm_user');
      assert.deepEqual({ op: hidden.op, person: hidden.person }, { op: 'remove', person: { user_id: moderator.user.id, full_name: 'Unknown user' } });
      await q.expectNone('realm_user', 300);
      const again = await registerQueue(guest.client, { event_types: JSON.stringify(['realm_user']), client_capabilities: JSON.stringify({ user_list_incomplete: true }) });
      const ids = again.state.realm_users.map((u: any) => u.user_id);
      assert.ok(!ids.includes(othello.user.id) && !ids.includes(moderator.user.id));
    });
  });
});
