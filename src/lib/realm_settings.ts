import { z } from 'zod';
import type { Config } from '../config.js';
import type { Realm } from '../db/tables.js';
import { groupSettingValueSchema, type GroupPermissionConfig, type GroupSettingValue } from './group_settings.js';
import { SYSTEM_GROUPS } from './system_groups.js';

/**
 * Organization (realm) settings. The realm row keeps `name` and `description` in columns;
 * everything else lives in the row's `settings` JSON, which holds only values that differ
 * from REALM_PROPERTY_DEFAULTS plus every group-valued setting (written as group IDs when the
 * realm is created, since the system groups' IDs are per realm). Read them only through
 * `realmSettings(realm)`.
 */

export const REALM_TOPICS_POLICIES = ['allow_empty_topic', 'disable_empty_topic'] as const;
export type RealmTopicsPolicy = (typeof REALM_TOPICS_POLICIES)[number];

export const MESSAGE_EDIT_HISTORY_VISIBILITY_POLICIES = ['all', 'moves', 'none'] as const;

/**
 * Zulip's VIDEO_CHAT_PROVIDERS (ids as in realm_video_chat_provider). Only `disabled`, Jitsi and
 * the providers the server is configured for are offered (see availableVideoChatProviders).
 */
export const VIDEO_CHAT_PROVIDERS = {
  disabled: { name: 'None', id: 0 },
  jitsi_meet: { name: 'Jitsi Meet', id: 1 },
  zoom: { name: 'Zoom', id: 3 },
  big_blue_button: { name: 'BigBlueButton', id: 4 },
  zoom_server_to_server: { name: 'Zoom', id: 5 },
  constructor_groups: { name: 'Constructor Groups', id: 6 },
  nextcloud_talk: { name: 'Nextcloud Talk', id: 7 },
  // Our spec's vidcall provider is Zulip's Webex (user OAuth) entry.
  webex: { name: 'Webex', id: 8 },
} as const;
export type VideoChatProviderKey = keyof typeof VIDEO_CHAT_PROVIDERS;

/** The providers this server can create calls with, keyed as in realm_available_video_chat_providers. */
export function availableVideoChatProviders(config: Config): Partial<Record<VideoChatProviderKey, { name: string; id: number }>> {
  const out: Partial<Record<VideoChatProviderKey, { name: string; id: number }>> = {
    disabled: VIDEO_CHAT_PROVIDERS.disabled,
    jitsi_meet: VIDEO_CHAT_PROVIDERS.jitsi_meet,
  };
  if (config.bigBlueButton.url && config.bigBlueButton.secret) out.big_blue_button = VIDEO_CHAT_PROVIDERS.big_blue_button;
  if (config.constructorGroups.url && config.constructorGroups.accessKey && config.constructorGroups.secretKey) {
    out.constructor_groups = VIDEO_CHAT_PROVIDERS.constructor_groups;
  }
  if (config.nextcloudTalk.url && config.nextcloudTalk.username && config.nextcloudTalk.password) {
    out.nextcloud_talk = VIDEO_CHAT_PROVIDERS.nextcloud_talk;
  }
  if (config.vidcall.clientId && config.vidcall.clientSecret) out.webex = VIDEO_CHAT_PROVIDERS.webex;
  return out;
}

/** Zulip's DEFAULT_EXTERNAL_ACCOUNTS (custom profile fields of the external-account type). */
export const DEFAULT_EXTERNAL_ACCOUNTS: Readonly<Record<string, { name: string; text: string; hint: string; url_pattern: string }>> = {
  github: { name: 'GitHub', text: 'GitHub', hint: 'Enter your GitHub username', url_pattern: 'https://github.com/%(username)s' },
  gitlab: { name: 'GitLab', text: 'GitLab', hint: 'Enter your GitLab username', url_pattern: 'https://gitlab.com/%(username)s' },
  twitter: { name: 'Twitter', text: 'Twitter', hint: 'Enter your Twitter username', url_pattern: 'https://twitter.com/%(username)s' },
};

export const VIDEO_CHAT_PROVIDER_JITSI = VIDEO_CHAT_PROVIDERS.jitsi_meet.id;

/** Zulip's GIF rating options (realm_gif_rating_policy), id 0 disabling the GIF picker. */
export const GIF_RATING_OPTIONS: Record<string, { name: string; id: number }> = {
  disabled: { name: 'GIPHY integration disabled', id: 0 },
  y: { name: 'Allow GIFs rated Y (Very young audience)', id: 1 },
  g: { name: 'Allow GIFs rated G (General audience)', id: 2 },
  pg: { name: 'Allow GIFs rated PG (Parental guidance)', id: 3 },
  'pg-13': { name: 'Allow GIFs rated PG-13 (Parental guidance - under 13)', id: 4 },
  r: { name: 'Allow GIFs rated R (Restricted)', id: 5 },
};

/** Legacy wildcard_mention_policy values and the system group each one stands for. */
export const WILDCARD_MENTION_POLICY_GROUPS: Record<number, string> = {
  1: 'role:everyone',
  2: 'role:members',
  3: 'role:fullmembers',
  5: 'role:administrators',
  6: 'role:nobody',
  7: 'role:moderators',
};

export const MAX_REALM_NAME_LENGTH = 40;
export const MAX_REALM_DESCRIPTION_LENGTH = 1000;
export const MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH = 8000;
export const DEFAULT_EMPTY_TOPIC_DISPLAY_NAME = 'general chat';

const nullableSeconds = z.number().int().positive().nullable();

/** Every scalar realm setting kept in the settings JSON, with its type. */
export const realmPropertiesSchema = z.object({
  allow_message_editing: z.boolean(),
  avatar_changes_disabled: z.boolean(),
  default_code_block_language: z.string(),
  default_language: z.string(),
  digest_emails_enabled: z.boolean(),
  digest_weekday: z.number().int().min(0).max(6),
  disallow_disposable_email_addresses: z.boolean(),
  email_changes_disabled: z.boolean(),
  emails_restricted_to_domains: z.boolean(),
  /** Our extension: Zulip derives it from the organization language. */
  empty_topic_display_name: z.string(),
  enable_guest_user_dm_warning: z.boolean(),
  enable_guest_user_indicator: z.boolean(),
  enable_read_receipts: z.boolean(),
  enable_spectator_access: z.boolean(),
  gif_rating_policy: z.number().int(),
  inline_image_preview: z.boolean(),
  inline_url_embed_preview: z.boolean(),
  invite_required: z.boolean(),
  jitsi_server_url: z.string().nullable(),
  media_preview_size: z.union([z.literal(100), z.literal(150), z.literal(200)]),
  message_content_allowed_in_email_notifications: z.boolean(),
  message_content_delete_limit_seconds: nullableSeconds,
  message_content_edit_limit_seconds: nullableSeconds,
  message_edit_history_visibility_policy: z.enum(MESSAGE_EDIT_HISTORY_VISIBILITY_POLICIES),
  message_retention_days: z.number().int(),
  moderation_request_channel_id: z.number().int(),
  move_messages_between_streams_limit_seconds: nullableSeconds,
  move_messages_within_stream_limit_seconds: nullableSeconds,
  name_changes_disabled: z.boolean(),
  new_stream_announcements_stream_id: z.number().int(),
  org_type: z.number().int(),
  owner_full_content_access: z.boolean(),
  plan_type: z.number().int(),
  push_notifications_enabled: z.boolean(),
  require_e2ee_push_notifications: z.boolean(),
  require_unique_names: z.boolean(),
  send_channel_events_messages: z.boolean(),
  send_welcome_emails: z.boolean(),
  signup_announcements_stream_id: z.number().int(),
  topics_policy: z.enum(REALM_TOPICS_POLICIES),
  video_chat_provider: z.number().int(),
  waiting_period_threshold: z.number().int().min(0),
  want_advertise_in_communities_directory: z.boolean(),
  welcome_message_custom_text: z.string(),
  zulip_update_announcements_stream_id: z.number().int(),
});
export type RealmProperties = z.infer<typeof realmPropertiesSchema>;
export type RealmPropertyName = keyof RealmProperties;

/** Zulip's values for a new organization (zerver/models/realms.py field defaults). */
export const REALM_PROPERTY_DEFAULTS: Readonly<RealmProperties> = Object.freeze({
  allow_message_editing: true,
  avatar_changes_disabled: false,
  default_code_block_language: '',
  default_language: 'en',
  digest_emails_enabled: false,
  digest_weekday: 1,
  disallow_disposable_email_addresses: true,
  email_changes_disabled: false,
  emails_restricted_to_domains: false,
  empty_topic_display_name: DEFAULT_EMPTY_TOPIC_DISPLAY_NAME,
  enable_guest_user_dm_warning: true,
  enable_guest_user_indicator: true,
  enable_read_receipts: false,
  enable_spectator_access: false,
  gif_rating_policy: 2,
  inline_image_preview: true,
  inline_url_embed_preview: false,
  invite_required: true,
  jitsi_server_url: null,
  media_preview_size: 100,
  message_content_allowed_in_email_notifications: true,
  message_content_delete_limit_seconds: 600,
  message_content_edit_limit_seconds: 600,
  message_edit_history_visibility_policy: 'all',
  message_retention_days: -1,
  moderation_request_channel_id: -1,
  move_messages_between_streams_limit_seconds: 7 * 86400,
  move_messages_within_stream_limit_seconds: 7 * 86400,
  name_changes_disabled: false,
  new_stream_announcements_stream_id: -1,
  org_type: 0,
  owner_full_content_access: false,
  plan_type: 1,
  push_notifications_enabled: false,
  require_e2ee_push_notifications: false,
  require_unique_names: false,
  send_channel_events_messages: true,
  send_welcome_emails: true,
  signup_announcements_stream_id: -1,
  topics_policy: 'allow_empty_topic',
  video_chat_provider: VIDEO_CHAT_PROVIDER_JITSI,
  waiting_period_threshold: 0,
  want_advertise_in_communities_directory: false,
  welcome_message_custom_text: '',
  zulip_update_announcements_stream_id: -1,
} satisfies RealmProperties);

const ALL_SYSTEM_GROUPS = SYSTEM_GROUPS.map((g) => g.name);
const onlySystemGroups = (...allowed: string[]): string[] => ALL_SYSTEM_GROUPS.filter((g) => !allowed.includes(g));

const config = (
  defaultGroupName: string,
  allowNobodyGroup: boolean,
  allowEveryoneGroup: boolean,
  extra: Partial<GroupPermissionConfig> = {},
): GroupPermissionConfig => ({
  requireSystemGroup: false,
  allowInternetGroup: false,
  allowNobodyGroup,
  allowEveryoneGroup,
  defaultGroupName,
  ...extra,
});

/**
 * Zulip's Realm.REALM_PERMISSION_GROUP_SETTINGS: the default system group of each
 * group-valued realm setting and the values it may take. `allowed_system_groups` is
 * expressed as the complementary forbiddenSystemGroups.
 */
export const REALM_GROUP_SETTING_CONFIG = {
  can_access_all_users_group: config('role:everyone', false, true, {
    requireSystemGroup: true,
    forbiddenSystemGroups: onlySystemGroups('role:everyone', 'role:members'),
  }),
  can_add_custom_emoji_group: config('role:members', true, false),
  can_add_subscribers_group: config('role:members', true, false),
  can_create_bots_group: config('role:members', true, false),
  can_create_groups: config('role:members', true, false),
  can_create_private_channel_group: config('role:members', true, false),
  can_create_public_channel_group: config('role:members', true, false),
  can_create_web_public_channel_group: config('role:owners', true, false, {
    requireSystemGroup: true,
    forbiddenSystemGroups: onlySystemGroups('role:moderators', 'role:administrators', 'role:owners', 'role:nobody'),
  }),
  can_create_write_only_bots_group: config('role:members', true, false),
  can_delete_any_message_group: config('role:administrators', true, false),
  can_delete_own_message_group: config('role:everyone', true, true),
  can_invite_users_group: config('role:members', true, false),
  can_manage_all_groups: config('role:owners', false, false),
  can_manage_billing_group: config('role:administrators', false, false),
  can_mention_many_users_group: config('role:administrators', true, true),
  can_move_messages_between_channels_group: config('role:members', true, false),
  can_move_messages_between_topics_group: config('role:everyone', true, true),
  can_resolve_topics_group: config('role:everyone', true, true),
  can_set_delete_message_policy_group: config('role:moderators', true, false),
  can_set_topics_policy_group: config('role:members', true, true),
  can_summarize_topics_group: config('role:everyone', true, true),
  create_multiuse_invite_group: config('role:administrators', true, false),
  direct_message_initiator_group: config('role:everyone', true, true),
  direct_message_permission_group: config('role:everyone', true, true),
  workplace_users_group: config('role:members', true, false),
} satisfies Record<string, GroupPermissionConfig>;

export type RealmGroupSettingName = keyof typeof REALM_GROUP_SETTING_CONFIG;
export const REALM_GROUP_SETTING_NAMES = Object.keys(REALM_GROUP_SETTING_CONFIG) as RealmGroupSettingName[];

/** Kept for doCreateRealm: setting name -> default system group name. */
export const REALM_GROUP_SETTING_DEFAULTS: Record<string, string> = Object.fromEntries(
  REALM_GROUP_SETTING_NAMES.map((n) => [n, REALM_GROUP_SETTING_CONFIG[n].defaultGroupName]),
);

export type RealmSettings = Readonly<RealmProperties & Record<RealmGroupSettingName, GroupSettingValue>>;

export function initialRealmSettings(groupIds: ReadonlyMap<string, number>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [setting, group] of Object.entries(REALM_GROUP_SETTING_DEFAULTS)) out[setting] = groupIds.get(group);
  return out;
}

const storedSchema = realmPropertiesSchema.partial().extend(
  Object.fromEntries(REALM_GROUP_SETTING_NAMES.map((n) => [n, groupSettingValueSchema.optional()])) as Record<
    RealmGroupSettingName,
    z.ZodOptional<typeof groupSettingValueSchema>
  >,
);

/**
 * Parsed settings by realm ID, reused while the row's JSON text is unchanged: the realm
 * row is re-read on every request, so this keeps settings reads to one string comparison.
 */
const cache = new Map<number, { text: string; settings: RealmSettings }>();

/** Parses stored JSON; unknown keys and invalid values fall back to the defaults. */
export function parseRealmSettings(text: string): RealmSettings {
  let raw: unknown = {};
  try {
    raw = JSON.parse(text);
  } catch {
    raw = {};
  }
  const out: Record<string, unknown> = { ...REALM_PROPERTY_DEFAULTS };
  if (raw && typeof raw === 'object') {
    for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
      const field = storedSchema.shape[key as keyof typeof storedSchema.shape];
      if (field && field.safeParse(value).success && value !== undefined) out[key] = value;
    }
  }
  // A group setting missing from the JSON (never the case for realms made by doCreateRealm)
  // grants nothing rather than everything.
  for (const n of REALM_GROUP_SETTING_NAMES) if (out[n] === undefined) out[n] = { direct_members: [], direct_subgroups: [] };
  return Object.freeze(out) as RealmSettings;
}

/** The realm's settings: stored values merged over Zulip's defaults. Cheap to call repeatedly. */
export function realmSettings(realm: Pick<Realm, 'id' | 'settings'>): RealmSettings {
  const hit = cache.get(realm.id);
  if (hit && hit.text === realm.settings) return hit.settings;
  const settings = parseRealmSettings(realm.settings);
  cache.set(realm.id, { text: realm.settings, settings });
  return settings;
}

/** Zulip's deprecated `mandatory_topics`, kept consistent with topics_policy. */
export const mandatoryTopics = (s: Pick<RealmProperties, 'topics_policy'>): boolean => s.topics_policy === 'disable_empty_topic';
