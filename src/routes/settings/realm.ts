import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../services.js';
import type { Realm, User } from '../../db/tables.js';
import { adminRequired, badRequest, JsonableError, ownerRequired } from '../../errors.js';
import { normalizeMessageContent } from '../../actions/messages.js';
import { isAdmin, isOwner } from '../../lib/roles.js';
import { groupSettingUpdateSchema, type GroupSettingUpdate } from '../../lib/group_settings.js';
import { accessStreamById, ChannelCaller } from '../../lib/access/streams.js';
import {
  availableVideoChatProviders,
  GIF_RATING_OPTIONS,
  MAX_REALM_DESCRIPTION_LENGTH,
  MAX_REALM_NAME_LENGTH,
  MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH,
  MESSAGE_EDIT_HISTORY_VISIBILITY_POLICIES,
  REALM_GROUP_SETTING_NAMES,
  REALM_TOPICS_POLICIES,
  WILDCARD_MENTION_POLICY_GROUPS,
  type RealmGroupSettingName,
  type RealmProperties,
  type RealmPropertyName,
} from '../../lib/realm_settings.js';
import {
  EMAIL_ADDRESS_VISIBILITY_TYPES,
  LANGUAGES,
  NOT_REALM_DEFAULTABLE,
  USER_SETTING_NAMES,
  type StoredUserSettings,
} from '../../lib/user_settings.js';
import { fetchSystemGroups } from '../../db/repos/user_groups.js';
import {
  checkRealmGroupSettingUpdates,
  doSetRealmEmailAddressVisibility,
  doUpdateRealmSettings,
  doUpdateRealmUserSettingsDefaults,
  type RealmSettingChange,
} from '../../actions/realm_settings.js';
import { checkUserSettingValues, userSettingParams } from './user_params.js';
import { endpoint } from '../endpoint.js';
import { doDeactivateRealm } from '../../actions/realms.js';
import { sendBotDirectMessage } from '../../actions/signup.js';
import { p, type Param } from '../params.js';
import { checkAuthMethodsUpdate, doSetRealmAuthMethods } from '../../actions/auth_methods.js';
import { realmAuthMethods } from '../../lib/auth_methods.js';
import { fetchRealmById } from '../../db/repos/realms.js';

/** Zulip's RequestVariableConversionError. */
const badValue = (name: string, value: unknown): JsonableError =>
  new JsonableError(`Bad value for '${name}': ${String(value)}`, 'REQUEST_VARIABLE_INVALID', 400, { var_name: name, bad_value: value });

const invalid = (name: string): JsonableError => badRequest(`Invalid ${name}`);

/** A JSON-encoded value that may also arrive as a raw string (e.g. `unlimited` unquoted). */
function jsonOrRaw(): Param<unknown> {
  return p.custom((raw) => {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      return raw;
    }
  });
}

/** Zulip's parse_message_time_limit_setting: a positive integer or "unlimited" (no limit). */
function timeLimit(name: string, value: unknown): number | null {
  if (value === 'unlimited') return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) throw badValue(name, value);
  return value;
}

const optionalInt = (): Param<number | undefined> => p.int().optional();
const optionalBool = (): Param<boolean | undefined> => p.bool().optional();

/** Settings only organization owners may change (Zulip's update_realm). */
const OWNER_ONLY = new Set<string>([
  'invite_required',
  'create_multiuse_invite_group',
  'can_create_groups',
  'can_invite_users_group',
  'can_manage_all_groups',
  'can_manage_billing_group',
  'emails_restricted_to_domains',
  'disallow_disposable_email_addresses',
  'waiting_period_threshold',
  'message_retention_days',
]);

const BOOLEAN_PROPERTIES = [
  'allow_message_editing',
  'avatar_changes_disabled',
  'digest_emails_enabled',
  'disallow_disposable_email_addresses',
  'email_changes_disabled',
  'emails_restricted_to_domains',
  'enable_guest_user_dm_warning',
  'enable_guest_user_indicator',
  'enable_read_receipts',
  'enable_spectator_access',
  'inline_image_preview',
  'inline_url_embed_preview',
  'invite_required',
  'message_content_allowed_in_email_notifications',
  'name_changes_disabled',
  'require_e2ee_push_notifications',
  'require_unique_names',
  'send_channel_events_messages',
  'send_welcome_emails',
  'want_advertise_in_communities_directory',
] as const satisfies readonly RealmPropertyName[];

const TIME_LIMIT_PROPERTIES = [
  'message_content_delete_limit_seconds',
  'message_content_edit_limit_seconds',
  'move_messages_between_streams_limit_seconds',
  'move_messages_within_stream_limit_seconds',
] as const satisfies readonly RealmPropertyName[];

const CHANNEL_PROPERTIES = [
  'moderation_request_channel_id',
  'new_stream_announcements_stream_id',
  'signup_announcements_stream_id',
  'zulip_update_announcements_stream_id',
] as const satisfies readonly RealmPropertyName[];

const ORG_TYPE_IDS = [0, 10, 20, 30, 35, 40, 50, 60, 70, 80, 90, 100, 1000];
const JITSI_SERVER_URL_MAX_LENGTH = 200;

const realmParams = {
  ...Object.fromEntries(BOOLEAN_PROPERTIES.map((n) => [n, optionalBool()])),
  ...Object.fromEntries(TIME_LIMIT_PROPERTIES.map((n) => [n, jsonOrRaw().optional()])),
  ...Object.fromEntries(CHANNEL_PROPERTIES.map((n) => [n, optionalInt()])),
  ...Object.fromEntries(REALM_GROUP_SETTING_NAMES.map((n) => [n, p.json(groupSettingUpdateSchema).optional()])),
  name: p.str(z.string().max(MAX_REALM_NAME_LENGTH)).optional(),
  description: p.str(z.string().max(MAX_REALM_DESCRIPTION_LENGTH)).optional(),
  welcome_message_custom_text: p.str(z.string().max(MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH)).optional(),
  default_language: p.str().optional(),
  default_code_block_language: p.str().optional(),
  topics_policy: p.str().optional(),
  // Removed from PATCH /realm at feature level 392; still honoured as topics_policy.
  mandatory_topics: optionalBool(),
  // Our extension: the name shown for the empty topic.
  empty_topic_display_name: p.str(z.string().min(1).max(60)).optional(),
  message_edit_history_visibility_policy: p.str().optional(),
  // Deprecated in favour of message_edit_history_visibility_policy.
  allow_edit_history: optionalBool(),
  message_retention_days: jsonOrRaw().optional(),
  digest_weekday: optionalInt(),
  gif_rating_policy: optionalInt().alias('giphy_rating'),
  media_preview_size: optionalInt(),
  org_type: optionalInt(),
  video_chat_provider: optionalInt(),
  waiting_period_threshold: optionalInt(),
  // Replaced by can_mention_many_users_group at feature level 352; mapped onto it.
  wildcard_mention_policy: optionalInt(),
  // Zulip takes it JSON-encoded; a raw URL is accepted too.
  jitsi_server_url: jsonOrRaw().optional(),
  // Organization-wide before feature level 163, now each user's setting (see doSetRealmEmailAddressVisibility).
  email_address_visibility: optionalInt(),
  authentication_methods: p.json(z.record(z.string(), z.unknown())).optional(),
} satisfies Record<string, Param<unknown>>;

type RawRealmParams = Record<string, unknown>;

/** Zulip's require_realm_admin. */
function requireAdmin(user: User): void {
  if (!isAdmin(user)) throw adminRequired();
}

/** Turns parsed PATCH /realm parameters into validated settings, with Zulip's errors. */
async function checkRealmUpdate(services: Services, realm: Realm, user: User, raw: RawRealmParams) {
  const given = Object.keys(raw).filter((k) => raw[k] !== undefined);
  if (!isOwner(user) && given.some((k) => OWNER_ONLY.has(k))) throw ownerRequired();
  const props: Partial<RealmProperties> = {};
  const set = <K extends RealmPropertyName>(k: K, v: RealmProperties[K]) => {
    props[k] = v;
  };

  if (raw.default_language !== undefined && !((raw.default_language as string) in LANGUAGES)) {
    throw badRequest(`Invalid language '${String(raw.default_language)}'`);
  }
  if (raw.video_chat_provider !== undefined) {
    const ids = Object.values(availableVideoChatProviders(services.config)).map((v) => v.id);
    if (!ids.includes(raw.video_chat_provider as number)) throw badRequest(`Invalid video_chat_provider ${String(raw.video_chat_provider)}`);
    set('video_chat_provider', raw.video_chat_provider as number);
  }
  if (raw.gif_rating_policy !== undefined) {
    const ids = Object.values(GIF_RATING_OPTIONS).map((o) => o.id);
    if (!ids.includes(raw.gif_rating_policy as number)) throw badRequest(`Invalid giphy_rating ${String(raw.gif_rating_policy)}`);
    set('gif_rating_policy', raw.gif_rating_policy as number);
  }
  if (raw.message_retention_days !== undefined) {
    const v = raw.message_retention_days;
    if (v === 'unlimited') set('message_retention_days', -1);
    else if (typeof v === 'number' && Number.isInteger(v) && v > 0) set('message_retention_days', v);
    else throw badValue('message_retention_days', v);
  }
  for (const n of BOOLEAN_PROPERTIES) if (raw[n] !== undefined) set(n, raw[n] as boolean);
  for (const n of TIME_LIMIT_PROPERTIES) if (raw[n] !== undefined) set(n, timeLimit(n, raw[n]));
  for (const n of ['default_language', 'default_code_block_language', 'welcome_message_custom_text', 'empty_topic_display_name'] as const) {
    if (raw[n] !== undefined) set(n, raw[n] as string);
  }
  if (raw.topics_policy !== undefined) {
    const v = raw.topics_policy as string;
    if (!(REALM_TOPICS_POLICIES as readonly string[]).includes(v)) throw invalid('topics_policy');
    set('topics_policy', v as RealmProperties['topics_policy']);
  } else if (raw.mandatory_topics !== undefined) {
    set('topics_policy', raw.mandatory_topics ? 'disable_empty_topic' : 'allow_empty_topic');
  }
  if (raw.message_edit_history_visibility_policy !== undefined) {
    const v = raw.message_edit_history_visibility_policy as string;
    if (!(MESSAGE_EDIT_HISTORY_VISIBILITY_POLICIES as readonly string[]).includes(v)) throw invalid('message_edit_history_visibility_policy');
    set('message_edit_history_visibility_policy', v as RealmProperties['message_edit_history_visibility_policy']);
  } else if (raw.allow_edit_history !== undefined) {
    set('message_edit_history_visibility_policy', raw.allow_edit_history ? 'all' : 'none');
  }
  if (raw.digest_weekday !== undefined) {
    const v = raw.digest_weekday as number;
    if (v < 0 || v > 6) throw invalid('digest_weekday');
    set('digest_weekday', v);
  }
  if (raw.media_preview_size !== undefined) {
    const v = raw.media_preview_size as number;
    if (v !== 100 && v !== 150 && v !== 200) throw invalid('media_preview_size');
    set('media_preview_size', v);
  }
  if (raw.org_type !== undefined) {
    if (!ORG_TYPE_IDS.includes(raw.org_type as number)) throw invalid('org_type');
    set('org_type', raw.org_type as number);
  }
  if (raw.waiting_period_threshold !== undefined) {
    if ((raw.waiting_period_threshold as number) < 0) throw badRequest('waiting_period_threshold is too small');
    set('waiting_period_threshold', raw.waiting_period_threshold as number);
  }
  if (raw.jitsi_server_url !== undefined) {
    const v = raw.jitsi_server_url;
    if (typeof v !== 'string') throw badRequest('jitsi_server_url is not a string');
    if (v === 'default') set('jitsi_server_url', null);
    else if (!isCappedUrl(v, JITSI_SERVER_URL_MAX_LENGTH)) throw badRequest('jitsi_server_url is not an allowed_type');
    else set('jitsi_server_url', v);
  }
  for (const n of CHANNEL_PROPERTIES) {
    const v = raw[n] as number | undefined;
    if (v === undefined) continue;
    if (v >= 0) await accessStreamById(new ChannelCaller(services.db.kysely, realm, user), v, { requireContentAccess: false });
    set(n, v < 0 ? -1 : v);
  }

  const groupUpdates: Partial<Record<RealmGroupSettingName, GroupSettingUpdate>> = {};
  for (const n of REALM_GROUP_SETTING_NAMES) if (raw[n] !== undefined) groupUpdates[n] = raw[n] as GroupSettingUpdate;
  if (raw.wildcard_mention_policy !== undefined && groupUpdates.can_mention_many_users_group === undefined) {
    const group = WILDCARD_MENTION_POLICY_GROUPS[raw.wildcard_mention_policy as number];
    if (group === undefined) throw invalid('wildcard_mention_policy');
    const system = await fetchSystemGroups(services.db.kysely, realm.id);
    groupUpdates.can_mention_many_users_group = { new: system.find((g) => g.name === group)!.id };
  }
  const groups = await checkRealmGroupSettingUpdates(services, realm, groupUpdates);
  return {
    name: raw.name as string | undefined,
    description: raw.description as string | undefined,
    properties: props,
    groups,
  };
}

function isCappedUrl(value: string, max: number): boolean {
  if (value.length > max) return false;
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/** Zulip's PATCH /realm response: each changed setting, strings reported as "updated". */
function responseData(changes: RealmSettingChange[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of changes) out[c.name] = typeof c.value === 'string' ? 'updated' : c.value;
  return out;
}

export function registerRealmSettingsRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'PATCH',
    path: '/realm',
    authorize: requireAdmin,
    params: realmParams,
    handler: async ({ realm, user, params }) => {
      const { authentication_methods: authMethods, ...rest } = params;
      const update = await checkRealmUpdate(services, realm, user, rest as RawRealmParams);
      const disabledMethods = authMethods === undefined ? undefined : await checkAuthMethodsUpdate(services, realm, user, authMethods);
      const visibility = params.email_address_visibility;
      if (visibility !== undefined && !(EMAIL_ADDRESS_VISIBILITY_TYPES as readonly number[]).includes(visibility)) {
        throw invalid('email_address_visibility');
      }
      const changes = await doUpdateRealmSettings(services, realm, user, update);
      const data = responseData(changes);
      if (disabledMethods !== undefined && (await doSetRealmAuthMethods(services, realm, user, disabledMethods))) {
        data.authentication_methods = realmAuthMethods(services.config, (await fetchRealmById(services.db.kysely, realm.id))!);
      }
      if (visibility !== undefined && (await doSetRealmEmailAddressVisibility(services, realm, user, visibility as StoredUserSettings['email_address_visibility']))) {
        data.email_address_visibility = visibility;
      }
      return data;
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/realm/deactivate',
    authorize: (user: User) => {
      if (!isOwner(user)) throw ownerRequired();
    },
    params: { deletion_delay_days: p.json(z.number().int().nonnegative().nullable()).optional() },
    handler: async ({ realm, user, params }) => {
      // Parley keeps a deactivated organization's data until an operator removes it: no
      // deletion is ever scheduled, so a delay cannot be honored.
      if (params.deletion_delay_days !== undefined && params.deletion_delay_days !== null) {
        throw badRequest('Scheduled deletion of organization data is not supported by this server.');
      }
      await doDeactivateRealm(services, realm, user);
      return {};
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/realm/test_welcome_bot_custom_message',
    authorize: requireAdmin,
    params: { welcome_message_custom_text: p.str(z.string().max(MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH)) },
    handler: async ({ realm, user, params }) => {
      // Refused before the Welcome Bot is fetched: the first use creates it.
      const content = normalizeMessageContent(params.welcome_message_custom_text);
      return { message_id: await sendBotDirectMessage(services, realm, 'welcome', user, content) };
    },
  });
}

/** Security-related settings stay each user's own choice (Zulip's update_realm_user_settings_defaults). */
const REALM_DEFAULTABLE_SETTINGS = USER_SETTING_NAMES.filter((n) => !NOT_REALM_DEFAULTABLE.includes(n));

export function registerRealmUserSettingsDefaultsRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'PATCH',
    path: '/realm/user_settings_defaults',
    authorize: requireAdmin,
    params: userSettingParams(REALM_DEFAULTABLE_SETTINGS),
    handler: async ({ realm, user, params }) => {
      const values = checkUserSettingValues(params, REALM_DEFAULTABLE_SETTINGS);
      await doUpdateRealmUserSettingsDefaults(services, realm, user, values);
    },
  });
}
