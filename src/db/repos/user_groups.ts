import { sql } from 'kysely';
import type { Tx } from '../index.js';
import type { UserGroup } from '../tables.js';
import { cachedRead } from '../cache.js';

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
/** The realm's whole group graph: cached (db/cache.ts), as permission checks and register read it constantly. */
export const fetchGroupRows = cachedRead(
  'realm_groups',
  ['user_groups', 'group_members', 'group_subgroups', 'users'],
  (realmId: number) => String(realmId),
  fetchGroupRowsUncached,
);

async function fetchGroupRowsUncached(db: Tx, realmId: number): Promise<GroupRows> {
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

export async function fetchUserGroupById(db: Tx, realmId: number, groupId: number): Promise<UserGroup | undefined> {
  return db.selectFrom('user_groups').selectAll().where('realm_id', '=', realmId).where('id', '=', groupId).executeTakeFirst();
}

export async function fetchUserGroupByName(db: Tx, realmId: number, name: string): Promise<UserGroup | undefined> {
  return db.selectFrom('user_groups').selectAll().where('realm_id', '=', realmId).where('name_lc', '=', name.toLowerCase()).executeTakeFirst();
}

export async function fetchRealmUserGroups(db: Tx, realmId: number): Promise<UserGroup[]> {
  return db.selectFrom('user_groups').selectAll().where('realm_id', '=', realmId).orderBy('id').execute();
}

export async function updateUserGroupRow(
  db: Tx,
  groupId: number,
  changes: Partial<Pick<UserGroup, 'name' | 'description' | 'deactivated' | 'permissions'>>,
): Promise<void> {
  const row: Record<string, unknown> = { ...changes };
  if (changes.name !== undefined) row.name_lc = changes.name.toLowerCase();
  await db.updateTable('user_groups').set(row).where('id', '=', groupId).execute();
}

export async function deleteSubgroups(db: Tx, groupId: number, subgroupIds: readonly number[]): Promise<void> {
  if (subgroupIds.length === 0) return;
  await db.deleteFrom('group_subgroups').where('group_id', '=', groupId).where('subgroup_id', 'in', [...subgroupIds]).execute();
}

export async function fetchGroupsUsingSettings(db: Tx, realmId: number): Promise<{ id: number; permissions: string }[]> {
  return db.selectFrom('user_groups').select(['id', 'permissions']).where('realm_id', '=', realmId).where('deactivated', '=', 0).execute();
}

export async function fetchStreamPermissions(db: Tx, realmId: number): Promise<{ id: number; permissions: string }[]> {
  return db.selectFrom('streams').select(['id', 'permissions']).where('realm_id', '=', realmId).where('deactivated', '=', 0).execute();
}

/**
 * The part of the group graph that matters for one user: every group containing the user,
 * directly or through nested subgroups, with the edges between them. One recursive query,
 * independent of the realm's size; the permission hot paths use it instead of fetchGroupRows.
 */
export async function fetchGroupRowsForUser(db: Tx, user: { id: number; is_active: number }): Promise<GroupRows> {
  const { rows } = await sql<{ id: number; child: number | null; name: string; is_system_group: number; deactivated: number }>`
    WITH RECURSIVE anc(id, child) AS (
      SELECT group_id, CAST(NULL AS BIGINT) FROM group_members WHERE user_id = ${user.id}
      UNION
      SELECT gs.group_id, gs.subgroup_id FROM group_subgroups gs JOIN anc ON gs.subgroup_id = anc.id
    )
    SELECT anc.id, anc.child, ug.name, ug.is_system_group, ug.deactivated
    FROM anc JOIN user_groups ug ON ug.id = anc.id`.execute(db);
  const groups = new Map<number, GroupRows['groups'][number]>();
  const members: GroupRows['members'] = [];
  const subgroups: GroupRows['subgroups'] = [];
  for (const r of rows) {
    const id = Number(r.id);
    groups.set(id, { id, name: r.name, is_system_group: Number(r.is_system_group), deactivated: Number(r.deactivated) });
    if (r.child === null) members.push({ group_id: id, user_id: user.id });
    else subgroups.push({ group_id: id, subgroup_id: Number(r.child) });
  }
  return { groups: [...groups.values()], members, subgroups, inactiveUserIds: user.is_active ? [] : [user.id] };
}
