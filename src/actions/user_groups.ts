import { JsonableError, badRequest } from '../errors.js';
import { now, transaction, type Tx } from '../db/index.js';
import type { Realm, User, UserGroup } from '../db/tables.js';
import { fetchActiveUserIds } from '../db/repos/users.js';
import {
  deleteGroupMembers,
  deleteSubgroups,
  fetchGroupsUsingSettings,
  fetchStreamPermissions,
  fetchUserGroupById,
  fetchUserGroupByName,
  insertGroupMembers,
  insertSubgroups,
  insertUserGroup,
  updateUserGroupRow,
} from '../db/repos/user_groups.js';
import {
  USER_GROUP_PERMISSION_CONFIG,
  USER_GROUP_PERMISSION_SETTINGS,
  checkGroupSettingChange,
  checkGroupSettingValue,
  loadGroupMembership,
  type GroupMembership,
  type GroupSettingUpdate,
  type GroupSettingValue,
} from '../lib/group_settings.js';
import { formatUserGroup, groupPermissions } from '../lib/format/user_groups.js';
import { MAX_USER_GROUP_NAME_LENGTH } from '../version.js';
import { REALM_GROUP_SETTING_NAMES, realmSettings } from '../lib/realm_settings.js';
import type { ActionServices } from '../services.js';

const INVALID_NAME_PREFIXES = ['@', 'role:', 'user:', 'stream:', 'channel:'];

export async function checkUserGroupName(db: Tx, realm: Realm, name: string, exceptGroupId?: number): Promise<string> {
  if (name.trim() === '') throw badRequest("User group name can't be empty!");
  if (name.length > MAX_USER_GROUP_NAME_LENGTH) {
    throw badRequest(`User group name cannot exceed ${MAX_USER_GROUP_NAME_LENGTH} characters.`);
  }
  for (const prefix of INVALID_NAME_PREFIXES) {
    if (name.startsWith(prefix)) throw badRequest(`User group name cannot start with '${prefix}'.`);
  }
  const existing = await fetchUserGroupByName(db, realm.id, name);
  if (existing && existing.id !== exceptGroupId) throw badRequest(`User group '${name}' already exists.`);
  return name;
}

/** Every ID must be an active user of the realm. */
export function checkActiveUserIds(activeUserIds: ReadonlySet<number>, ids: readonly number[]): void {
  for (const id of ids) if (!activeUserIds.has(id)) throw badRequest(`Invalid user ID: ${id}`);
}

/** Subgroups to add must be active groups of the realm that would not create a cycle. */
export function checkSubgroupsToAdd(m: GroupMembership, groupId: number | null, subgroupIds: readonly number[]): void {
  for (const id of subgroupIds) {
    const g = m.byId.get(id);
    if (!g) throw badRequest(`Invalid user group ID: ${id}`);
    if (g.deactivated) throw badRequest('User group is deactivated.');
  }
  if (groupId !== null) {
    for (const id of subgroupIds) {
      if (m.directSubgroups(groupId).includes(id)) throw badRequest(`User group ${id} is already a subgroup of this group.`);
    }
    if (subgroupIds.some((id) => m.descendants(id).has(groupId))) {
      throw badRequest(`User group ${groupId} is already a subgroup of one of the passed subgroups.`);
    }
  }
}

async function realmAudience(tx: Tx, realmId: number): Promise<number[]> {
  return fetchActiveUserIds(tx, realmId);
}

async function audit(tx: Tx, realm: Realm, actor: User | null, groupId: number, eventType: string, extra: object): Promise<void> {
  await tx
    .insertInto('audit_log')
    .values({
      realm_id: realm.id,
      acting_user_id: actor?.id ?? null,
      modified_group_id: groupId,
      event_type: eventType,
      event_time: now(),
      extra_data: JSON.stringify(extra),
    })
    .execute();
}

export interface CreateUserGroupInput {
  name: string;
  description: string;
  members: number[];
  subgroups: number[];
  /** Values given for some permission settings; the rest take Zulip's defaults. */
  settings: Record<string, GroupSettingValue>;
}

/**
 * Creates a group. Preconditions (checkCreateUserGroup): the caller may create groups, the
 * name is valid and free, members, subgroups and setting values are valid.
 */
export async function doCreateUserGroup(services: ActionServices, realm: Realm, actor: User, input: CreateUserGroupInput): Promise<number> {
  return transaction(services.db, async (tx, afterCommit) => {
    const m = await loadGroupMembership(tx, realm.id);
    const permissions: Record<string, GroupSettingValue> = {};
    for (const s of USER_GROUP_PERMISSION_SETTINGS) {
      const given = input.settings[s];
      if (given !== undefined) permissions[s] = given;
      else {
        const def = USER_GROUP_PERMISSION_CONFIG[s]!.defaultGroupName;
        permissions[s] = def === 'group_creator' ? { direct_members: [actor.id], direct_subgroups: [] } : m.systemGroupId(def);
      }
    }
    const group = await insertUserGroup(tx, {
      realm_id: realm.id,
      name: input.name,
      description: input.description,
      is_system_group: 0,
      date_created: now(),
      creator_id: actor.id,
      permissions: JSON.stringify(permissions),
    });
    await insertGroupMembers(tx, group.id, input.members);
    await insertSubgroups(tx, group.id, input.subgroups);
    await audit(tx, realm, actor, group.id, 'user_group_created', { members: input.members, subgroups: input.subgroups });
    const fresh = await loadGroupMembership(tx, realm.id);
    const event = { type: 'user_group', op: 'add', group: formatUserGroup(group, fresh) };
    const users = await realmAudience(tx, realm.id);
    afterCommit(() => services.events.send(realm.id, event, users));
    return group.id;
  });
}

export async function checkCreateUserGroup(
  services: ActionServices,
  realm: Realm,
  input: CreateUserGroupInput,
): Promise<CreateUserGroupInput> {
  const db = services.db.kysely;
  const name = await checkUserGroupName(db, realm, input.name);
  const m = await loadGroupMembership(db, realm.id);
  const active = new Set(await fetchActiveUserIds(db, realm.id));
  checkActiveUserIds(active, input.members);
  checkSubgroupsToAdd(m, null, input.subgroups);
  const settings: Record<string, GroupSettingValue> = {};
  for (const [s, v] of Object.entries(input.settings)) {
    settings[s] = checkGroupSettingValue(m, v, s, USER_GROUP_PERMISSION_CONFIG[s]!, active);
  }
  return { ...input, name, settings };
}

export interface UpdateUserGroupInput {
  name?: string;
  description?: string;
  settings: Record<string, GroupSettingUpdate>;
  deactivated?: boolean;
}

/**
 * Validates a PATCH /user_groups/{id} against the group's current state and returns only the
 * changes that would alter it (a setting whose `new` equals its current value is skipped).
 */
export async function checkUpdateUserGroup(
  services: ActionServices,
  realm: Realm,
  group: UserGroup,
  m: GroupMembership,
  input: UpdateUserGroupInput,
): Promise<{ name?: string; description?: string; settings: Record<string, GroupSettingValue>; reactivate: boolean }> {
  const db = services.db.kysely;
  const out: { name?: string; description?: string; settings: Record<string, GroupSettingValue>; reactivate: boolean } = {
    settings: {},
    reactivate: input.deactivated === false && !!group.deactivated,
  };
  if (input.name !== undefined && input.name !== group.name) out.name = await checkUserGroupName(db, realm, input.name, group.id);
  if (input.description !== undefined && input.description !== group.description) out.description = input.description;
  const current = groupPermissions(group);
  const active = new Set(await fetchActiveUserIds(db, realm.id));
  for (const [s, update] of Object.entries(input.settings)) {
    if (!checkGroupSettingChange(current[s]!, update)) continue;
    out.settings[s] = checkGroupSettingValue(m, update.new, s, USER_GROUP_PERMISSION_CONFIG[s]!, active);
  }
  return out;
}

/** Applies checked changes; sends one `update` event per changed property, as Zulip does. */
export async function doUpdateUserGroup(
  services: ActionServices,
  realm: Realm,
  actor: User,
  group: UserGroup,
  changes: { name?: string; description?: string; settings: Record<string, GroupSettingValue>; reactivate: boolean },
): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    const users = await realmAudience(tx, realm.id);
    const wasDeactivated = !!group.deactivated && !changes.reactivate;
    if (changes.reactivate) {
      await updateUserGroupRow(tx, group.id, { deactivated: 0 });
      await audit(tx, realm, actor, group.id, 'user_group_reactivated', {});
      const reactivated = (await fetchUserGroupById(tx, realm.id, group.id))!;
      const added = { type: 'user_group', op: 'add', group: formatUserGroup(reactivated, await loadGroupMembership(tx, realm.id)) };
      afterCommit(() => {
        services.events.send(realm.id, { type: 'user_group', op: 'update', group_id: group.id, data: { deactivated: false } }, users, undefined, {
          capability: 'include_deactivated_groups',
          value: true,
        });
        services.events.send(realm.id, added, users, undefined, { capability: 'include_deactivated_groups', value: false });
      });
    }
    const data: Record<string, unknown>[] = [];
    if (changes.name !== undefined) {
      await updateUserGroupRow(tx, group.id, { name: changes.name });
      await audit(tx, realm, actor, group.id, 'user_group_name_changed', { old_value: group.name, new_value: changes.name });
      data.push({ name: changes.name });
    }
    if (changes.description !== undefined) {
      await updateUserGroupRow(tx, group.id, { description: changes.description });
      await audit(tx, realm, actor, group.id, 'user_group_description_changed', { old_value: group.description, new_value: changes.description });
      data.push({ description: changes.description });
    }
    if (Object.keys(changes.settings).length) {
      const permissions = { ...groupPermissions(group), ...changes.settings };
      await updateUserGroupRow(tx, group.id, { permissions: JSON.stringify(permissions) });
      for (const [s, v] of Object.entries(changes.settings)) {
        await audit(tx, realm, actor, group.id, 'user_group_group_based_setting_changed', { property: s, old_value: groupPermissions(group)[s], new_value: v });
        data.push({ [s]: v });
      }
    }
    afterCommit(() => {
      for (const d of data) {
        const event = { type: 'user_group', op: 'update', group_id: group.id, data: d };
        // Renaming a deactivated group only concerns clients that know about deactivated groups.
        const onlyIf = wasDeactivated && 'name' in d ? { capability: 'include_deactivated_groups', value: true } : undefined;
        services.events.send(realm.id, event, users, undefined, onlyIf);
      }
    });
  });
}

function usesGroup(value: GroupSettingValue | undefined, groupId: number): boolean {
  if (value === undefined) return false;
  return typeof value === 'number' ? value === groupId : value.direct_subgroups.includes(groupId);
}

/** Zulip refuses to deactivate a group still used as a subgroup or by any permission setting. */
export async function checkDeactivateUserGroup(services: ActionServices, realm: Realm, group: UserGroup, m: GroupMembership): Promise<void> {
  const db = services.db.kysely;
  const objections: Record<string, unknown>[] = [];
  const supergroups = [...m.byId.values()]
    .filter((g) => !g.deactivated && g.id !== group.id && m.directSubgroups(g.id).includes(group.id))
    .map((g) => g.id);
  if (supergroups.length) objections.push({ type: 'subgroup', supergroup_ids: supergroups });
  for (const s of await fetchStreamPermissions(db, realm.id)) {
    const settings = Object.entries(JSON.parse(s.permissions) as Record<string, GroupSettingValue>)
      .filter(([, v]) => usesGroup(v, group.id))
      .map(([k]) => k);
    if (settings.length) objections.push({ type: 'channel', channel_id: s.id, settings });
  }
  for (const g of await fetchGroupsUsingSettings(db, realm.id)) {
    const settings = Object.entries(JSON.parse(g.permissions) as Record<string, GroupSettingValue>)
      .filter(([, v]) => usesGroup(v, group.id))
      .map(([k]) => k);
    if (settings.length) objections.push({ type: 'user_group', group_id: g.id, settings });
  }
  const settings = realmSettings(realm);
  const usedByRealm = REALM_GROUP_SETTING_NAMES.filter((name) => usesGroup(settings[name], group.id));
  if (usedByRealm.length) objections.push({ type: 'realm', settings: usedByRealm });
  if (objections.length) {
    throw new JsonableError('Cannot deactivate user group in use.', 'CANNOT_DEACTIVATE_GROUP_IN_USE', 400, { objections });
  }
}

export async function doDeactivateUserGroup(services: ActionServices, realm: Realm, actor: User, group: UserGroup): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await updateUserGroupRow(tx, group.id, { deactivated: 1 });
    await audit(tx, realm, actor, group.id, 'user_group_deactivated', {});
    const users = await realmAudience(tx, realm.id);
    afterCommit(() => {
      services.events.send(realm.id, { type: 'user_group', op: 'update', group_id: group.id, data: { deactivated: true } }, users, undefined, {
        capability: 'include_deactivated_groups',
        value: true,
      });
      services.events.send(realm.id, { type: 'user_group', op: 'remove', group_id: group.id }, users, undefined, {
        capability: 'include_deactivated_groups',
        value: false,
      });
    });
  });
}

export type MembershipChange =
  | { op: 'add_members' | 'remove_members'; userIds: number[] }
  | { op: 'add_subgroups' | 'remove_subgroups'; groupIds: number[] };

/** Adds or removes direct members or subgroups (already checked) and announces it to the realm. */
export async function doChangeGroupMembership(services: ActionServices, realm: Realm, actor: User, group: UserGroup, change: MembershipChange): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    let event: Record<string, unknown> & { type: string };
    switch (change.op) {
      case 'add_members':
        await insertGroupMembers(tx, group.id, change.userIds);
        event = { type: 'user_group', op: change.op, group_id: group.id, user_ids: change.userIds };
        break;
      case 'remove_members':
        await deleteGroupMembers(tx, group.id, change.userIds);
        event = { type: 'user_group', op: change.op, group_id: group.id, user_ids: change.userIds };
        break;
      case 'add_subgroups':
        await insertSubgroups(tx, group.id, change.groupIds);
        event = { type: 'user_group', op: change.op, group_id: group.id, direct_subgroup_ids: change.groupIds };
        break;
      case 'remove_subgroups':
        await deleteSubgroups(tx, group.id, change.groupIds);
        event = { type: 'user_group', op: change.op, group_id: group.id, direct_subgroup_ids: change.groupIds };
        break;
    }
    await audit(tx, realm, actor, group.id, `user_group_${change.op}`, change);
    const users = await realmAudience(tx, realm.id);
    afterCommit(() => services.events.send(realm.id, event, users));
  });
}
