import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { registerQueue } from '../helpers/events.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { doCreateUser } from '../../src/actions/users.js';
import { nextPresenceUpdateId, upsertPresence } from '../../src/db/repos/presence.js';
import { ROLE_MEMBER } from '../../src/lib/roles.js';

forEachDatabase('presence', (server) => {
  test('POST /users/me/presence: legacy email-keyed and modern user-id-keyed answers', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    let res = await hamlet.client.post('/users/me/presence', { status: 'active', new_user_input: true });
    let body = ok(res);
    assertConforms(res, 'POST', '/users/me/presence');
    assert.equal(typeof body.server_timestamp, 'number');
    const legacy = body.presences[hamlet.user.email];
    assert.equal(legacy.website.client, 'website');
    assert.equal(legacy.website.status, 'active');
    assert.equal(legacy.website.pushable, false);
    assert.deepEqual(legacy.aggregated, { client: 'website', status: 'active', timestamp: legacy.website.timestamp });
    assert.ok(body.presence_last_update_id >= 1);

    res = await othello.client.post('/users/me/presence', { status: 'idle', slim_presence: true });
    body = ok(res);
    assertConforms(res, 'POST', '/users/me/presence');
    const modern = body.presences[String(hamlet.user.id)];
    assert.equal(typeof modern.active_timestamp, 'number');
    assert.equal(typeof modern.idle_timestamp, 'number');
    assert.ok(String(othello.user.id) in body.presences);

    // last_update_id asks for the modern format and only newer changes.
    const last = body.presence_last_update_id;
    res = await othello.client.post('/users/me/presence', { status: 'idle', last_update_id: last });
    body = ok(res);
    assert.deepEqual(body.presences, {});
    assert.equal(body.presence_last_update_id, last);
    res = await othello.client.post('/users/me/presence', { status: 'active', last_update_id: -1, history_limit_days: 0 });
    assert.deepEqual(ok(res).presences, {});

    res = await hamlet.client.post('/users/me/presence', { status: 'active', ping_only: true });
    body = ok(res);
    assertConforms(res, 'POST', '/users/me/presence');
    assert.equal(body.presences, undefined);
    err(await hamlet.client.post('/users/me/presence', { status: 'away' }), 400, 'BAD_REQUEST', 'Invalid status: away');
    err(await hamlet.client.post('/users/me/presence', {}), 400, 'REQUEST_VARIABLE_MISSING');
  });

  test('modern answers follow every committed change: another process\'s report, a new person, a deactivation', async () => {
    const s = server();
    const { othello, admin } = s.cast;
    let body = ok(await othello.client.post('/users/me/presence', { status: 'active', last_update_id: -1 }));
    const first = body.presence_last_update_id;
    // Another process records a report: only the database carries it to this one.
    const newcomer = await doCreateUser(s.app.services, s.realm, { email: 'newcomer@example.com', fullName: 'Newcomer', password: null, role: ROLE_MEMBER, actingUser: null });
    const now = Math.floor(Date.now() / 1000);
    await s.app.services.db.kysely.transaction().execute(async (tx) => {
      const id = await nextPresenceUpdateId(tx, s.realm.id);
      await upsertPresence(tx, { user_id: newcomer.id, realm_id: s.realm.id, last_active_time: now, last_connected_time: now, last_update_id: id });
    });
    const res = await othello.client.post('/users/me/presence', { status: 'active', last_update_id: first });
    assertConforms(res, 'POST', '/users/me/presence');
    body = ok(res);
    assert.deepEqual(body.presences, { [String(newcomer.id)]: { active_timestamp: now, idle_timestamp: now } });
    assert.ok(body.presence_last_update_id > first);
    ok(await admin.client.delete(`/users/${newcomer.id}`));
    body = ok(await othello.client.post('/users/me/presence', { status: 'active', last_update_id: -1 }));
    assert.ok(!(String(newcomer.id) in body.presences));
    assert.ok(String(othello.user.id) in body.presences);
  });

  test('GET /realm/presence and GET /users/{user_id_or_email}/presence', async () => {
    const s = server();
    const { hamlet, othello, moderator, bot } = s.cast;
    ok(await hamlet.client.post('/users/me/presence', { status: 'active' }));
    let res = await othello.client.get('/realm/presence');
    const body = ok(res);
    assertConforms(res, 'GET', '/realm/presence');
    assert.equal(body.presences[hamlet.user.email].aggregated.status, 'active');

    for (const key of [String(hamlet.user.id), hamlet.user.email]) {
      res = await othello.client.get(`/users/${encodeURIComponent(key)}/presence`);
      const one = ok(res);
      assertConforms(res, 'GET', '/users/{user_id_or_email}/presence');
      assert.equal(one.presence.website.status, 'active');
      assert.equal(one.presence.aggregated.status, 'active');
      assert.equal(typeof one.presence.active_timestamp, 'number');
    }
    err(await othello.client.get(`/users/${moderator.user.id}/presence`), 400, 'BAD_REQUEST', `No presence data for ${moderator.user.id}`);
    err(await othello.client.get(`/users/${bot.user.id}/presence`), 400, 'BAD_REQUEST', 'Presence is not supported for bot users.');
    err(await othello.client.get('/users/99999/presence'), 400, 'BAD_REQUEST', 'No such user');
  });

  test('register returns presences in the requested format, with the intervals', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    ok(await hamlet.client.post('/users/me/presence', { status: 'active' }));
    const legacy = ok(await othello.client.post('/register', { fetch_event_types: ['presence', 'realm'] }));
    assert.equal(legacy.presences[hamlet.user.email].website.status, 'active');
    assert.equal(typeof legacy.presence_last_update_id, 'number');
    assert.equal(legacy.server_presence_ping_interval_seconds, 60);
    assert.equal(legacy.server_presence_offline_threshold_seconds, 140);
    assert.equal(legacy.server_typing_started_expiry_period_milliseconds, 45000);
    assert.equal(legacy.server_typing_stopped_wait_period_milliseconds, 12000);
    assert.equal(legacy.server_typing_started_wait_period_milliseconds, 30000);
    assert.equal(legacy.server_emoji_data_url, `${s.config.externalUrl}/static/generated/emoji/emoji_api.json`);
    const slim = ok(await othello.client.post('/register', { fetch_event_types: ['presence'], slim_presence: true }));
    assert.equal(typeof slim.presences[String(hamlet.user.id)].active_timestamp, 'number');
  });

  test('a user coming online is announced in the format each queue asked for', async () => {
    const s = server();
    const { admin, othello } = s.cast;
    const legacy = await registerQueue(othello.client, { event_types: ['presence'] });
    const slim = await registerQueue(othello.client, { event_types: ['presence'], slim_presence: true });
    const modern = await registerQueue(othello.client, { event_types: ['presence'], client_capabilities: { simplified_presence_events: true } });
    ok(await admin.client.post('/users/me/presence', { status: 'active' }));
    const a = await legacy.next('presence');
    assertEventConforms(a);
    assert.equal(a.user_id, admin.user.id);
    assert.equal(a.email, admin.user.email);
    assert.equal(a.presence.website.status, 'active');
    const b = await slim.next('presence');
    assertEventConforms(b);
    assert.equal(b.email, undefined);
    assert.equal(b.user_id, admin.user.id);
    const c = await modern.next('presence');
    assertEventConforms(c);
    assert.deepEqual(Object.keys(c), ['type', 'presences', 'id']);
    assert.equal(typeof c.presences[String(admin.user.id)].idle_timestamp, 'number');
    // Already online: a repeated ping is not announced again.
    ok(await admin.client.post('/users/me/presence', { status: 'active' }));
    await legacy.expectNone('presence', 300);
  });

  test('a user who turned presence off is not recorded', async () => {
    const s = server();
    const { guest, othello } = s.cast;
    ok(await guest.client.patch('/settings', { presence_enabled: false }));
    const q = await registerQueue(othello.client, { event_types: ['presence'] });
    ok(await guest.client.post('/users/me/presence', { status: 'active' }));
    await q.expectNone('presence', 300);
    err(await othello.client.get(`/users/${guest.user.id}/presence`), 400, 'BAD_REQUEST', `No presence data for ${guest.user.id}`);
  });

  test('the emoji name data is served without authentication', async () => {
    const s = server();
    const res = await fetch(`${s.url}/static/generated/emoji/emoji_api.json`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { code_to_names: Record<string, string[]> };
    assert.deepEqual(Object.keys(body), ['code_to_names']);
    assert.equal(body.code_to_names['1f600']?.[0], 'grinning');
    const etag = res.headers.get('etag')!;
    const again = await fetch(`${s.url}/static/generated/emoji/emoji_api.json`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
  });
});
