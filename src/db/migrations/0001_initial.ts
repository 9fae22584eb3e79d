import { sql, type ColumnDefinitionBuilder, type CreateTableBuilder, type Kysely } from 'kysely';
import type { Dialect } from '../index.js';

type Col = (c: ColumnDefinitionBuilder) => ColumnDefinitionBuilder;
const notNull: Col = (c) => c.notNull();

/**
 * The whole first schema. Every row belongs to a realm (directly, or through its user,
 * stream or message), so one server can host several organizations.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const table = (name: string): CreateTableBuilder<string, 'id'> =>
    db.schema.createTable(name).addColumn('id', dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
      dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
    );
  const plain = (name: string): CreateTableBuilder<string, never> => db.schema.createTable(name);
  const text = 'text';
  const int = 'integer';
  const big = 'bigint';
  const dflt = (v: string | number): Col => (c) => c.notNull().defaultTo(v);

  await table('realms')
    .addColumn('string_id', text, notNull)
    .addColumn('name', text, notNull)
    .addColumn('description', text, dflt(''))
    .addColumn('date_created', big, notNull)
    .addColumn('deactivated', int, dflt(0))
    .addColumn('settings', text, dflt('{}'))
    .addColumn('icon_source', text, dflt('G'))
    .addColumn('icon_version', int, dflt(1))
    .execute();
  await db.schema.createIndex('realms_string_id').unique().on('realms').column('string_id').execute();

  await table('users')
    .addColumn('realm_id', big, notNull)
    .addColumn('email', text, notNull)
    .addColumn('email_lc', text, notNull)
    .addColumn('delivery_email', text, notNull)
    .addColumn('full_name', text, notNull)
    .addColumn('password_hash', text)
    .addColumn('api_key', text, notNull)
    .addColumn('role', int, dflt(400))
    .addColumn('is_active', int, dflt(1))
    .addColumn('is_bot', int, dflt(0))
    .addColumn('bot_type', int)
    .addColumn('bot_owner_id', big)
    .addColumn('is_imported_stub', int, dflt(0))
    .addColumn('is_deleted', int, dflt(0))
    .addColumn('timezone', text, dflt(''))
    .addColumn('avatar_source', text, dflt('G'))
    .addColumn('avatar_version', int, dflt(1))
    .addColumn('date_joined', big, notNull)
    .addColumn('last_login', big)
    .addColumn('can_change_user_emails', int, dflt(0))
    .addColumn('can_create_users', int, dflt(0))
    .addColumn('can_forge_sender', int, dflt(0))
    .addColumn('settings', text, dflt('{}'))
    .addColumn('tos_version', text)
    .execute();
  await db.schema.createIndex('users_realm_email').unique().on('users').columns(['realm_id', 'email_lc']).execute();
  await db.schema.createIndex('users_api_key').unique().on('users').column('api_key').execute();

  await table('streams')
    .addColumn('realm_id', big, notNull)
    .addColumn('name', text, notNull)
    .addColumn('name_lc', text, notNull)
    .addColumn('description', text, dflt(''))
    .addColumn('rendered_description', text, dflt(''))
    .addColumn('invite_only', int, dflt(0))
    .addColumn('is_web_public', int, dflt(0))
    .addColumn('history_public_to_subscribers', int, dflt(1))
    .addColumn('date_created', big, notNull)
    .addColumn('creator_id', big)
    .addColumn('first_message_id', big)
    .addColumn('deactivated', int, dflt(0))
    .addColumn('message_retention_days', int)
    .addColumn('topics_policy', text, dflt('inherit'))
    .addColumn('folder_id', big)
    .addColumn('permissions', text, dflt('{}'))
    .execute();
  await db.schema.createIndex('streams_realm_name').unique().on('streams').columns(['realm_id', 'name_lc']).execute();

  await plain('subscriptions')
    .addColumn('user_id', big, notNull)
    .addColumn('stream_id', big, notNull)
    .addColumn('realm_id', big, notNull)
    .addColumn('active', int, dflt(1))
    .addColumn('is_muted', int, dflt(0))
    .addColumn('pin_to_top', int, dflt(0))
    .addColumn('color', text, dflt('#c2c2c2'))
    .addColumn('desktop_notifications', int)
    .addColumn('audible_notifications', int)
    .addColumn('push_notifications', int)
    .addColumn('email_notifications', int)
    .addColumn('wildcard_mentions_notify', int)
    .addPrimaryKeyConstraint('subscriptions_pk', ['user_id', 'stream_id'])
    .execute();
  await db.schema.createIndex('subscriptions_stream').on('subscriptions').columns(['stream_id', 'active']).execute();

  await table('messages')
    .addColumn('realm_id', big, notNull)
    .addColumn('sender_id', big, notNull)
    .addColumn('type', text, notNull)
    .addColumn('stream_id', big)
    .addColumn('topic', text, dflt(''))
    .addColumn('topic_lc', text, dflt(''))
    .addColumn('dm_key', text)
    .addColumn('content', text, notNull)
    .addColumn('rendered_content', text, notNull)
    .addColumn('rendered_content_version', int, dflt(1))
    .addColumn('date_sent', big, notNull)
    .addColumn('sending_client', text, dflt('API'))
    .addColumn('last_edit_time', big)
    .addColumn('last_moved_time', big)
    .addColumn('edit_history', text)
    .addColumn('has_link', int, dflt(0))
    .addColumn('has_image', int, dflt(0))
    .addColumn('has_attachment', int, dflt(0))
    .execute();
  await db.schema.createIndex('messages_stream_topic').on('messages').columns(['stream_id', 'topic_lc', 'id']).execute();
  await db.schema.createIndex('messages_stream').on('messages').columns(['stream_id', 'id']).execute();
  await db.schema.createIndex('messages_dm').on('messages').columns(['dm_key', 'id']).execute();
  await db.schema.createIndex('messages_sender').on('messages').columns(['sender_id', 'id']).execute();
  await db.schema.createIndex('messages_realm').on('messages').columns(['realm_id', 'id']).execute();

  await plain('user_messages')
    .addColumn('user_id', big, notNull)
    .addColumn('message_id', big, notNull)
    .addColumn('flags', big, dflt(0))
    .addPrimaryKeyConstraint('user_messages_pk', ['user_id', 'message_id'])
    .execute();
  await db.schema.createIndex('user_messages_message').on('user_messages').column('message_id').execute();
  // Unread and starred lookups touch a small fraction of a user's rows: partial indexes keep them cheap.
  await sql`CREATE INDEX user_messages_unread ON user_messages (user_id, message_id) WHERE (flags & 1) = 0`.execute(db);
  await sql`CREATE INDEX user_messages_starred ON user_messages (user_id, message_id) WHERE (flags & 2) <> 0`.execute(db);

  await table('reactions')
    .addColumn('message_id', big, notNull)
    .addColumn('user_id', big, notNull)
    .addColumn('emoji_name', text, notNull)
    .addColumn('emoji_code', text, notNull)
    .addColumn('reaction_type', text, notNull)
    .execute();
  await db.schema
    .createIndex('reactions_unique')
    .unique()
    .on('reactions')
    .columns(['message_id', 'user_id', 'reaction_type', 'emoji_code'])
    .execute();

  await table('user_groups')
    .addColumn('realm_id', big, notNull)
    .addColumn('name', text, notNull)
    .addColumn('name_lc', text, notNull)
    .addColumn('description', text, dflt(''))
    .addColumn('is_system_group', int, dflt(0))
    .addColumn('deactivated', int, dflt(0))
    .addColumn('date_created', big)
    .addColumn('creator_id', big)
    .addColumn('permissions', text, dflt('{}'))
    .execute();
  await db.schema.createIndex('user_groups_realm_name').unique().on('user_groups').columns(['realm_id', 'name_lc']).execute();

  await plain('group_members')
    .addColumn('group_id', big, notNull)
    .addColumn('user_id', big, notNull)
    .addPrimaryKeyConstraint('group_members_pk', ['group_id', 'user_id'])
    .execute();
  await db.schema.createIndex('group_members_user').on('group_members').column('user_id').execute();
  await plain('group_subgroups')
    .addColumn('group_id', big, notNull)
    .addColumn('subgroup_id', big, notNull)
    .addPrimaryKeyConstraint('group_subgroups_pk', ['group_id', 'subgroup_id'])
    .execute();

  await plain('user_topics')
    .addColumn('user_id', big, notNull)
    .addColumn('stream_id', big, notNull)
    .addColumn('topic', text, notNull)
    .addColumn('topic_lc', text, notNull)
    .addColumn('visibility_policy', int, notNull)
    .addColumn('last_updated', big, notNull)
    .addPrimaryKeyConstraint('user_topics_pk', ['user_id', 'stream_id', 'topic_lc'])
    .execute();
  await db.schema.createIndex('user_topics_stream').on('user_topics').columns(['stream_id', 'topic_lc']).execute();

  await table('drafts')
    .addColumn('user_id', big, notNull)
    .addColumn('type', text, notNull)
    .addColumn('to', text, dflt('[]'))
    .addColumn('topic', text, dflt(''))
    .addColumn('content', text, notNull)
    .addColumn('last_edit_time', big, notNull)
    .execute();
  await db.schema.createIndex('drafts_user').on('drafts').column('user_id').execute();

  await plain('navigation_views')
    .addColumn('user_id', big, notNull)
    .addColumn('fragment', text, notNull)
    .addColumn('is_pinned', int, notNull)
    .addColumn('name', text)
    .addPrimaryKeyConstraint('navigation_views_pk', ['user_id', 'fragment'])
    .execute();

  await table('saved_snippets')
    .addColumn('realm_id', big, notNull)
    .addColumn('user_id', big, notNull)
    .addColumn('title', text, notNull)
    .addColumn('content', text, notNull)
    .addColumn('date_created', big, notNull)
    .execute();
  await db.schema.createIndex('saved_snippets_user').on('saved_snippets').column('user_id').execute();

  await table('realm_playgrounds')
    .addColumn('realm_id', big, notNull)
    .addColumn('name', text, notNull)
    .addColumn('pygments_language', text, notNull)
    .addColumn('url_template', text, notNull)
    .execute();
  await db.schema
    .createIndex('realm_playgrounds_unique')
    .unique()
    .on('realm_playgrounds')
    .columns(['realm_id', 'pygments_language', 'name'])
    .execute();

  await plain('realm_domains')
    .addColumn('realm_id', big, notNull)
    .addColumn('domain', text, notNull)
    .addColumn('allow_subdomains', int, dflt(0))
    .addPrimaryKeyConstraint('realm_domains_pk', ['realm_id', 'domain'])
    .execute();

  await table('custom_profile_fields')
    .addColumn('realm_id', big, notNull)
    .addColumn('name', text, notNull)
    .addColumn('hint', text, dflt(''))
    .addColumn('type', int, notNull)
    .addColumn('field_data', text, dflt(''))
    .addColumn('order', int, dflt(0))
    .addColumn('display_in_profile_summary', int, dflt(0))
    .addColumn('required', int, dflt(0))
    .addColumn('editable_by_user', int, dflt(1))
    .execute();

  await plain('custom_profile_values')
    .addColumn('user_id', big, notNull)
    .addColumn('field_id', big, notNull)
    .addColumn('value', text, notNull)
    .addColumn('rendered_value', text)
    .addPrimaryKeyConstraint('custom_profile_values_pk', ['user_id', 'field_id'])
    .execute();

  await table('invites')
    .addColumn('realm_id', big, notNull)
    .addColumn('email', text, dflt(''))
    .addColumn('referred_by', big, notNull)
    .addColumn('invited_as', int, dflt(400))
    .addColumn('date_created', big, notNull)
    .addColumn('expiry', big)
    .addColumn('stream_ids', text, dflt('[]'))
    .addColumn('group_ids', text, dflt('[]'))
    .addColumn('include_realm_default_subscriptions', int, dflt(0))
    .addColumn('notify_referrer_on_join', int, dflt(1))
    .addColumn('welcome_message_custom_text', text)
    .addColumn('status', int, dflt(0))
    .addColumn('key', text, notNull)
    .addColumn('multiuse', int, dflt(0))
    .execute();
  await db.schema.createIndex('invites_key').unique().on('invites').column('key').execute();
  await db.schema.createIndex('invites_realm').on('invites').columns(['realm_id', 'status']).execute();

  await table('push_devices')
    .addColumn('user_id', big, notNull)
    .addColumn('kind', text, notNull)
    .addColumn('token', text, notNull)
    .addColumn('app_id', text)
    .addColumn('date_created', big, notNull)
    .execute();
  await db.schema.createIndex('push_devices_unique').unique().on('push_devices').columns(['user_id', 'kind', 'token']).execute();

  await plain('external_tokens')
    .addColumn('user_id', big, notNull)
    .addColumn('provider', text, notNull)
    .addColumn('token', text, notNull)
    .addColumn('date_created', big, notNull)
    .addPrimaryKeyConstraint('external_tokens_pk', ['user_id', 'provider'])
    .execute();

  await plain('default_streams')
    .addColumn('realm_id', big, notNull)
    .addColumn('stream_id', big, notNull)
    .addPrimaryKeyConstraint('default_streams_pk', ['realm_id', 'stream_id'])
    .execute();

  await table('linkifiers')
    .addColumn('realm_id', big, notNull)
    .addColumn('pattern', text, notNull)
    .addColumn('url_template', text, notNull)
    .addColumn('order', int, dflt(0))
    .execute();

  await table('realm_emoji')
    .addColumn('realm_id', big, notNull)
    .addColumn('name', text, notNull)
    .addColumn('file_name', text, notNull)
    .addColumn('author_id', big)
    .addColumn('deactivated', int, dflt(0))
    .execute();

  await plain('presence')
    .addColumn('user_id', big, (c) => c.primaryKey())
    .addColumn('realm_id', big, notNull)
    .addColumn('last_active_time', big)
    .addColumn('last_connected_time', big)
    .addColumn('last_update_id', big, dflt(0))
    .execute();
  await db.schema.createIndex('presence_realm').on('presence').column('realm_id').execute();

  await plain('alert_words')
    .addColumn('user_id', big, notNull)
    .addColumn('word', text, notNull)
    .addPrimaryKeyConstraint('alert_words_pk', ['user_id', 'word'])
    .execute();

  await plain('muted_users')
    .addColumn('user_id', big, notNull)
    .addColumn('muted_user_id', big, notNull)
    .addColumn('date_muted', big, notNull)
    .addPrimaryKeyConstraint('muted_users_pk', ['user_id', 'muted_user_id'])
    .execute();

  await table('audit_log')
    .addColumn('realm_id', big, notNull)
    .addColumn('acting_user_id', big)
    .addColumn('modified_user_id', big)
    .addColumn('modified_stream_id', big)
    .addColumn('modified_group_id', big)
    .addColumn('event_type', text, notNull)
    .addColumn('event_time', big, notNull)
    .addColumn('extra_data', text, dflt('{}'))
    .execute();
  await db.schema.createIndex('audit_log_realm').on('audit_log').columns(['realm_id', 'id']).execute();

  await plain('sessions')
    .addColumn('id', text, (c) => c.primaryKey())
    .addColumn('user_id', big, notNull)
    .addColumn('expires', big, notNull)
    .execute();

  await plain('user_status')
    .addColumn('user_id', big, (c) => c.primaryKey())
    .addColumn('status_text', text, dflt(''))
    .addColumn('emoji_name', text, dflt(''))
    .addColumn('emoji_code', text, dflt(''))
    .addColumn('reaction_type', text, dflt(''))
    .addColumn('timestamp', big, notNull)
    .execute();
}
