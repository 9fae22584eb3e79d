import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import type { ApiResponse } from '../helpers/client.js';

/**
 * POST /register as the real clients send it (../shared/clients.md §1, §2, §6): every one
 * must succeed (zulip-mobile logs out on any 4xx) and get every key some client reads.
 */

/** The union of register keys the clients read (clients.md §6). */
const CLIENT_KEYS = `queue_id last_event_id max_message_id zulip_version zulip_feature_level zulip_merge_base user_id email
  full_name realm_name realm_uri realm_icon_url realm_users realm_non_active_users cross_realm_bots can_create_streams
  subscriptions unsubscribed never_subscribed streams unread_msgs starred_messages presences server_timestamp muted_topics
  user_topics muted_users realm_user_groups realm_emoji custom_profile_fields alert_words recent_private_conversations
  user_status user_settings realm_message_retention_days realm_allow_message_editing realm_message_content_edit_limit_seconds
  realm_message_content_delete_limit_seconds realm_allow_edit_history realm_mandatory_topics realm_topics_policy
  realm_wildcard_mention_policy realm_waiting_period_threshold realm_enable_read_receipts realm_presence_disabled
  realm_default_external_accounts realm_linkifiers realm_filters realm_description realm_video_chat_provider
  realm_available_video_chat_providers realm_push_notifications_enabled realm_empty_topic_display_name
  max_stream_name_length max_topic_length max_message_length max_file_upload_size_mib server_presence_ping_interval_seconds
  server_presence_offline_threshold_seconds server_typing_started_expiry_period_milliseconds
  server_typing_stopped_wait_period_milliseconds server_typing_started_wait_period_milliseconds server_emoji_data_url
  event_queue_longpoll_timeout_seconds`.split(/\s+/);

/** Our spec serves has_vidcall_token beside Zulip's has_webex_token; zulip.yaml knows only the latter. */
function assertRegisterConforms(res: ApiResponse): void {
  const body = { ...res.body };
  delete body.has_vidcall_token;
  assertConforms({ ...res, body }, 'POST', '/register');
}

const FLUTTER_CAPABILITIES = {
  notification_settings_null: true,
  bulk_message_deletion: true,
  user_avatar_url_field_optional: true,
  stream_typing_notifications: true,
  user_settings_object: true,
  include_deactivated_groups: true,
  empty_topic_name: true,
  individual_emoji_changes: true,
};

forEachDatabase('POST /register as real clients send it', (server) => {
  test('zulip-flutter: everything, slim presence, "mobile" timeout', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const res = await hamlet.client.post('/register', {
      apply_markdown: true,
      client_gravatar: false,
      slim_presence: true,
      idle_queue_timeout: '"mobile"',
      client_capabilities: FLUTTER_CAPABILITIES,
    });
    const body = ok(res);
    assertRegisterConforms(res);
    assert.deepEqual(CLIENT_KEYS.filter((k) => !(k in body)), []);
    assert.ok(body.zulip_feature_level >= 277);
    assert.equal(body.idle_queue_timeout_secs, 43200);
    assert.ok(body.realm_users.some((u: { user_id: number }) => u.user_id === hamlet.user.id), 'the caller is in realm_users');
    assert.match(body.realm_uri, /^https?:\/\//);
    for (const key of Object.keys(body.presences)) assert.match(key, /^\d+$/);
  });

  test('zulip-mobile: form body, legacy presence, client_gravatar', async () => {
    const s = server();
    const res = await s.cast.hamlet.client.post('/register', {
      apply_markdown: true,
      client_gravatar: true,
      include_subscribers: false,
      client_capabilities: { notification_settings_null: true, bulk_message_deletion: true, user_avatar_url_field_optional: true, user_settings_object: true },
      fetch_event_types: [
        'alert_words', 'custom_profile_fields', 'message', 'muted_topics', 'muted_users', 'presence', 'realm', 'realm_emoji',
        'realm_filters', 'realm_linkifiers', 'realm_user', 'realm_user_groups', 'recent_private_conversations', 'stream',
        'subscription', 'update_display_settings', 'update_global_notifications', 'update_message_flags', 'user_settings',
        'user_status', 'user_topic', 'zulip_version',
      ],
    });
    const body = ok(res);
    assertRegisterConforms(res);
    for (const key of ['presences', 'realm_users', 'subscriptions', 'unread_msgs', 'realm_emoji', 'queue_id', 'last_event_id']) {
      assert.ok(key in body, key);
    }
    for (const key of Object.keys(body.presences)) assert.match(key, /@/);
  });

  test('zulip-terminal: event_types and fetch_event_types lists, include_subscribers', async () => {
    const s = server();
    const res = await s.cast.hamlet.client.post('/register', {
      event_types: ['message', 'update_message', 'reaction', 'submessage', 'subscription', 'typing', 'update_message_flags', 'user_settings', 'realm_emoji', 'realm_user'],
      fetch_event_types: ['realm', 'presence', 'subscription', 'message', 'starred_messages', 'update_message_flags', 'muted_topics', 'realm_user', 'realm_user_groups', 'user_settings', 'realm_emoji', 'custom_profile_fields', 'zulip_version'],
      client_gravatar: true,
      apply_markdown: true,
      include_subscribers: true,
      narrow: [],
    });
    const body = ok(res);
    assertRegisterConforms(res);
    for (const key of ['queue_id', 'last_event_id', 'max_message_id', 'zulip_version', 'user_id', 'email', 'full_name', 'realm_name', 'realm_users', 'cross_realm_bots', 'presences', 'subscriptions', 'realm_message_retention_days', 'muted_topics', 'realm_user_groups', 'unread_msgs', 'realm_emoji', 'starred_messages']) {
      assert.ok(key in body, key);
    }
  });

  test('python call_on_each_event and zulip-js: event types only', async () => {
    const s = server();
    const py = ok(await s.cast.hamlet.client.post('/register', { event_types: ['message'], narrow: '[]' }));
    assert.equal(typeof py.queue_id, 'string');
    assert.equal(py.last_event_id, -1);
    const js = await s.cast.hamlet.client.post('/register', { event_types: 'null' }, 'multipart');
    ok(js);
    assertRegisterConforms(js);
  });

  test('malformed parameters are 400 errors naming the parameter', async () => {
    const s = server();
    const c = s.cast.hamlet.client;
    err(await c.post('/register', { event_types: '{' }), 400, 'BAD_REQUEST', 'Argument "event_types" is not valid JSON.');
    err(await c.post('/register', { event_types: [1] }), 400, 'BAD_REQUEST', 'event_types[0] is not a string');
    err(await c.post('/register', { client_capabilities: '[]' }), 400, 'BAD_REQUEST', 'client_capabilities is not a dict');
    err(await c.post('/register', { include_subscribers: 'sometimes' }), 400, 'BAD_REQUEST', 'Invalid include_subscribers');
    err(await c.post('/register', { apply_markdown: 'maybe' }), 400, 'BAD_REQUEST', 'apply_markdown is not a boolean');
    err(await s.anonymous.post('/register', {}), 401, 'UNAUTHORIZED');
  });
});
