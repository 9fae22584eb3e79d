import type { StateFetcher } from './types.js';
import { fetchCustomProfileFields } from '../../db/repos/custom_profile_fields.js';
import { getSystemBotsForApi, getUsersForApi, registerUsersForApi } from '../../lib/users.js';
import { avatarUrl } from '../../lib/avatar.js';
import { avatarUrlMedium, formatCustomProfileField } from '../../lib/format/users.js';
import { CUSTOM_PROFILE_FIELD_TYPES } from '../../lib/custom_profile_fields.js';
import { loadGroupMembership, userHasGroupPermission } from '../../lib/group_settings.js';
import { REALM_GROUP_SETTING_CONFIG, realmSettings, type RealmGroupSettingName } from '../../lib/realm_settings.js';
import { ROLE_GUEST, ROLE_MODERATOR, ROLE_OWNER, isAdmin } from '../../lib/roles.js';
import { realmUrl } from '../../lib/urls.js';
import { RawJson } from '../../lib/raw_json.js';

/**
 * POST /register keys for: realm_user (the user list and the caller's own identity and
 * permissions) and custom_profile_fields.
 */
export const fetchUsersState: StateFetcher = async ({ services, realm, user, options, want }) => {
  const db = services.db.kysely;
  const out: Record<string, unknown> = {};
  if (want('realm_user')) {
    const opts = { clientGravatar: options.clientGravatar, includeCustomProfileFields: true, userListIncomplete: options.userListIncomplete, omitIsActive: true };
    // Most of a register response: the users' dicts come serialized from the cache (lib/users.ts).
    const everyone = await registerUsersForApi(db, services.config, realm, user, opts);
    if (everyone) {
      out.realm_users = new RawJson(`[${everyone.activeJson}]`);
      out.realm_non_active_users = everyone.nonActive;
    } else {
      const users = await getUsersForApi(db, services.config, realm, user, opts);
      out.realm_users = users.filter((u) => !u.user || u.user.is_active).map((u) => u.dict);
      out.realm_non_active_users = users.filter((u) => u.user && !u.user.is_active).map((u) => u.dict);
    }
    out.cross_realm_bots = await getSystemBotsForApi(db, services.config, realm, user);

    const m = await loadGroupMembership(db, realm.id);
    const settings = realmSettings(realm);
    const holds = (name: RealmGroupSettingName) => userHasGroupPermission(m, settings[name], user, REALM_GROUP_SETTING_CONFIG[name]);
    const canCreatePublic = holds('can_create_public_channel_group');
    const canCreatePrivate = holds('can_create_private_channel_group');
    const base = realmUrl(services.config, realm);
    Object.assign(out, {
      user_id: user.id,
      email: user.email,
      delivery_email: user.delivery_email,
      full_name: user.full_name,
      avatar_source: user.avatar_source,
      avatar_url: avatarUrl(base, user),
      avatar_url_medium: avatarUrlMedium(base, user),
      is_admin: isAdmin(user),
      is_owner: user.role === ROLE_OWNER,
      is_moderator: user.role <= ROLE_MODERATOR,
      is_guest: user.role === ROLE_GUEST,
      can_create_streams: canCreatePublic || canCreatePrivate,
      can_create_public_streams: canCreatePublic,
      can_create_private_streams: canCreatePrivate,
      can_create_web_public_streams: settings.enable_spectator_access && holds('can_create_web_public_channel_group'),
      can_subscribe_other_users: holds('can_add_subscribers_group'),
      can_invite_others_to_realm: holds('can_invite_users_group'),
    });
  }
  if (want('custom_profile_fields')) {
    out.custom_profile_fields = (await fetchCustomProfileFields(db, realm.id)).map(formatCustomProfileField);
    out.custom_profile_field_types = CUSTOM_PROFILE_FIELD_TYPES;
  }
  return out;
};
