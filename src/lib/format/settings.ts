import { serverThumbnailFormats } from '../thumbnail.js';
import type { Config } from '../../config.js';
import type { Realm, User } from '../../db/tables.js';
import { normalizeGroupSettingValue, USER_GROUP_PERMISSION_CONFIG, type GroupPermissionConfig, type GroupSettingValue } from '../group_settings.js';
import { CHANNEL_PERMISSION_CONFIG } from '../access/streams.js';
import {
  availableVideoChatProviders,
  DEFAULT_EXTERNAL_ACCOUNTS,
  GIF_RATING_OPTIONS,
  mandatoryTopics,
  REALM_GROUP_SETTING_CONFIG,
  REALM_GROUP_SETTING_NAMES,
  realmSettings,
  WILDCARD_MENTION_POLICY_GROUPS,
  type RealmSettings,
} from '../realm_settings.js';
import {
  AVAILABLE_NOTIFICATION_SOUNDS,
  EMOJISET_CHOICES,
  USER_SETTING_NAMES,
  userSettings,
  type StoredUserSettings,
} from '../user_settings.js';
import { realmIconUrl, realmLogoUrl, realmUrl } from '../urls.js';
import { renderMarkdown } from '../markdown/index.js';
import { formatRealmAuthMethods, realmAuthMethods } from '../auth_methods.js';
import {
  MAX_FILE_UPLOAD_SIZE_MIB,
  MAX_MESSAGE_LENGTH,
  MAX_STREAM_DESCRIPTION_LENGTH,
  MAX_STREAM_NAME_LENGTH,
  MAX_TOPIC_LENGTH,
} from '../../version.js';

/**
 * Server-level parameters Zulip reports with the realm state (Zulip's defaults). The presence
 * and typing intervals and server_emoji_data_url come from the presence area's fetcher.
 */
export const EVENT_QUEUE_LONGPOLL_TIMEOUT_SECONDS = 90;
export const MAX_AVATAR_FILE_SIZE_MIB = 5;
export const MAX_ICON_FILE_SIZE_MIB = 5;
export const MAX_LOGO_FILE_SIZE_MIB = 5;
export const PASSWORD_MAX_LENGTH = 100;
export const MAX_CHANNEL_FOLDER_NAME_LENGTH = 60;
export const MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH = 1024;
export const MAX_REMINDER_NOTE_LENGTH = 1000;
export const MAX_BULK_NEW_SUBSCRIPTION_MESSAGES = 100;
/** When this process started: Zulip's server_generation. */
export const SERVER_GENERATION = Math.floor(Date.now() / 1000);

export const REPORT_MESSAGE_REASONS: Record<string, string> = {
  spam: 'Spam',
  harassment: 'Harassment',
  inappropriate: 'Inappropriate content',
  norms: 'Violates community norms',
  other: 'Other reason',
};

const SYSTEM_GROUP_NAMES = ['role:internet', 'role:everyone', 'role:members', 'role:fullmembers', 'role:moderators', 'role:administrators', 'role:owners', 'role:nobody'];

/** One permission table as Zulip's server_supported_permission_settings describes it. */
function permissionSettingsMetadata(table: Record<string, GroupPermissionConfig>): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [name, c] of Object.entries(table)) {
    const creatorDefault = !c.defaultGroupName.startsWith('role:');
    const entry: Record<string, unknown> = {
      require_system_group: c.requireSystemGroup,
      allow_internet_group: c.allowInternetGroup,
      allow_nobody_group: c.allowNobodyGroup,
      allow_everyone_group: c.allowEveryoneGroup,
      default_group_name: c.defaultGroupName,
      // Settings defaulting to the creator fall back to nobody for system-created objects.
      default_for_system_groups: creatorDefault ? 'role:nobody' : null,
    };
    if (c.forbiddenSystemGroups) entry.allowed_system_groups = SYSTEM_GROUP_NAMES.filter((g) => !c.forbiddenSystemGroups!.includes(g));
    out[name] = entry;
  }
  return out;
}

/** A stored group-setting value in API form, anonymous groups without deactivated members. */
export function formatGroupSettingValue(value: GroupSettingValue, inactiveUserIds: ReadonlySet<number>): GroupSettingValue {
  const v = normalizeGroupSettingValue(value);
  if (typeof v === 'number') return v;
  return { direct_members: v.direct_members.filter((u) => !inactiveUserIds.has(u)), direct_subgroups: v.direct_subgroups };
}

const COMMON_POLICY_GROUPS: Record<string, number> = {
  'role:members': 1,
  'role:administrators': 2,
  'role:fullmembers': 3,
  'role:moderators': 4,
};
const WEB_PUBLIC_POLICY_GROUPS: Record<string, number> = {
  'role:administrators': 2,
  'role:moderators': 4,
  'role:nobody': 6,
  'role:owners': 7,
};
const WILDCARD_POLICY_BY_GROUP: Record<string, number> = Object.fromEntries(
  Object.entries(WILDCARD_MENTION_POLICY_GROUPS).map(([policy, group]) => [group, Number(policy)]),
);

/**
 * Zulip's deprecated integer policies derived from a group setting: the system group's value,
 * or `fallback` (the administrators' value) when the setting is not a system group with one.
 */
function legacyPolicy(value: GroupSettingValue, systemGroupNames: ReadonlyMap<number, string>, table: Record<string, number>, fallback: number): number {
  const v = normalizeGroupSettingValue(value);
  if (typeof v !== 'number') return fallback;
  const name = systemGroupNames.get(v);
  return (name !== undefined ? table[name] : undefined) ?? fallback;
}

export interface RealmStateContext {
  config: Config;
  realm: Realm;
  /** The requesting user (null for spectators, whose realm_allow_message_editing is false). */
  user: User | null;
  systemGroupNames: ReadonlyMap<number, string>;
  inactiveUserIds: ReadonlySet<number>;
  /** Whether this server can deliver mobile push notifications (services.push is set). */
  pushConfigured: boolean;
}

/** Every key of POST /register's `realm` fetch type, names and types as zulip.yaml documents them. */
export function formatRealmState(ctx: RealmStateContext): Record<string, unknown> {
  const { config, realm } = ctx;
  const s = realmSettings(realm);
  const url = realmUrl(config, realm);
  const state: Record<string, unknown> = {};
  const scalarKeys: (keyof RealmSettings)[] = [
    'allow_message_editing', 'avatar_changes_disabled', 'default_code_block_language', 'default_language',
    'digest_weekday', 'disallow_disposable_email_addresses', 'email_changes_disabled', 'emails_restricted_to_domains',
    'enable_guest_user_dm_warning', 'enable_guest_user_indicator', 'enable_read_receipts', 'enable_spectator_access',
    'gif_rating_policy', 'inline_image_preview', 'inline_url_embed_preview', 'invite_required', 'jitsi_server_url',
    'media_preview_size', 'message_content_allowed_in_email_notifications', 'message_content_delete_limit_seconds',
    'message_content_edit_limit_seconds', 'message_edit_history_visibility_policy', 'message_retention_days',
    'move_messages_between_streams_limit_seconds', 'move_messages_within_stream_limit_seconds', 'name_changes_disabled',
    'push_notifications_enabled', 'require_e2ee_push_notifications', 'require_unique_names',
    'send_channel_events_messages', 'send_welcome_emails', 'video_chat_provider', 'waiting_period_threshold',
    'want_advertise_in_communities_directory', 'welcome_message_custom_text', 'topics_policy', 'org_type',
    'plan_type', 'owner_full_content_access', 'moderation_request_channel_id', 'new_stream_announcements_stream_id',
    'signup_announcements_stream_id', 'zulip_update_announcements_stream_id', 'empty_topic_display_name',
  ];
  for (const k of scalarKeys) state[`realm_${k}`] = s[k];
  state.realm_name = realm.name;
  state.realm_description = realm.description;
  state.realm_date_created = realm.date_created;
  for (const name of REALM_GROUP_SETTING_NAMES) {
    state[`realm_${name}`] = formatGroupSettingValue(s[name], ctx.inactiveUserIds);
  }
  const groups = ctx.systemGroupNames;
  state.realm_create_public_stream_policy = legacyPolicy(s.can_create_public_channel_group, groups, COMMON_POLICY_GROUPS, 2);
  state.realm_create_private_stream_policy = legacyPolicy(s.can_create_private_channel_group, groups, COMMON_POLICY_GROUPS, 2);
  state.realm_create_web_public_stream_policy = legacyPolicy(s.can_create_web_public_channel_group, groups, WEB_PUBLIC_POLICY_GROUPS, 7);
  state.realm_wildcard_mention_policy = legacyPolicy(s.can_mention_many_users_group, groups, WILDCARD_POLICY_BY_GROUP, 5);
  state.realm_mandatory_topics = mandatoryTopics(s);
  state.realm_allow_edit_history = s.message_edit_history_visibility_policy !== 'none';
  state.realm_allow_message_editing = ctx.user === null ? false : s.allow_message_editing;
  state.realm_presence_disabled = ctx.user === null;
  const methods = realmAuthMethods(config, realm);
  state.realm_authentication_methods = formatRealmAuthMethods(config, realm);
  state.realm_email_auth_enabled = !!methods.Email;
  state.realm_password_auth_enabled = !!(methods.Email || methods.LDAP);
  state.realm_digest_emails_enabled = s.digest_emails_enabled && config.smtpUrl !== null;
  state.settings_send_digest_emails = config.smtpUrl !== null;
  state.realm_push_notifications_enabled = s.push_notifications_enabled || ctx.pushConfigured;
  state.realm_push_notifications_enabled_end_timestamp = null;
  state.realm_upload_quota_mib = null;
  state.realm_icon_url = realmIconUrl(config, realm);
  state.realm_icon_source = realm.icon_source;
  state.realm_logo_url = realmLogoUrl(config, realm, false);
  state.realm_logo_source = realm.logo_source;
  state.realm_night_logo_url = realmLogoUrl(config, realm, true);
  state.realm_night_logo_source = realm.night_logo_source;
  state.realm_url = url;
  state.realm_uri = url;
  state.realm_bot_domain = new URL(url).hostname;
  state.realm_available_video_chat_providers = availableVideoChatProviders(config);
  state.realm_default_external_accounts = DEFAULT_EXTERNAL_ACCOUNTS;
  state.realm_default_avatar_source = 'G';
  state.realm_enable_guest_user_indicator = s.enable_guest_user_indicator;
  state.zulip_plan_is_not_limited = s.plan_type !== 2;
  state.upgrade_text_for_wide_organization_logo = 'Available on Zulip Cloud Standard. Upgrade to access.';
  state.max_avatar_file_size_mib = MAX_AVATAR_FILE_SIZE_MIB;
  state.max_file_upload_size_mib = MAX_FILE_UPLOAD_SIZE_MIB;
  state.max_icon_file_size_mib = MAX_ICON_FILE_SIZE_MIB;
  state.max_logo_file_size_mib = MAX_LOGO_FILE_SIZE_MIB;
  state.max_stream_name_length = MAX_STREAM_NAME_LENGTH;
  state.max_stream_description_length = MAX_STREAM_DESCRIPTION_LENGTH;
  state.max_topic_length = MAX_TOPIC_LENGTH;
  state.max_message_length = MAX_MESSAGE_LENGTH;
  state.max_channel_folder_name_length = MAX_CHANNEL_FOLDER_NAME_LENGTH;
  state.max_channel_folder_description_length = MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH;
  state.max_reminder_note_length = MAX_REMINDER_NOTE_LENGTH;
  state.max_bulk_new_subscription_messages = MAX_BULK_NEW_SUBSCRIPTION_MESSAGES;
  state.password_min_length = config.passwords.minLength;
  state.password_max_length = PASSWORD_MAX_LENGTH;
  state.password_min_guesses = config.passwords.minGuesses;
  state.server_generation = SERVER_GENERATION;
  state.development_environment = false;
  state.server_inline_image_preview = true;
  state.server_inline_url_embed_preview = false;
  state.server_thumbnail_formats = serverThumbnailFormats();
  state.server_avatar_changes_disabled = false;
  state.server_name_changes_disabled = false;
  state.server_needs_upgrade = false;
  state.server_web_public_streams_enabled = true;
  state.server_jitsi_server_url = config.jitsiServerUrl;
  state.jitsi_server_url = s.jitsi_server_url ?? config.jitsiServerUrl;
  state.server_can_summarize_topics = false;
  state.server_min_deactivated_realm_deletion_days = null;
  state.server_max_deactivated_realm_deletion_days = null;
  state.server_report_message_types = Object.entries(REPORT_MESSAGE_REASONS).map(([key, name]) => ({ key, name }));
  state.server_supported_permission_settings = {
    realm: permissionSettingsMetadata(REALM_GROUP_SETTING_CONFIG),
    stream: permissionSettingsMetadata(CHANNEL_PERMISSION_CONFIG),
    group: permissionSettingsMetadata(USER_GROUP_PERMISSION_CONFIG),
  };
  state.event_queue_longpoll_timeout_seconds = EVENT_QUEUE_LONGPOLL_TIMEOUT_SECONDS;
  state.gif_rating_policy_options = GIF_RATING_OPTIONS;
  return state;
}

/** POST /register's `user_settings` object. */
export function formatUserSettings(user: Pick<User, 'settings' | 'timezone'>): Record<string, unknown> {
  return {
    ...userSettings(user),
    emojiset_choices: EMOJISET_CHOICES,
    available_notification_sounds: AVAILABLE_NOTIFICATION_SOUNDS,
  };
}

/** POST /register's `realm_user_settings_defaults` object. */
export function formatRealmUserSettingsDefaults(defaults: StoredUserSettings): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of USER_SETTING_NAMES) out[k] = defaults[k];
  out.emojiset_choices = EMOJISET_CHOICES;
  out.available_notification_sounds = AVAILABLE_NOTIFICATION_SOUNDS;
  return out;
}


/**
 * The realm description as HTML (realm_description in GET /server_settings, rendered_description
 * in events): Zulip Markdown without mentions or previews, as Zulip's render_realm_description.
 */
export function renderRealmDescription(description: string, realmBaseUrl: string): string {
  if (!description.trim()) return '';
  return renderMarkdown(description, { realmUrl: realmBaseUrl, inlineImagePreview: false }).html;
}
