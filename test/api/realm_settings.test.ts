import { fetchActiveUserIds } from '../../src/db/repos/users.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { assertConforms } from '../helpers/openapi.js';
import type { ApiResponse, ParamValue } from '../helpers/client.js';
import type { ZulipEvent } from '../../src/events/bus.js';
import { fetchRealmById } from '../../src/db/repos/realms.js';
import { fetchSystemGroups } from '../../src/db/repos/user_groups.js';
import { realmSettings } from '../../src/lib/realm_settings.js';

/** Validates events against zulip.yaml's GET /events schema. */
function assertEventsConform(events: ZulipEvent[]): void {
  const body = { result: 'success', msg: '', queue_id: 'q', events: events.map((e, i) => ({ ...e, id: i })) };
  assertConforms({ status: 200, headers: new Headers(), body } as ApiResponse, 'GET', '/events');
}

async function groupIds(s: TestServer): Promise<Record<string, number>> {
  const rows = await fetchSystemGroups(s.app.services.db.kysely, s.realm.id);
  return Object.fromEntries(rows.map((g) => [g.name, g.id]));
}

async function currentSettings(s: TestServer) {
  return realmSettings((await fetchRealmById(s.app.services.db.kysely, s.realm.id))!);
}

forEachDatabase('PATCH /realm', (server) => {
  test('only administrators may change organization settings', async () => {
    const s = server();
    for (const who of [s.cast.hamlet, s.cast.moderator, s.cast.guest]) {
      err(await who.client.patch('/realm', { name: 'Nope' }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    }
    // The role check comes before parameter validation, as with Zulip's decorator.
    err(await s.cast.hamlet.client.patch('/realm', { allow_message_editing: 'maybe' }), 400, 'UNAUTHORIZED_PRINCIPAL');
  });

  test('owner-only settings refuse administrators', async () => {
    const s = server();
    const g = await groupIds(s);
    const ownerOnly: Record<string, ParamValue> = {
      waiting_period_threshold: 3,
      invite_required: false,
      emails_restricted_to_domains: true,
      disallow_disposable_email_addresses: false,
      message_retention_days: 30,
      can_invite_users_group: { new: g['role:administrators'] },
      can_create_groups: { new: g['role:administrators'] },
      can_manage_all_groups: { new: g['role:administrators'] },
      can_manage_billing_group: { new: g['role:owners'] },
      create_multiuse_invite_group: { new: g['role:owners'] },
    };
    for (const [k, v] of Object.entries(ownerOnly)) {
      err(await s.cast.admin.client.patch('/realm', { [k]: v }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    }
    const body = ok(await s.cast.owner.client.patch('/realm', { waiting_period_threshold: 3, can_invite_users_group: { new: g['role:administrators'] } }));
    assert.deepEqual(body.waiting_period_threshold, 3);
    assert.deepEqual(body.can_invite_users_group, g['role:administrators']);
    const after = await currentSettings(s);
    assert.equal(after.waiting_period_threshold, 3);
    assert.equal(after.can_invite_users_group, g['role:administrators']);
    ok(await s.cast.owner.client.patch('/realm', { waiting_period_threshold: 0, can_invite_users_group: { new: g['role:members'] } }));
  });

  test('name and description: response, stored row and events to every active user', async () => {
    const s = server();
    const { result, events } = await captureEvents(s, () => s.cast.admin.client.patch('/realm', { name: 'Elsinore', description: 'A **castle** <b>\n\nSecond' }));
    const body = ok(result);
    assert.deepEqual(body.name, 'updated');
    assert.deepEqual(body.description, 'updated');
    const row = (await fetchRealmById(s.app.services.db.kysely, s.realm.id))!;
    assert.equal(row.name, 'Elsinore');
    assert.equal(row.description, 'A **castle** <b>\n\nSecond');
    assert.equal(events.length, 2);
    const active = await fetchActiveUserIds(s.app.services.db.kysely, s.realm.id);
    for (const e of events) assert.deepEqual(recipientIds(e), active);
    assert.deepEqual(events[0]!.event, { type: 'realm', op: 'update', property: 'name', value: 'Elsinore' });
    assert.deepEqual(events[1]!.event, {
      type: 'realm',
      op: 'update_dict',
      property: 'default',
      data: { description: 'A **castle** <b>\n\nSecond', rendered_description: '<p>A <strong>castle</strong> &lt;b&gt;</p>\n<p>Second</p>' },
    });
    assertEventsConform(events.map((e) => e.event));
    // GET /server_settings shows the new name and the rendered description.
    const settings = ok(await s.anonymous.get('/server_settings'));
    assert.equal(settings.realm_name, 'Elsinore');
    assert.equal(settings.realm_description, '<p>A <strong>castle</strong> &lt;b&gt;</p>\n<p>Second</p>');
  });

  test('a value equal to the current one changes nothing and sends no event', async () => {
    const s = server();
    const { result, events } = await captureEvents(s, () => s.cast.admin.client.patch('/realm', { allow_message_editing: true, video_chat_provider: 1 }));
    const body = ok(result);
    assert.equal(body.allow_message_editing, undefined);
    assert.equal(events.length, 0);
  });

  test('length limits use Zulip messages', async () => {
    const s = server();
    err(await s.cast.admin.client.patch('/realm', { name: 'x'.repeat(41) }), 400, 'BAD_REQUEST', 'name is too long (limit: 40 characters)');
    err(await s.cast.admin.client.patch('/realm', { description: 'x'.repeat(1001) }), 400, 'BAD_REQUEST', 'description is too long (limit: 1000 characters)');
    err(await s.cast.admin.client.patch('/realm', { allow_message_editing: 'maybe' }), 400, 'BAD_REQUEST', 'allow_message_editing is not a boolean');
  });

  test('mandatory topics: topics_policy and the legacy mandatory_topics stay consistent', async () => {
    const s = server();
    const { result, events } = await captureEvents(s, () => s.cast.admin.client.patch('/realm', { topics_policy: 'disable_empty_topic' }));
    assert.deepEqual(ok(result).topics_policy, 'updated');
    assert.deepEqual(events.map((e) => e.event), [
      { type: 'realm', op: 'update_dict', property: 'default', data: { topics_policy: 'disable_empty_topic', mandatory_topics: true } },
    ]);
    assertEventsConform(events.map((e) => e.event));
    assert.equal((await currentSettings(s)).topics_policy, 'disable_empty_topic');

    err(await s.cast.admin.client.patch('/realm', { topics_policy: 'sometimes' }), 400, 'BAD_REQUEST', 'Invalid topics_policy');

    const legacy = await captureEvents(s, () => s.cast.admin.client.patch('/realm', { mandatory_topics: false }));
    ok(legacy.result);
    assert.deepEqual(legacy.events.map((e) => e.event), [
      { type: 'realm', op: 'update_dict', property: 'default', data: { topics_policy: 'allow_empty_topic', mandatory_topics: false } },
    ]);
  });

  test('empty topic display name is configurable', async () => {
    const s = server();
    const { result, events } = await captureEvents(s, () => s.cast.admin.client.patch('/realm', { empty_topic_display_name: 'lobby' }));
    assert.equal(ok(result).empty_topic_display_name, 'updated');
    assert.deepEqual(events[0]!.event, { type: 'realm', op: 'update', property: 'empty_topic_display_name', value: 'lobby' });
    assert.equal((await currentSettings(s)).empty_topic_display_name, 'lobby');
    ok(await s.cast.admin.client.patch('/realm', { empty_topic_display_name: 'general chat' }));
    err(await s.cast.admin.client.patch('/realm', { empty_topic_display_name: '' }), 400, 'BAD_REQUEST', 'empty_topic_display_name cannot be blank');
  });

  test('group settings: {new, old}, update_dict events, Zulip restrictions', async () => {
    const s = server();
    const g = await groupIds(s);
    const admin = s.cast.admin.client;
    const { result, events } = await captureEvents(s, () =>
      admin.patch('/realm', { can_add_subscribers_group: { new: g['role:moderators'], old: g['role:members'] } }),
    );
    assert.equal(ok(result).can_add_subscribers_group, g['role:moderators']);
    assert.deepEqual(events.map((e) => e.event), [
      { type: 'realm', op: 'update_dict', property: 'default', data: { can_add_subscribers_group: g['role:moderators'] } },
    ]);
    assertEventsConform(events.map((e) => e.event));

    err(
      await admin.patch('/realm', { can_add_subscribers_group: { new: g['role:members'], old: g['role:members'] } }),
      400, 'BAD_REQUEST', "'old' value does not match the expected value.",
    );
    err(await admin.patch('/realm', { can_add_subscribers_group: { new: g['role:internet'] } }), 400, 'BAD_REQUEST', "'can_add_subscribers_group' setting cannot be set to 'role:internet' group.");
    err(await admin.patch('/realm', { can_add_subscribers_group: { new: g['role:everyone'] } }), 400, 'BAD_REQUEST', "'can_add_subscribers_group' setting cannot be set to 'role:everyone' group.");
    err(await admin.patch('/realm', { can_add_subscribers_group: { new: 999999 } }), 400, 'BAD_REQUEST', 'Invalid user group');
    err(await admin.patch('/realm', { can_add_subscribers_group: { new: 'x' } }), 400, 'BAD_REQUEST');
    const web = err(
      await admin.patch('/realm', { can_create_web_public_channel_group: { new: { direct_members: [s.cast.admin.user.id], direct_subgroups: [] } } }),
      400, 'SYSTEM_GROUP_REQUIRED', "'can_create_web_public_channel_group' must be a system user group.",
    );
    assert.equal(web.setting_name, 'can_create_web_public_channel_group');
    err(await admin.patch('/realm', { can_create_web_public_channel_group: { new: g['role:members'] } }), 400, 'BAD_REQUEST', "'can_create_web_public_channel_group' setting cannot be set to 'role:members' group.");
    err(await admin.patch('/realm', { can_access_all_users_group: { new: g['role:administrators'] } }), 400, 'BAD_REQUEST', "'can_access_all_users_group' setting cannot be set to 'role:administrators' group.");

    // An anonymous group: direct members and subgroups, normalized in the response and event.
    const anon = { direct_members: [s.cast.othello.user.id, s.cast.hamlet.user.id], direct_subgroups: [g['role:administrators']] };
    const second = await captureEvents(s, () => admin.patch('/realm', { can_mention_many_users_group: { new: anon } }));
    const expected = { direct_members: [s.cast.hamlet.user.id, s.cast.othello.user.id].sort((a, b) => a - b), direct_subgroups: [g['role:administrators']] };
    assert.deepEqual(ok(second.result).can_mention_many_users_group, expected);
    assert.deepEqual(second.events[0]!.event, { type: 'realm', op: 'update_dict', property: 'default', data: { can_mention_many_users_group: expected } });
    assert.deepEqual((await currentSettings(s)).can_mention_many_users_group, expected);
    err(await admin.patch('/realm', { can_mention_many_users_group: { new: { direct_members: [424242], direct_subgroups: [] } } }), 400, 'BAD_REQUEST', 'Invalid user ID: 424242');
    // An anonymous group with one subgroup and no members is that group.
    ok(await admin.patch('/realm', { can_mention_many_users_group: { new: { direct_members: [], direct_subgroups: [g['role:administrators']] }, old: expected } }));
    assert.equal((await currentSettings(s)).can_mention_many_users_group, g['role:administrators']);
    ok(await admin.patch('/realm', { can_add_subscribers_group: { new: g['role:members'] } }));
  });

  test('deactivated groups cannot be used in realm settings', async () => {
    const s = server();
    const admin = s.cast.admin.client;
    const created = ok(await admin.post('/user_groups/create', { name: 'gravediggers', description: 'Digging', members: [s.cast.hamlet.user.id] }));
    const groupId = created.group_id as number;
    ok(await admin.patch('/realm', { can_add_custom_emoji_group: { new: groupId } }));
    assert.equal((await currentSettings(s)).can_add_custom_emoji_group, groupId);
    const g = await groupIds(s);
    ok(await admin.patch('/realm', { can_add_custom_emoji_group: { new: g['role:members'] } }));
    ok(await admin.post(`/user_groups/${groupId}/deactivate`));
    err(await admin.patch('/realm', { can_add_custom_emoji_group: { new: groupId } }), 400, 'BAD_REQUEST', 'User group is deactivated.');
    err(
      await admin.patch('/realm', { can_add_custom_emoji_group: { new: { direct_members: [], direct_subgroups: [groupId, g['role:moderators']] } } }),
      400, 'BAD_REQUEST', 'User group is deactivated.',
    );
  });

  test('the legacy wildcard_mention_policy sets can_mention_many_users_group', async () => {
    const s = server();
    const g = await groupIds(s);
    const { result, events } = await captureEvents(s, () => s.cast.admin.client.patch('/realm', { wildcard_mention_policy: 7 }));
    assert.equal(ok(result).can_mention_many_users_group, g['role:moderators']);
    assert.deepEqual(events[0]!.event.data, { can_mention_many_users_group: g['role:moderators'] });
    err(await s.cast.admin.client.patch('/realm', { wildcard_mention_policy: 4 }), 400, 'BAD_REQUEST', 'Invalid wildcard_mention_policy');
    ok(await s.cast.admin.client.patch('/realm', { wildcard_mention_policy: 5 }));
    assert.equal((await currentSettings(s)).can_mention_many_users_group, g['role:administrators']);
  });

  test('video call provider', async () => {
    const s = server();
    const { result, events } = await captureEvents(s, () => s.cast.admin.client.patch('/realm', { video_chat_provider: 0 }));
    assert.equal(ok(result).video_chat_provider, 0);
    assert.deepEqual(events[0]!.event, { type: 'realm', op: 'update', property: 'video_chat_provider', value: 0 });
    assertEventsConform(events.map((e) => e.event));
    // Zoom and the vidcall (Webex) provider are offered only when configured.
    err(await s.cast.admin.client.patch('/realm', { video_chat_provider: 3 }), 400, 'BAD_REQUEST', 'Invalid video_chat_provider 3');
    err(await s.cast.admin.client.patch('/realm', { video_chat_provider: 8 }), 400, 'BAD_REQUEST', 'Invalid video_chat_provider 8');
    ok(await s.cast.admin.client.patch('/realm', { video_chat_provider: 1 }));
    err(await s.cast.admin.client.patch('/realm', { jitsi_server_url: 'not a url' }), 400, 'BAD_REQUEST', 'jitsi_server_url is not an allowed_type');
    const jitsi = await captureEvents(s, () => s.cast.admin.client.patch('/realm', { jitsi_server_url: 'https://jitsi.example.com' }));
    assert.equal(ok(jitsi.result).jitsi_server_url, 'updated');
    assert.deepEqual(jitsi.events[0]!.event, { type: 'realm', op: 'update_dict', property: 'default', data: { jitsi_server_url: 'https://jitsi.example.com' } });
    const back = await captureEvents(s, () => s.cast.admin.client.patch('/realm', { jitsi_server_url: 'default' }));
    assert.equal(ok(back.result).jitsi_server_url, null);
    assert.equal((await currentSettings(s)).jitsi_server_url, null);
  });

  test('message edit limits accept "unlimited" and refuse non-positive values', async () => {
    const s = server();
    const admin = s.cast.admin.client;
    const { result, events } = await captureEvents(s, () => admin.patch('/realm', { message_content_edit_limit_seconds: 'unlimited', allow_message_editing: false }));
    const body = ok(result);
    assert.equal(body.message_content_edit_limit_seconds, null);
    assert.equal(body.allow_message_editing, false);
    assert.deepEqual(events.map((e) => e.event), [
      { type: 'realm', op: 'update_dict', property: 'default', data: { allow_message_editing: false } },
      { type: 'realm', op: 'update_dict', property: 'default', data: { message_content_edit_limit_seconds: null } },
    ]);
    assertEventsConform(events.map((e) => e.event));
    const bad = err(await admin.patch('/realm', { message_content_delete_limit_seconds: -5 }), 400, 'REQUEST_VARIABLE_INVALID', "Bad value for 'message_content_delete_limit_seconds': -5");
    assert.equal(bad.var_name, 'message_content_delete_limit_seconds');
    ok(await admin.patch('/realm', { message_content_edit_limit_seconds: 600, allow_message_editing: true, move_messages_within_stream_limit_seconds: 3600 }));
    const after = await currentSettings(s);
    assert.equal(after.message_content_edit_limit_seconds, 600);
    assert.equal(after.move_messages_within_stream_limit_seconds, 3600);
    err(await s.cast.owner.client.patch('/realm', { message_retention_days: 0 }), 400, 'REQUEST_VARIABLE_INVALID', "Bad value for 'message_retention_days': 0");
    ok(await s.cast.owner.client.patch('/realm', { message_retention_days: 'unlimited' }));
    assert.equal((await currentSettings(s)).message_retention_days, -1);
  });

  test('enumerated settings are validated with Zulip messages', async () => {
    const s = server();
    const admin = s.cast.admin.client;
    err(await admin.patch('/realm', { default_language: 'xx' }), 400, 'BAD_REQUEST', "Invalid language 'xx'");
    err(await admin.patch('/realm', { digest_weekday: 7 }), 400, 'BAD_REQUEST', 'Invalid digest_weekday');
    err(await admin.patch('/realm', { giphy_rating: 9 }), 400, 'BAD_REQUEST', 'Invalid giphy_rating 9');
    err(await admin.patch('/realm', { message_edit_history_visibility_policy: 'some' }), 400, 'BAD_REQUEST', 'Invalid message_edit_history_visibility_policy');
    err(await admin.patch('/realm', { media_preview_size: 120 }), 400, 'BAD_REQUEST', 'Invalid media_preview_size');
    err(await s.cast.owner.client.patch('/realm', { waiting_period_threshold: -1 }), 400, 'BAD_REQUEST', 'waiting_period_threshold is too small');
    err(await admin.patch('/realm', { new_stream_announcements_stream_id: 987654 }), 400, 'BAD_REQUEST', 'Invalid channel ID');
    const body = ok(await admin.patch('/realm', { default_language: 'de', digest_weekday: 4, message_edit_history_visibility_policy: 'moves', enable_read_receipts: true }));
    assert.deepEqual(body, { result: 'success', msg: '', default_language: 'updated', digest_weekday: 4, message_edit_history_visibility_policy: 'updated', enable_read_receipts: true });
    const after = await currentSettings(s);
    assert.equal(after.default_language, 'de');
    assert.equal(after.message_edit_history_visibility_policy, 'moves');
    assert.equal(after.enable_read_receipts, true);
  });

  test('the organization-wide email_address_visibility sets every user and the default for new users', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    err(await admin.client.patch('/realm', { email_address_visibility: 9 }), 400, 'BAD_REQUEST', 'Invalid email_address_visibility');
    const { result, events } = await captureEvents(s, () => admin.client.patch('/realm', { email_address_visibility: 3 }));
    assert.equal(ok(result).email_address_visibility, 3);
    const types = events.map((e) => e.event.type);
    assert.ok(types.includes('realm_user_settings_defaults'));
    const own = events.filter((e) => e.event.type === 'user_settings');
    assert.ok(own.some((e) => recipientIds(e).join() === String(hamlet.user.id)));
    assert.ok(types.includes('realm_user'));
    assertEventsConform(events.map((e) => e.event));
    const seen = ok(await othello.client.get(`/users/${hamlet.user.id}`)).user;
    assert.equal(seen.delivery_email, null);
    assert.notEqual(seen.email, hamlet.user.email);
    assert.equal(ok(await admin.client.get(`/users/${hamlet.user.id}`)).user.delivery_email, hamlet.user.email);
    // Same value again: nothing changes.
    const again = await captureEvents(s, () => admin.client.patch('/realm', { email_address_visibility: 3 }));
    assert.equal(ok(again.result).email_address_visibility, undefined);
    assert.equal(again.events.length, 0);
    ok(await admin.client.patch('/realm', { email_address_visibility: 1 }));
    assert.equal(ok(await othello.client.get(`/users/${hamlet.user.id}`)).user.email, hamlet.user.email);
  });

  test('unknown parameters are reported, not refused', async () => {
    const s = server();
    const body = ok(await s.cast.admin.client.patch('/realm', { no_such_setting: 1 }));
    assert.deepEqual(body.ignored_parameters_unsupported, ['no_such_setting']);
  });
});
