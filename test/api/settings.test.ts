import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, PASSWORD, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { assertConforms } from '../helpers/openapi.js';
import type { ApiResponse } from '../helpers/client.js';
import type { ZulipEvent } from '../../src/events/bus.js';
import { fetchUserById, fetchActiveUserIds } from '../../src/db/repos/users.js';
import { fetchRealmById } from '../../src/db/repos/realms.js';
import { doCreateUser } from '../../src/actions/users.js';
import { realmUserSettingsDefaults, userSettings } from '../../src/lib/user_settings.js';

function assertEventsConform(events: ZulipEvent[]): void {
  const body = { result: 'success', msg: '', queue_id: 'q', events: events.map((e, i) => ({ ...e, id: i })) };
  assertConforms({ status: 200, headers: new Headers(), body } as ApiResponse, 'GET', '/events');
}

async function settingsOf(s: TestServer, userId: number) {
  return userSettings((await fetchUserById(s.app.services.db.kysely, s.realm.id, userId))!);
}

forEachDatabase('PATCH /settings', (server) => {
  test('a setting change is stored and announced to the user only', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const { result, events } = await captureEvents(s, () =>
      hamlet.client.patch('/settings', { twenty_four_hour_time: true, automatically_follow_topics_policy: 1, enable_drafts_synchronization: true }),
    );
    assert.deepEqual(ok(result), { result: 'success', msg: '' });
    assertConforms(result, 'PATCH', '/settings');
    // enable_drafts_synchronization is already true: no change, no event.
    assert.deepEqual(events.map((e) => e.event), [
      { type: 'user_settings', op: 'update', property: 'twenty_four_hour_time', value: true },
      { type: 'user_settings', op: 'update', property: 'automatically_follow_topics_policy', value: 1 },
    ]);
    for (const e of events) assert.deepEqual(recipientIds(e), [hamlet.user.id]);
    assertEventsConform(events.map((e) => e.event));
    const after = await settingsOf(s, hamlet.user.id);
    assert.equal(after.twenty_four_hour_time, true);
    assert.equal(after.automatically_follow_topics_policy, 1);
    // Other users keep the defaults.
    assert.equal((await settingsOf(s, s.cast.othello.user.id)).twenty_four_hour_time, false);
  });

  test('the spec-relevant settings round-trip', async () => {
    const s = server();
    const { othello } = s.cast;
    ok(await othello.client.patch('/settings', {
      automatically_unmute_topics_in_muted_streams_policy: 4,
      automatically_follow_topics_where_mentioned: false,
      enable_drafts_synchronization: false,
      send_private_typing_notifications: false,
      presence_enabled: false,
      emojiset: 'text',
      pm_content_in_desktop_notifications: false,
    }));
    const after = await settingsOf(s, othello.user.id);
    assert.equal(after.automatically_unmute_topics_in_muted_streams_policy, 4);
    assert.equal(after.automatically_follow_topics_where_mentioned, false);
    assert.equal(after.enable_drafts_synchronization, false);
    assert.equal(after.send_private_typing_notifications, false);
    assert.equal(after.presence_enabled, false);
    assert.equal(after.emojiset, 'text');
    assert.equal(after.pm_content_in_desktop_notifications, false);
    ok(await othello.client.patch('/settings', { enable_drafts_synchronization: true, presence_enabled: true }));
  });

  test('invalid values get Zulip errors', async () => {
    const s = server();
    const c = s.cast.hamlet.client;
    err(await c.patch('/settings', { emojiset: 'apple' }), 400, 'BAD_REQUEST', 'Invalid emojiset');
    err(await c.patch('/settings', { automatically_follow_topics_policy: 7 }), 400, 'BAD_REQUEST', 'Invalid automatically_follow_topics_policy');
    err(await c.patch('/settings', { automatically_unmute_topics_in_muted_streams_policy: 0 }), 400, 'BAD_REQUEST', 'Invalid automatically_unmute_topics_in_muted_streams_policy');
    err(await c.patch('/settings', { email_address_visibility: 6 }), 400, 'BAD_REQUEST', 'Invalid email_address_visibility');
    err(await c.patch('/settings', { default_language: 'xx' }), 400, 'BAD_REQUEST', 'Invalid default_language');
    err(await c.patch('/settings', { notification_sound: 'beep' }), 400, 'BAD_REQUEST', "Invalid notification sound 'beep'");
    err(await c.patch('/settings', { email_notifications_batching_period_seconds: 0 }), 400, 'BAD_REQUEST', 'Invalid email batching period: 0 seconds');
    err(await c.patch('/settings', { timezone: 'Mars/Olympus_Mons' }), 400, 'BAD_REQUEST', 'timezone is not a recognized time zone');
    err(await c.patch('/settings', { presence_enabled: 'sometimes' }), 400, 'BAD_REQUEST', 'presence_enabled is not a boolean');
    err(await c.patch('/settings', { color_scheme: 'dark' }), 400, 'BAD_REQUEST', 'color_scheme is not an integer');
    ok(await c.patch('/settings', { notification_sound: 'none' }));
    ok(await c.patch('/settings', { notification_sound: 'zulip' }));
  });

  test('bots may not change settings', async () => {
    const s = server();
    err(await s.cast.bot.client.patch('/settings', { twenty_four_hour_time: true }), 400, 'BAD_REQUEST', 'This endpoint does not accept bot requests.');
  });

  test('default_language events carry the language name', async () => {
    const s = server();
    const { result, events } = await captureEvents(s, () => s.cast.hamlet.client.patch('/settings', { default_language: 'de' }));
    ok(result);
    assert.deepEqual(events[0]!.event, { type: 'user_settings', op: 'update', property: 'default_language', value: 'de', language_name: 'Deutsch' });
    assertEventsConform(events.map((e) => e.event));
    ok(await s.cast.hamlet.client.patch('/settings', { default_language: 'en' }));
  });

  test('timezone goes to the user row and is announced to everyone who can see the user', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const { result, events } = await captureEvents(s, () => hamlet.client.patch('/settings', { timezone: 'Europe/Copenhagen' }));
    ok(result);
    const own = events.find((e) => e.event.type === 'user_settings')!;
    assert.deepEqual(own.event, { type: 'user_settings', op: 'update', property: 'timezone', value: 'Europe/Copenhagen' });
    assert.deepEqual(recipientIds(own), [hamlet.user.id]);
    const others = events.find((e) => e.event.type === 'realm_user')!;
    assert.deepEqual(others.event, { type: 'realm_user', op: 'update', person: { email: hamlet.user.email, user_id: hamlet.user.id, timezone: 'Europe/Copenhagen' } });
    assert.deepEqual(recipientIds(others), await fetchActiveUserIds(s.app.services.db.kysely, s.realm.id));
    assertEventsConform(events.map((e) => e.event));
    const row = (await fetchUserById(s.app.services.db.kysely, s.realm.id, hamlet.user.id))!;
    assert.equal(row.timezone, 'Europe/Copenhagen');
    assert.equal(userSettings(row).timezone, 'Europe/Copenhagen');
  });

  test('full_name changes the user and respects name_changes_disabled', async () => {
    const s = server();
    const { othello } = s.cast;
    const { result, events } = await captureEvents(s, () => othello.client.patch('/settings', { full_name: '  Othello the Moor  ' }));
    ok(result);
    assert.deepEqual(events.map((e) => e.event), [{ type: 'realm_user', op: 'update', person: { user_id: othello.user.id, full_name: 'Othello the Moor' } }]);
    assert.equal((await fetchUserById(s.app.services.db.kysely, s.realm.id, othello.user.id))!.full_name, 'Othello the Moor');
    err(await othello.client.patch('/settings', { full_name: 'x'.repeat(101) }), 400, 'BAD_REQUEST', 'Name too long!');
    err(await othello.client.patch('/settings', { full_name: 'Bad*Name' }), 400, 'BAD_REQUEST', 'Invalid characters in name!');

    ok(await s.cast.admin.client.patch('/realm', { name_changes_disabled: true }));
    // Silently skipped for members, as in Zulip; administrators may still rename themselves.
    ok(await othello.client.patch('/settings', { full_name: 'Someone Else' }));
    assert.equal((await fetchUserById(s.app.services.db.kysely, s.realm.id, othello.user.id))!.full_name, 'Othello the Moor');
    ok(await s.cast.admin.client.patch('/settings', { full_name: 'Iago the Ensign' }));
    assert.equal((await fetchUserById(s.app.services.db.kysely, s.realm.id, s.cast.admin.user.id))!.full_name, 'Iago the Ensign');
    ok(await s.cast.admin.client.patch('/realm', { name_changes_disabled: false }));
  });

  test('password change needs the old password and a strong new one', async () => {
    const s = server();
    const { moderator } = s.cast;
    err(await moderator.client.patch('/settings', { old_password: 'wrong', new_password: 'a much better secret' }), 400, 'BAD_REQUEST', 'Wrong password!');
    err(await moderator.client.patch('/settings', { new_password: 'a much better secret' }), 400, 'BAD_REQUEST', 'Wrong password!');
    err(await moderator.client.patch('/settings', { old_password: PASSWORD, new_password: 'abc' }), 400, 'BAD_REQUEST', 'New password is too weak!');
    ok(await moderator.client.patch('/settings', { old_password: PASSWORD, new_password: 'a much better secret' }));
    ok(await s.anonymous.post('/fetch_api_key', { username: moderator.user.email, password: 'a much better secret' }));
    err(await s.anonymous.post('/fetch_api_key', { username: moderator.user.email, password: PASSWORD }), 401, 'AUTHENTICATION_FAILED');
  });

  test('an email change is checked at once and waits for the mailed link; refused when disabled, invalid or taken', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    err(await hamlet.client.patch('/settings', { email: 'not an address' }), 400, 'BAD_REQUEST', 'Invalid address.');
    err(await hamlet.client.patch('/settings', { email: othello.user.delivery_email }), 400, 'BAD_REQUEST', `Email '${othello.user.delivery_email}' already in use`);
    const started = ok(await hamlet.client.patch('/settings', { email: 'prince@example.com' }));
    assert.equal(started.account_email, 'Check your email for a confirmation link. ');
    assert.equal(started.ignored_parameters_unsupported, undefined);
    // The address is unchanged until the link is opened (test/browser/settings.test.ts opens it).
    assert.equal((await fetchUserById(s.app.services.db.kysely, s.realm.id, hamlet.user.id))!.delivery_email, hamlet.user.delivery_email);
    ok(await s.cast.admin.client.patch('/realm', { email_changes_disabled: true }));
    err(await hamlet.client.patch('/settings', { email: 'prince@example.com' }), 400, 'BAD_REQUEST', 'Email address changes are disabled in this organization.');
    ok(await s.cast.admin.client.patch('/realm', { email_changes_disabled: false }));
    const bad = await fetch(`${s.url}/accounts/confirm_new_email/1-9999999999-eA-${'x'.repeat(43)}`);
    assert.equal(bad.status, 404);
  });

  test('email_address_visibility hides the real address from other users', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const { result, events } = await captureEvents(s, () => hamlet.client.patch('/settings', { email_address_visibility: 3 }));
    ok(result);
    assert.deepEqual(events[0]!.event, { type: 'user_settings', op: 'update', property: 'email_address_visibility', value: 3 });
    assert.ok(events.some((e) => e.event.type === 'realm_user' && (e.event.person as { new_email?: string }).new_email !== undefined));
    assertEventsConform(events.map((e) => e.event));
    const seenByMember = ok(await othello.client.get(`/users/${hamlet.user.id}`)).user;
    assert.notEqual(seenByMember.email, 'hamlet@example.com');
    assert.equal(seenByMember.delivery_email, null);
    const seenByAdmin = ok(await admin.client.get(`/users/${hamlet.user.id}`)).user;
    assert.equal(seenByAdmin.delivery_email, 'hamlet@example.com');
    ok(await hamlet.client.patch('/settings', { email_address_visibility: 1 }));
    assert.equal(ok(await othello.client.get(`/users/${hamlet.user.id}`)).user.email, 'hamlet@example.com');
  });

  test('turning off drafts synchronization deletes stored drafts', async () => {
    const s = server();
    const { guest } = s.cast;
    const created = await guest.client.post('/drafts', { drafts: [{ type: '', to: [], topic: '', content: 'half a thought' }] });
    ok(created);
    assert.equal(ok(await guest.client.get('/drafts')).drafts.length, 1);
    ok(await guest.client.patch('/settings', { enable_drafts_synchronization: false }));
    ok(await guest.client.patch('/settings', { enable_drafts_synchronization: true }));
    assert.equal(ok(await guest.client.get('/drafts')).drafts.length, 0);
  });

  test('the deprecated /settings/display and /settings/notifications forms', async () => {
    const s = server();
    const { guest } = s.cast;
    ok(await guest.client.patch('/settings/display', { left_side_userlist: true }));
    ok(await guest.client.patch('/settings/notifications', { enable_sounds: false }));
    const after = await settingsOf(s, guest.user.id);
    assert.equal(after.left_side_userlist, true);
    assert.equal(after.enable_sounds, false);
  });

  test('unknown parameters are reported', async () => {
    const s = server();
    const body = ok(await s.cast.hamlet.client.patch('/settings', { dense_mode: true }));
    assert.deepEqual(body.ignored_parameters_unsupported, ['dense_mode']);
  });
});

forEachDatabase('PATCH /realm/user_settings_defaults', (server) => {
  test('administrators set defaults that new users get', async () => {
    const s = server();
    err(await s.cast.hamlet.client.patch('/realm/user_settings_defaults', { emojiset: 'text' }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    err(await s.cast.admin.client.patch('/realm/user_settings_defaults', { emojiset: 'apple' }), 400, 'BAD_REQUEST', 'Invalid emojiset');
    const { result, events } = await captureEvents(s, () =>
      s.cast.admin.client.patch('/realm/user_settings_defaults', { emojiset: 'text', email_address_visibility: 4, enable_drafts_synchronization: false }),
    );
    ok(result);
    assertConforms(result, 'PATCH', '/realm/user_settings_defaults');
    assert.deepEqual(events.map((e) => e.event), [
      { type: 'realm_user_settings_defaults', op: 'update', property: 'emojiset', value: 'text' },
      { type: 'realm_user_settings_defaults', op: 'update', property: 'enable_drafts_synchronization', value: false },
      { type: 'realm_user_settings_defaults', op: 'update', property: 'email_address_visibility', value: 4 },
    ]);
    assertEventsConform(events.map((e) => e.event));
    const realm = (await fetchRealmById(s.app.services.db.kysely, s.realm.id))!;
    assert.equal(realmUserSettingsDefaults(realm).emojiset, 'text');
    // Existing users keep their settings; a new user starts from the defaults.
    assert.equal((await settingsOf(s, s.cast.hamlet.user.id)).emojiset, 'google');
    const rosalind = await doCreateUser(s.app.services, realm, { email: 'rosalind@example.com', fullName: 'Rosalind', password: PASSWORD, actingUser: null });
    const mine = userSettings(rosalind);
    assert.equal(mine.emojiset, 'text');
    assert.equal(mine.email_address_visibility, 4);
    assert.equal(mine.enable_drafts_synchronization, false);
    // enable_login_emails is each user's own choice.
    assert.equal(ok(await s.cast.admin.client.patch('/realm/user_settings_defaults', { enable_login_emails: false })).ignored_parameters_unsupported[0], 'enable_login_emails');
  });
});
