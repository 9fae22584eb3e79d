import type { Config } from '../../config.js';
import type { CustomProfileField, Realm, User } from '../../db/tables.js';
import type { CustomProfileValueRow } from '../../db/repos/custom_profile_fields.js';
import { AVATAR_FROM_GRAVATAR, avatarUrl } from '../avatar.js';
import { EMAIL_VISIBILITY_EVERYONE, canAccessDeliveryEmail, dummyEmail, emailAddressVisibility } from '../access/users.js';
import { isRenderable } from '../custom_profile_fields.js';
import { ROLE_GUEST, ROLE_MEMBER, ROLE_OWNER, isAdmin } from '../roles.js';
import { realmUrl } from '../urls.js';

/** One entry of a user's profile_data: `value`, plus `rendered_value` for Markdown fields. */
export interface ProfileDataEntry {
  value: string;
  rendered_value?: string;
}
export type ProfileData = Record<string, ProfileDataEntry>;

/**
 * Zulip's date_joined: ISO 8601 in UTC at minute precision (`isoformat(timespec="minutes")`),
 * e.g. "2019-10-20T07:50+00:00".
 */
export function formatDateJoined(unixSeconds: number): string {
  return `${new Date(unixSeconds * 1000).toISOString().slice(0, 16)}+00:00`;
}

/** Zulip's medium (500px) avatar URL, shown in settings UIs. */
export function avatarUrlMedium(baseUrl: string, user: Parameters<typeof avatarUrl>[1]): string {
  const url = avatarUrl(baseUrl, user);
  if (user.avatar_source === AVATAR_FROM_GRAVATAR) return url.replace('?d=identicon&', '?d=identicon&s=500&');
  return url.replace(/\.png\?/, '-medium.png?');
}

export interface UserFormatContext {
  config: Config;
  realm: Realm;
  /** Who receives the dict: decides delivery_email. Null for spectators. */
  viewer: Pick<User, 'id' | 'role'> | null;
  /** client_gravatar / client_extavatar: avatar_url may be null for Gravatar avatars. */
  clientGravatar: boolean;
  /** Present when include_custom_profile_fields: every user's values by user ID. */
  profileData?: ReadonlyMap<number, ProfileData>;
  /** register's realm_users / realm_non_active_users leave out is_active. */
  omitIsActive?: boolean;
}

/**
 * The User object of zulip.yaml (GET /users, /users/{id}, register's realm_users, realm_user
 * add events), as Zulip's format_user_row builds it for this viewer.
 */
export function formatUser(user: User, ctx: UserFormatContext): Record<string, unknown> {
  const visibility = emailAddressVisibility(user);
  const out: Record<string, unknown> = {
    email: user.email,
    user_id: user.id,
    avatar_version: user.avatar_version,
    is_admin: isAdmin(user),
    is_owner: user.role === ROLE_OWNER,
    is_guest: user.role === ROLE_GUEST,
    role: user.role,
    is_bot: !!user.is_bot,
    full_name: user.full_name,
    timezone: user.timezone,
    is_active: !!user.is_active,
    date_joined: formatDateJoined(user.date_joined),
    delivery_email: canAccessDeliveryEmail(ctx.viewer, user) ? user.delivery_email : null,
    is_imported_stub: !!user.is_imported_stub,
  };
  if (ctx.omitIsActive) delete out.is_active;
  if (user.is_deleted) out.is_deleted = true;
  // Clients compute Gravatar URLs from the API email, so that only works when it is the real one.
  const omittable = ctx.clientGravatar && user.avatar_source === AVATAR_FROM_GRAVATAR && visibility === EMAIL_VISIBILITY_EVERYONE;
  out.avatar_url = omittable ? null : avatarUrl(realmUrl(ctx.config, ctx.realm), user);
  if (user.is_bot) {
    out.bot_type = user.bot_type;
    out.bot_owner_id = user.bot_owner_id;
  } else {
    // Zulip omits bot_type for humans; zulip.yaml's examples show null, which clients accept too.
    out.bot_type = null;
    if (ctx.profileData) out.profile_data = ctx.profileData.get(user.id) ?? {};
  }
  return out;
}

/**
 * What a guest without access sees of a user (Zulip's get_data_for_inaccessible_user), for
 * clients that did not declare user_list_incomplete.
 */
export function formatInaccessibleUser(config: Config, realm: Realm, userId: number): Record<string, unknown> {
  return {
    email: dummyEmail(config, realm, userId),
    user_id: userId,
    avatar_version: 1,
    is_admin: false,
    is_owner: false,
    is_guest: false,
    role: ROLE_MEMBER,
    is_bot: false,
    full_name: 'Unknown user',
    timezone: '',
    date_joined: formatDateJoined(0),
    delivery_email: null,
    avatar_url: `${realmUrl(config, realm)}/static/images/unknown-user-avatar.png`,
    profile_data: {},
    is_imported_stub: false,
  };
}

/** profile_data of every user, from their stored values. */
export function profileDataByUser(
  fields: readonly Pick<CustomProfileField, 'id' | 'type'>[],
  values: readonly CustomProfileValueRow[],
): Map<number, ProfileData> {
  const types = new Map(fields.map((f) => [f.id, f.type]));
  const out = new Map<number, ProfileData>();
  for (const v of values) {
    const type = types.get(v.field_id);
    if (type === undefined) continue;
    let data = out.get(v.user_id);
    if (!data) out.set(v.user_id, (data = {}));
    data[String(v.field_id)] = isRenderable(type) ? { value: v.value, rendered_value: v.rendered_value ?? '' } : { value: v.value };
  }
  return out;
}

/** The CustomProfileField object (GET /realm/profile_fields, register, custom_profile_fields events). */
export function formatCustomProfileField(f: CustomProfileField): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: f.id,
    name: f.name,
    type: f.type,
    hint: f.hint,
    field_data: f.field_data,
    order: f.order,
    required: !!f.required,
    editable_by_user: !!f.editable_by_user,
  };
  if (f.display_in_profile_summary) out.display_in_profile_summary = true;
  if (f.use_for_user_matching) out.use_for_user_matching = true;
  return out;
}
