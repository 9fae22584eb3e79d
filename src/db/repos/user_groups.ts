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
