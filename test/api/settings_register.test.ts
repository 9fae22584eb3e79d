import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { fetchSystemGroups } from '../../src/db/repos/user_groups.js';
import { ZULIP_FEATURE_LEVEL } from '../../src/version.js';

const SETTINGS_TYPES = ['realm', 'user_settings', 'realm_user_settings_defaults', 'realm_linkifiers', 'realm_filters', 'realm_billing'];
const MODERN = { user_settings_object: true, linkifier_url_template: true };

forEachDatabase('POST /register settings state', (server) => {
  test('realm and user_settings keys, as zulip.yaml documents them', async () => {
    const s = server();
    const res = await s.cast.hamlet.client.post('/register', { fetch_event_types: SETTINGS_TYPES, event_types: ['realm'], client_capabilities: MODERN });
    const body = ok(res);
    assertConforms(res, 'POST', '/register');
    const url = s.config.externalUrl;
    assert.equal(body.realm_url, url);
    assert.equal(body.realm_uri, url);
    assert.match(body.realm_icon_url, /^http/);
    assert.equal(body.server_emoji_data_url, `${url}/static/generated/emoji/emoji_api.json`);
    assert.equal(body.realm_topics_policy, 'allow_empty_topic');
    assert.equal(body.realm_mandatory_topics, false);
    assert.equal(body.realm_empty_topic_display_name, 'general chat');
    assert.equal(body.realm_wildcard_mention_policy, 5);
    assert.equal(body.realm_waiting_period_threshold, 0);
    assert.equal(body.realm_allow_message_editing, true);
    assert.equal(body.realm_message_content_edit_limit_seconds, 600);
    assert.equal(body.realm_message_content_delete_limit_seconds, 600);
    assert.equal(body.realm_allow_edit_history, true);
    assert.equal(body.realm_enable_read_receipts, false);
    assert.equal(body.realm_presence_disabled, false);
    assert.equal(body.realm_push_notifications_enabled, false);
    assert.equal(body.realm_message_retention_days, -1);
    assert.equal(body.realm_video_chat_provider, 1);
    assert.deepEqual(Object.keys(body.realm_available_video_chat_providers).sort(), ['disabled', 'jitsi_meet']);
    assert.equal(body.jitsi_server_url, s.config.jitsiServerUrl);
    assert.equal(typeof body.realm_default_external_accounts, 'object');
    assert.deepEqual(body.realm_linkifiers, []);
    assert.deepEqual(body.realm_filters, []);
    assert.equal(body.max_file_upload_size_mib, 25);
    assert.equal(body.max_stream_name_length, 60);
    assert.equal(body.max_topic_length, 60);
    assert.equal(body.max_message_length, 10000);
    assert.equal(body.server_presence_ping_interval_seconds, 60);
    assert.equal(body.server_presence_offline_threshold_seconds, 140);
    assert.equal(typeof body.server_typing_started_expiry_period_milliseconds, 'number');
    assert.equal(body.event_queue_longpoll_timeout_seconds, 90);
    assert.equal(body.zulip_plan_is_not_limited, true);
    assert.equal(body.zulip_feature_level, ZULIP_FEATURE_LEVEL);
    const groups = Object.fromEntries((await fetchSystemGroups(s.app.services.db.kysely, s.realm.id)).map((g) => [g.name, g.id]));
    assert.equal(body.realm_can_add_subscribers_group, groups['role:members']);
    assert.equal(body.realm_can_invite_users_group, groups['role:members']);
    assert.equal(body.realm_can_mention_many_users_group, groups['role:administrators']);
    assert.equal(body.realm_can_create_web_public_channel_group, groups['role:owners']);
    const us = body.user_settings;
    for (const k of ['twenty_four_hour_time', 'send_private_typing_notifications', 'pm_content_in_desktop_notifications', 'starred_message_counts', 'display_emoji_reaction_users', 'presence_enabled', 'enable_drafts_synchronization', 'automatically_follow_topics_where_mentioned']) {
      assert.equal(typeof us[k], 'boolean', k);
    }
    assert.equal(us.emojiset, 'google');
    assert.equal(us.automatically_follow_topics_policy, 3);
    assert.equal(us.automatically_unmute_topics_in_muted_streams_policy, 2);
    assert.equal(us.email_address_visibility, 1);
    assert.equal(typeof us.timezone, 'string');
    assert.equal(body.realm_user_settings_defaults.emojiset, 'google');
    assert.deepEqual(body.realm_billing, { has_pending_sponsorship_request: false });
    // Legacy top-level copies only go to clients without user_settings_object.
    assert.equal(body.twenty_four_hour_time, undefined);
  });

  test('settings changes are read back by a new register', async () => {
    const s = server();
    const groups = Object.fromEntries((await fetchSystemGroups(s.app.services.db.kysely, s.realm.id)).map((g) => [g.name, g.id]));
    ok(await s.cast.admin.client.patch('/realm', {
      topics_policy: 'disable_empty_topic',
      can_mention_many_users_group: { new: groups['role:moderators'] },
      video_chat_provider: 0,
      message_edit_history_visibility_policy: 'none',
      can_add_subscribers_group: { new: { direct_members: [s.cast.othello.user.id], direct_subgroups: [groups['role:administrators']] } },
    }));
    ok(await s.cast.othello.client.patch('/settings', { twenty_four_hour_time: true, automatically_follow_topics_policy: 4, enable_drafts_synchronization: false }));
    const res = await s.cast.othello.client.post('/register', { fetch_event_types: SETTINGS_TYPES, client_capabilities: MODERN });
    const body = ok(res);
    assertConforms(res, 'POST', '/register');
    assert.equal(body.realm_topics_policy, 'disable_empty_topic');
    assert.equal(body.realm_mandatory_topics, true);
    assert.equal(body.realm_wildcard_mention_policy, 7);
    assert.equal(body.realm_can_mention_many_users_group, groups['role:moderators']);
    assert.equal(body.realm_video_chat_provider, 0);
    assert.equal(body.realm_allow_edit_history, false);
    assert.deepEqual(body.realm_can_add_subscribers_group, { direct_members: [s.cast.othello.user.id], direct_subgroups: [groups['role:administrators']] });
    assert.equal(body.user_settings.twenty_four_hour_time, true);
    assert.equal(body.user_settings.automatically_follow_topics_policy, 4);
    assert.equal(body.user_settings.enable_drafts_synchronization, false);

    // A deactivated direct member drops out of the anonymous group's API value.
    ok(await s.cast.admin.client.delete(`/users/${s.cast.othello.user.id}`));
    const later = ok(await s.cast.hamlet.client.post('/register', { fetch_event_types: ['realm'], client_capabilities: MODERN }));
    assert.deepEqual(later.realm_can_add_subscribers_group, { direct_members: [], direct_subgroups: [groups['role:administrators']] });
  });

  test('the complete register response conforms to zulip.yaml: no legacy top-level setting copies (gone since feature level 439)', async () => {
    const s = server();
    const res = await s.cast.hamlet.client.post('/register', {});
    const body = ok(res);
    for (const k of ['twenty_four_hour_time', 'pm_content_in_desktop_notifications', 'emojiset', 'available_notification_sounds']) assert.equal(body[k], undefined, k);
    assert.equal(body.user_settings.twenty_four_hour_time, false);
    assert.equal(body.user_settings.pm_content_in_desktop_notifications, true);
    // has_vidcall_token is our spec's name for has_webex_token, which zulip.yaml cannot know.
    assert.equal(body.has_vidcall_token, body.has_webex_token);
    delete body.has_vidcall_token;
    assertConforms(res, 'POST', '/register');
  });

  test('without linkifier_url_template, Zulip sends no linkifiers', async () => {
    const s = server();
    const legacy = ok(await s.cast.hamlet.client.post('/register', { fetch_event_types: ['realm_linkifiers', 'realm_filters'] }));
    assert.deepEqual(legacy.realm_linkifiers, []);
    assert.deepEqual(legacy.realm_filters, []);
  });
});
