import { fetchRealmUserGroups } from '../../db/repos/user_groups.js';
import { loadGroupMembership } from '../../lib/group_settings.js';
import { formatUserGroup } from '../../lib/format/user_groups.js';
import type { StateFetcher } from './types.js';

/** POST /register `realm_user_groups`; deactivated groups only for clients declaring include_deactivated_groups. */
export const fetchGroupsState: StateFetcher = async ({ services, realm, options, want }) => {
  if (!want('realm_user_groups')) return {};
  const db = services.db.kysely;
  const [groups, m] = await Promise.all([fetchRealmUserGroups(db, realm.id), loadGroupMembership(db, realm.id)]);
  const withDeactivated = options.clientCapabilities.include_deactivated_groups === true;
  return { realm_user_groups: groups.filter((g) => withDeactivated || !g.deactivated).map((g) => formatUserGroup(g, m)) };
};
