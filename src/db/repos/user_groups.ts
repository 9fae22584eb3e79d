import type { Tx } from '../index.js';
import type { UserGroup } from '../tables.js';

export async function insertUserGroup(
  db: Tx,
  row: { realm_id: number; name: string; description: string; is_system_group: number; date_created: number | null; creator_id: number | null; permissions?: string },
): Promise<UserGroup> {
  return db.insertInto('user_groups').values({ ...row, name_lc: row.name.toLowerCase() }).returningAll().executeTakeFirstOrThrow();
}

export async function insertSubgroups(db: Tx, groupId: number, subgroupIds: readonly number[]): Promise<void> {
  if (subgroupIds.length === 0) return;
  await db.insertInto('group_subgroups').values(subgroupIds.map((s) => ({ group_id: groupId, subgroup_id: s }))).execute();
}

export async function insertGroupMembers(db: Tx, groupId: number, userIds: readonly number[]): Promise<void> {
  if (userIds.length === 0) return;
  await db
    .insertInto('group_members')
    .values(userIds.map((u) => ({ group_id: groupId, user_id: u })))
    .onConflict((oc) => oc.doNothing())
    .execute();
}

export async function deleteGroupMembers(db: Tx, groupId: number, userIds: readonly number[]): Promise<void> {
  if (userIds.length === 0) return;
  await db.deleteFrom('group_members').where('group_id', '=', groupId).where('user_id', 'in', [...userIds]).execute();
}

export async function fetchSystemGroups(db: Tx, realmId: number): Promise<UserGroup[]> {
  return db.selectFrom('user_groups').selectAll().where('realm_id', '=', realmId).where('is_system_group', '=', 1).execute();
}

export interface GroupRows {
  groups: { id: number; name: string; is_system_group: number; deactivated: number }[];
  members: { group_id: number; user_id: number }[];
  subgroups: { group_id: number; subgroup_id: number }[];
  inactiveUserIds: number[];
}

/** Everything needed to evaluate group membership for one realm, in four indexed queries. */
export async function fetchGroupRows(db: Tx, realmId: number): Promise<GroupRows> {
  const [groups, members, subgroups, inactive] = await Promise.all([
    db.selectFrom('user_groups').select(['id', 'name', 'is_system_group', 'deactivated']).where('realm_id', '=', realmId).execute(),
    db
      .selectFrom('group_members')
      .innerJoin('user_groups', 'user_groups.id', 'group_members.group_id')
      .select(['group_members.group_id', 'group_members.user_id'])
      .where('user_groups.realm_id', '=', realmId)
      .execute(),
    db
      .selectFrom('group_subgroups')
      .innerJoin('user_groups', 'user_groups.id', 'group_subgroups.group_id')
      .select(['group_subgroups.group_id', 'group_subgroups.subgroup_id'])
      .where('user_groups.realm_id', '=', realmId)
      .execute(),
    db.selectFrom('users').select('id').where('realm_id', '=', realmId).where('is_active', '=', 0).execute(),
  ]);
  return { groups, members, subgroups, inactiveUserIds: inactive.map((r) => r.id) };
}

export async function updateSystemGroupPermissions(db: Tx, realmId: number, permissions: string): Promise<void> {
  await db.updateTable('user_groups').set({ permissions }).where('realm_id', '=', realmId).where('is_system_group', '=', 1).execute();
}
