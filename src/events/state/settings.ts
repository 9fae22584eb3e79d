import { fetchSystemGroupsCached } from '../../db/cached.js';
import { fetchInactiveUserIds, fetchLinkifiers } from '../../db/repos/settings.js';
import {
  formatRealmState,
  formatRealmUserSettingsDefaults,
  formatUserSettings,
} from '../../lib/format/settings.js';
import { REALM_GROUP_SETTING_NAMES, realmSettings } from '../../lib/realm_settings.js';
import { realmUserSettingsDefaults } from '../../lib/user_settings.js';
import type { StateFetcher } from './types.js';

/**
 * POST /register keys for: realm (realm_* settings and the server-level server_* and max_* parameters),
 * user_settings (Zulip no longer sends the legacy top-level copies of user settings since
 * feature level 439, and zulip.yaml's register schema no longer has them),
 * realm_user_settings_defaults, realm_linkifiers, realm_filters and realm_billing.
 */
export const fetchSettingsState: StateFetcher = async ({ services, realm, user, options, want }) => {
  const db = services.db.kysely;
  const state: Record<string, unknown> = {};

  if (want('realm')) {
    const settings = realmSettings(realm);
    const hasAnonymousSetting = REALM_GROUP_SETTING_NAMES.some((n) => typeof settings[n] !== 'number');
    const [systemGroups, inactive] = await Promise.all([
      fetchSystemGroupsCached(db, realm.id),
      hasAnonymousSetting ? fetchInactiveUserIds(db, realm.id) : Promise.resolve([]),
    ]);
    Object.assign(
      state,
      formatRealmState({
        config: services.config,
        realm,
        user,
        systemGroupNames: new Map(systemGroups.map((g) => [g.id, g.name])),
        inactiveUserIds: new Set(inactive),
        pushConfigured: services.push !== undefined && services.push.enabled !== false,
      }),
    );
  }
  if (want('realm_user_settings_defaults')) {
    state.realm_user_settings_defaults = formatRealmUserSettingsDefaults(realmUserSettingsDefaults(realm));
  }
  if (want('realm_linkifiers')) {
    // Zulip sends linkifiers only to clients that understand URL templates.
    state.realm_linkifiers = options.clientCapabilities.linkifier_url_template ? await fetchLinkifiers(db, realm.id) : [];
  }
  if (want('realm_filters')) {
    // The legacy format cannot express URL templates, so Zulip always sends none.
    state.realm_filters = [];
  }
  if (want('realm_billing')) state.realm_billing = { has_pending_sponsorship_request: false };
  if (want('user_settings')) state.user_settings = formatUserSettings(user);
  return state;
};
