import { mutedUsersList } from '../../actions/muted_users.js';
import { fetchUserAlertWordsCached } from '../../db/cached.js';
import { fetchRealmUserStatuses } from '../../db/repos/user_status.js';
import { loadUserAccess } from '../../lib/access/users.js';
import { formatUserStatus } from '../../lib/format/user_status.js';
import { parseStoredUserSettings } from '../../lib/user_settings.js';
import type { StateFetcher } from './types.js';

/**
 * POST /register keys for alert_words, muted_users and user_status (statuses of the active
 * users the caller may see, keyed by user ID; Zulip's get_all_users_status_dict).
 */
export const fetchPersonalState: StateFetcher = async ({ services, realm, user, want }) => {
  const db = services.db.kysely;
  const out: Record<string, unknown> = {};
  if (want('alert_words')) out.alert_words = await fetchUserAlertWordsCached(db, user.id);
  if (want('muted_users')) out.muted_users = await mutedUsersList(db, user.id);
  if (want('user_status')) {
    const [rows, access] = await Promise.all([fetchRealmUserStatuses(db, realm.id), loadUserAccess(db, realm, user)]);
    const statuses: Record<string, unknown> = {};
    for (const r of rows) {
      if (!access.canAccess({ id: r.user_id, is_bot: 0 })) continue;
      statuses[String(r.user_id)] = formatUserStatus(r, parseStoredUserSettings(r.settings).presence_enabled);
    }
    out.user_status = statuses;
  }
  return out;
};
