import { badRequest, insufficientPermission } from '../../errors.js';
import type { Tx } from '../../db/index.js';
import type { Realm, User, UserGroup } from '../../db/tables.js';
import { fetchUserGroupById } from '../../db/repos/user_groups.js';
import { isGuest } from '../roles.js';
import { USER_GROUP_PERMISSION_CONFIG, loadGroupMembership, userHasGroupPermission, type GroupMembership } from '../group_settings.js';
import { realmSettings } from '../realm_settings.js';
import { groupPermissions } from '../format/user_groups.js';

/** Every user-group endpoint is closed to guests, as Zulip's require_member_or_admin. */
export function checkNotGuest(user: Pick<User, 'role'>): void {
  if (isGuest(user)) throw badRequest('Not allowed for guest users');
}

/** Reads a group of the caller's realm; unknown IDs and other realms' groups look the same. */
export async function accessUserGroupForRead(db: Tx, realm: Realm, groupId: number, allowDeactivated = false): Promise<UserGroup> {
  const group = await fetchUserGroupById(db, realm.id, groupId);
  if (!group) throw badRequest('Invalid user group');
  if (group.deactivated && !allowDeactivated) throw badRequest('User group is deactivated.');
  return group;
}

export type GroupPermission = keyof typeof USER_GROUP_PERMISSION_CONFIG;

function holds(m: GroupMembership, group: UserGroup, user: User, setting: GroupPermission): boolean {
  return userHasGroupPermission(m, groupPermissions(group)[setting]!, user, USER_GROUP_PERMISSION_CONFIG[setting]!);
}

/**
 * The check before changing a group on a user's behalf (Zulip's access_user_group_for_update):
 * system groups are never editable; members of the realm's can_manage_all_groups and of the
 * group's can_manage_group may do everything; otherwise the specific `permission` decides.
 */
export async function accessUserGroupForUpdate(
  db: Tx,
  realm: Realm,
  user: User,
  groupId: number,
  permission: GroupPermission,
  opts: { allowDeactivated?: boolean; membership?: GroupMembership } = {},
): Promise<{ group: UserGroup; membership: GroupMembership }> {
  const group = await accessUserGroupForRead(db, realm, groupId, opts.allowDeactivated ?? false);
  if (group.is_system_group) throw insufficientPermission();
  const m = opts.membership ?? (await loadGroupMembership(db, realm.id));
  const manageAll = userHasGroupPermission(m, realmSettings(realm).can_manage_all_groups, user, { allowEveryoneGroup: false });
  if (manageAll || holds(m, group, user, 'can_manage_group')) return { group, membership: m };
  if (permission !== 'can_manage_group' && holds(m, group, user, permission)) return { group, membership: m };
  throw insufficientPermission();
}

/** Joining or leaving oneself is allowed by can_join_group / can_leave_group, else by the general permission. */
export async function accessUserGroupForSelfOrOthers(
  db: Tx,
  realm: Realm,
  user: User,
  groupId: number,
  userIds: readonly number[],
  selfPermission: GroupPermission,
  othersPermission: GroupPermission,
): Promise<{ group: UserGroup; membership: GroupMembership }> {
  const opts = { allowDeactivated: true };
  if (userIds.length === 1 && userIds[0] === user.id) {
    const m = await loadGroupMembership(db, realm.id);
    try {
      return await accessUserGroupForUpdate(db, realm, user, groupId, selfPermission, { ...opts, membership: m });
    } catch {
      return accessUserGroupForUpdate(db, realm, user, groupId, othersPermission, { ...opts, membership: m });
    }
  }
  return accessUserGroupForUpdate(db, realm, user, groupId, othersPermission, opts);
}
