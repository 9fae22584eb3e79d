import { z } from 'zod';
import type { User } from '../db/tables.js';

/**
 * Personal settings (Zulip's UserBaseSettings). A user row's `settings` JSON holds only values
 * that differ from USER_SETTING_DEFAULTS; a new user's JSON starts as the realm's
 * user-settings defaults that differ from Zulip's (see `initialUserSettingsJson`). The
 * `timezone` setting lives in its own column. Read them only through `userSettings(user)`.
 */

export const EMAIL_ADDRESS_VISIBILITY_EVERYONE = 1;
export const EMAIL_ADDRESS_VISIBILITY_MEMBERS = 2;
export const EMAIL_ADDRESS_VISIBILITY_ADMINS = 3;
export const EMAIL_ADDRESS_VISIBILITY_NOBODY = 4;
export const EMAIL_ADDRESS_VISIBILITY_MODERATORS = 5;
export const EMAIL_ADDRESS_VISIBILITY_TYPES = [1, 2, 3, 4, 5] as const;

/** automatically_follow_topics_policy / automatically_unmute_topics_in_muted_streams_policy. */
export const AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_PARTICIPATION = 1;
export const AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_SEND = 2;
export const AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_INITIATION = 3;
export const AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_NEVER = 4;

export const EMOJISET_CHOICES = [
  { key: 'google', text: 'Google' },
  { key: 'twitter', text: 'Twitter' },
  { key: 'text', text: 'Plain text' },
  { key: 'google-blob', text: 'Google blobs' },
] as const;

export const AVAILABLE_NOTIFICATION_SOUNDS = ['chime-saved-the-day', 'ding', 'zulip'] as const;

/** Zulip's translated UI languages: code -> name (as in the language_name of events). */
export const LANGUAGES: Readonly<Record<string, string>> = {
  ar: 'العربيّة',
  be: 'Беларуская',
  bg: 'Български',
  bn: 'বাংলা',
  ca: 'Català',
  cs: 'Čeština',
  cy: 'Cymraeg',
  da: 'Dansk',
  de: 'Deutsch',
  el: 'Ελληνικά',
  en: 'English',
  en_GB: 'British English',
  eo: 'Esperanto',
  es: 'Español',
  fa: 'فارسی',
  fi: 'Suomi',
  fr: 'Français',
  gl: 'Galego',
  gu: 'ગુજરાતી',
  hi: 'हिन्दी',
  hu: 'Magyar',
  id: 'Bahasa Indonesia',
  it: 'Italiano',
  ja: '日本語',
  ko: '한국어',
  lt: 'Lietuviškai',
  lv: 'Latviešu',
  ml: 'മലയാളം',
  mn: 'Монгол',
  nl: 'Nederlands',
  no: 'Norsk',
  pl: 'Polski',
  pt: 'Português',
  pt_BR: 'Português (Brasil)',
  pt_PT: 'Português (Portugal)',
  ro: 'Română',
  ru: 'Русский',
  si: 'සිංහල',
  sk: 'Slovenčina',
  sr: 'Српски',
  sv: 'Svenska',
  ta: 'தமிழ்',
  te: 'తెలుగు',
  tl: 'Tagalog',
  tr: 'Türkçe',
  uk: 'Українська',
  uz: "O'zbek",
  vi: 'Tiếng Việt',
  'zh-hans': '简体中文',
  'zh-hant': '繁體中文',
  zh_TW: '繁體中文 (台灣)',
};

const oneOf = <T extends number>(...values: T[]) => z.number().int().refine((v): v is T => (values as number[]).includes(v));

/** Every personal setting kept in the settings JSON, with its type and allowed values. */
export const userSettingsSchema = z.object({
  // Display settings (Zulip's display_settings_legacy).
  color_scheme: oneOf(1, 2, 3),
  default_language: z.string(),
  web_home_view: z.enum(['recent', 'recent_topics', 'inbox', 'all_messages']),
  demote_inactive_streams: oneOf(1, 2, 3),
  emojiset: z.enum(['google', 'twitter', 'text', 'google-blob']),
  enable_drafts_synchronization: z.boolean(),
  enter_sends: z.boolean(),
  fluid_layout_width: z.boolean(),
  high_contrast_mode: z.boolean(),
  left_side_userlist: z.boolean(),
  starred_message_counts: z.boolean(),
  translate_emoticons: z.boolean(),
  twenty_four_hour_time: z.boolean().nullable(),
  // Notification settings (notification_settings_legacy).
  desktop_icon_count_display: oneOf(1, 2, 3, 4),
  email_notifications_batching_period_seconds: z.number().int(),
  enable_desktop_notifications: z.boolean(),
  enable_digest_emails: z.boolean(),
  enable_login_emails: z.boolean(),
  enable_marketing_emails: z.boolean(),
  enable_offline_email_notifications: z.boolean(),
  enable_offline_push_notifications: z.boolean(),
  enable_online_push_notifications: z.boolean(),
  enable_sounds: z.boolean(),
  enable_stream_audible_notifications: z.boolean(),
  enable_stream_desktop_notifications: z.boolean(),
  enable_stream_email_notifications: z.boolean(),
  enable_stream_push_notifications: z.boolean(),
  message_content_in_email_notifications: z.boolean(),
  notification_sound: z.string(),
  pm_content_in_desktop_notifications: z.boolean(),
  presence_enabled: z.boolean(),
  realm_name_in_email_notifications_policy: oneOf(1, 2, 3),
  wildcard_mentions_notify: z.boolean(),
  // Modern notification settings.
  enable_followed_topic_desktop_notifications: z.boolean(),
  enable_followed_topic_email_notifications: z.boolean(),
  enable_followed_topic_push_notifications: z.boolean(),
  enable_followed_topic_audible_notifications: z.boolean(),
  enable_followed_topic_wildcard_mentions_notify: z.boolean(),
  automatically_follow_topics_policy: oneOf(1, 2, 3, 4),
  automatically_unmute_topics_in_muted_streams_policy: oneOf(1, 2, 3, 4),
  automatically_follow_topics_where_mentioned: z.boolean(),
  // Modern general settings.
  display_emoji_reaction_users: z.boolean(),
  email_address_visibility: oneOf(1, 2, 3, 4, 5),
  web_escape_navigates_to_home_view: z.boolean(),
  receives_typing_notifications: z.boolean(),
  send_private_typing_notifications: z.boolean(),
  send_read_receipts: z.boolean(),
  send_stream_typing_notifications: z.boolean(),
  allow_private_data_export: z.boolean(),
  web_mark_read_on_scroll_policy: oneOf(1, 2, 3),
  web_channel_default_view: oneOf(1, 2, 3, 4),
  user_list_style: oneOf(1, 2, 3),
  web_animate_image_previews: z.enum(['always', 'on_hover', 'never']),
  web_stream_unreads_count_display_policy: oneOf(1, 2, 3),
  web_font_size_px: z.number().int(),
  web_line_height_percent: z.number().int(),
  web_navigate_to_sent_message: z.boolean(),
  web_suggest_update_timezone: z.boolean(),
  hide_ai_features: z.boolean(),
  resolved_topic_notice_auto_read_policy: z.enum(['always', 'except_followed', 'never']),
  web_left_sidebar_unreads_count_summary: z.boolean(),
  web_inbox_show_channel_folders: z.boolean(),
  web_left_sidebar_show_channel_folders: z.boolean(),
});
export type StoredUserSettings = z.infer<typeof userSettingsSchema>;
export type UserSettingName = keyof StoredUserSettings;
export const USER_SETTING_NAMES = Object.keys(userSettingsSchema.shape) as UserSettingName[];

/** A user's settings as the API shows them: the stored ones plus the timezone column. */
export type UserSettings = Readonly<StoredUserSettings & { timezone: string }>;

/** Zulip's values for a new user (UserBaseSettings field defaults). */
export const USER_SETTING_DEFAULTS: Readonly<StoredUserSettings> = Object.freeze({
  color_scheme: 1,
  default_language: 'en',
  web_home_view: 'inbox',
  demote_inactive_streams: 1,
  emojiset: 'google',
  enable_drafts_synchronization: true,
  enter_sends: false,
  fluid_layout_width: false,
  high_contrast_mode: false,
  left_side_userlist: false,
  starred_message_counts: true,
  translate_emoticons: false,
  twenty_four_hour_time: false,
  desktop_icon_count_display: 1,
  email_notifications_batching_period_seconds: 120,
  enable_desktop_notifications: true,
  enable_digest_emails: true,
  enable_login_emails: true,
  enable_marketing_emails: true,
  enable_offline_email_notifications: true,
  enable_offline_push_notifications: true,
  enable_online_push_notifications: true,
  enable_sounds: true,
  enable_stream_audible_notifications: false,
  enable_stream_desktop_notifications: false,
  enable_stream_email_notifications: false,
  enable_stream_push_notifications: false,
  message_content_in_email_notifications: true,
  notification_sound: 'zulip',
  pm_content_in_desktop_notifications: true,
  presence_enabled: true,
  realm_name_in_email_notifications_policy: 1,
  wildcard_mentions_notify: true,
  enable_followed_topic_desktop_notifications: true,
  enable_followed_topic_email_notifications: true,
  enable_followed_topic_push_notifications: true,
  enable_followed_topic_audible_notifications: true,
  enable_followed_topic_wildcard_mentions_notify: true,
  automatically_follow_topics_policy: AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_INITIATION,
  automatically_unmute_topics_in_muted_streams_policy: AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_SEND,
  automatically_follow_topics_where_mentioned: true,
  display_emoji_reaction_users: true,
  email_address_visibility: EMAIL_ADDRESS_VISIBILITY_EVERYONE,
  web_escape_navigates_to_home_view: true,
  receives_typing_notifications: true,
  send_private_typing_notifications: true,
  send_read_receipts: true,
  send_stream_typing_notifications: true,
  allow_private_data_export: false,
  web_mark_read_on_scroll_policy: 1,
  web_channel_default_view: 1,
  user_list_style: 3,
  web_animate_image_previews: 'on_hover',
  web_stream_unreads_count_display_policy: 2,
  web_font_size_px: 16,
  web_line_height_percent: 140,
  web_navigate_to_sent_message: true,
  web_suggest_update_timezone: true,
  hide_ai_features: false,
  resolved_topic_notice_auto_read_policy: 'except_followed',
  web_left_sidebar_unreads_count_summary: true,
  web_inbox_show_channel_folders: true,
  web_left_sidebar_show_channel_folders: true,
} satisfies StoredUserSettings);

/** Settings a realm's user-settings defaults cannot set (security-related, per Zulip). */
export const NOT_REALM_DEFAULTABLE: readonly UserSettingName[] = ['enable_login_emails', 'enable_marketing_emails', 'allow_private_data_export'];

/** Parses stored JSON; unknown keys and invalid values fall back to the defaults. */
export function parseStoredUserSettings(text: string): StoredUserSettings {
  let raw: unknown = {};
  try {
    raw = JSON.parse(text);
  } catch {
    raw = {};
  }
  const out: Record<string, unknown> = { ...USER_SETTING_DEFAULTS };
  if (raw && typeof raw === 'object') {
    for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
      const field = userSettingsSchema.shape[key as UserSettingName];
      if (field && field.safeParse(value).success) out[key] = value;
    }
  }
  return out as StoredUserSettings;
}

/**
 * Parsed settings by JSON text: most users store `{}` or a handful of keys, so a small
 * cache keyed by the text serves nearly every read without parsing.
 */
const cache = new Map<string, StoredUserSettings>();
const CACHE_LIMIT = 2000;

function storedSettings(text: string): StoredUserSettings {
  let s = cache.get(text);
  if (!s) {
    s = Object.freeze(parseStoredUserSettings(text));
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(text, s);
  }
  return s;
}

const withTimezone = new WeakMap<StoredUserSettings, Map<string, UserSettings>>();

/** The user's personal settings: stored values merged over Zulip's defaults, plus timezone. */
export function userSettings(user: Pick<User, 'settings' | 'timezone'>): UserSettings {
  const stored = storedSettings(user.settings);
  let byTz = withTimezone.get(stored);
  if (!byTz) {
    byTz = new Map();
    withTimezone.set(stored, byTz);
  }
  let s = byTz.get(user.timezone);
  if (!s) {
    s = Object.freeze({ ...stored, timezone: user.timezone });
    byTz.set(user.timezone, s);
  }
  return s;
}

/** Only the values that differ from Zulip's defaults, for storing. */
export function diffFromDefaults(settings: Partial<StoredUserSettings>): Partial<StoredUserSettings> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(settings)) {
    if (USER_SETTING_DEFAULTS[k as UserSettingName] !== v) out[k] = v;
  }
  return out as Partial<StoredUserSettings>;
}

/**
 * The settings JSON for a new user of a realm whose user-settings defaults are `defaults`
 * (realmSettings(realm) does not carry them; read them with `realmUserSettingsDefaults`).
 */
export function initialUserSettingsJson(defaults: StoredUserSettings): string {
  return JSON.stringify(diffFromDefaults(defaults));
}

/** A realm's defaults for new users' settings, stored in the realm settings JSON under this key. */
export const REALM_USER_DEFAULTS_KEY = 'user_settings_defaults';

export function realmUserSettingsDefaults(realm: { settings: string }): StoredUserSettings {
  let raw: unknown;
  try {
    raw = (JSON.parse(realm.settings) as Record<string, unknown>)[REALM_USER_DEFAULTS_KEY];
  } catch {
    raw = undefined;
  }
  return storedSettings(JSON.stringify(raw && typeof raw === 'object' ? raw : {}));
}
