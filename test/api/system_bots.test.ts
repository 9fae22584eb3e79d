import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { fetchSystemBot } from '../../src/lib/system_bots.js';
import { doCreateRealm } from '../../src/actions/realms.js';
import { doCreateUser } from '../../src/actions/users.js';
import { ROLE_OWNER } from '../../src/lib/roles.js';
import { PASSWORD } from '../helpers/server.js';
import { OrgClient } from '../reliability/org_client.js';

forEachDatabase('system bots', (server) => {
  test('Notification Bot, Welcome Bot and Email Gateway are cross_realm_bots, not members', async () => {
    const s = server();
    const db = s.app.services.db.kysely;
    const notification = await fetchSystemBot(db, s.config, s.realm, 'notification');
    const welcome = await fetchSystemBot(db, s.config, s.realm, 'welcome');
    const gateway = await fetchSystemBot(db, s.config, s.realm, 'emailGateway');

    const res = await s.cast.hamlet.client.post('/register', { fetch_event_types: ['realm_user'] });
    assertConforms(res, 'POST', '/register');
    const state = ok(res);
    const ids = (list: { user_id: number }[]) => list.map((u) => u.user_id);
    assert.deepEqual(ids(state.cross_realm_bots), [notification.id, welcome.id, gateway.id].sort((a, b) => a - b));
    for (const bot of state.cross_realm_bots) {
      assert.equal(bot.is_system_bot, true);
      assert.equal(bot.is_bot, true);
      assert.equal(bot.bot_owner_id, null);
      assert.equal(bot.email, [notification, welcome, gateway].find((b) => b.id === bot.user_id)!.email);
    }
    assert.deepEqual(state.cross_realm_bots.map((b: { full_name: string }) => b.full_name).sort(), ['Email Gateway', 'Notification Bot', 'Welcome Bot']);
    assert.ok(!ids(state.realm_users).includes(notification.id));
    assert.ok(!ids(state.realm_users).includes(welcome.id));
    assert.ok(!ids(state.realm_non_active_users).includes(notification.id));

    const list = ok(await s.cast.hamlet.client.get('/users'));
    assert.ok(!ids(list.members).includes(notification.id));
    assert.ok(!ids(list.members).includes(welcome.id));
    // Asked for by ID, a system bot is found (zulip-terminal looks up message senders).
    const one = await s.cast.hamlet.client.get(`/users/${notification.id}`);
    assertConforms(one, 'GET', '/users/{user_id}');
    assert.equal(ok(one).user.full_name, 'Notification Bot');
  });

  test('system bots do not count as members: an organization\'s only user still cannot deactivate', async () => {
    const s = server();
    const services = s.app.services;
    const realm = await doCreateRealm(services, { stringId: `solo${s.kind}`, name: 'Solo' });
    const owner = await doCreateUser(services, realm, { email: `solo-${s.kind}@example.com`, fullName: 'Solo', password: PASSWORD, role: ROLE_OWNER, actingUser: null });
    await fetchSystemBot(services.db.kysely, s.config, realm, 'notification');
    await fetchSystemBot(services.db.kysely, s.config, realm, 'welcome');
    const client = OrgClient.forSubdomain(s.url, realm.string_id, owner.email, owner.api_key);
    err(await client.delete('/users/me'), 400, 'CANNOT_DEACTIVATE_LAST_USER', 'Cannot deactivate the only user');
    const members = ok(await client.get('/users')).members as { user_id: number }[];
    assert.deepEqual(members.map((m) => m.user_id), [owner.id]);
  });
});
