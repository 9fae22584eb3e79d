import { z } from 'zod';
import { JsonableError, badRequest } from '../errors.js';
import type { Tx } from '../db/index.js';
import { fetchGroupRows, type GroupRows } from '../db/repos/user_groups.js';
import { fetchGroupRowsForUserCached } from '../db/cached.js';

/**
 * A group-setting value: the ID of a user group, or an anonymous group given by its direct
 * members and direct subgroups. Permission settings of realms, channels and groups all take
 * this form and are all evaluated by `isUserInGroupSetting`.
 */
export type GroupSettingValue = number | { direct_members: number[]; direct_subgroups: number[] };

export const groupSettingValueSchema = z.union([
  z.number().int(),
  z.object({ direct_members: z.array(z.number().int()), direct_subgroups: z.array(z.number().int()) }).strict(),
]);

/** A realm's groups and memberships, indexed for recursive evaluation. */
export class GroupMembership {
  readonly byId = new Map<number, { id: number; name: string; isSystem: boolean; deactivated: boolean }>();
  readonly byName = new Map<string, number>();
  private readonly direct = new Map<number, Set<number>>();
  private readonly subgroups = new Map<number, number[]>();
  private readonly inactive: Set<number>;
  private readonly expanded = new Map<number, Set<number>>();

  constructor(rows: GroupRows) {
    for (const g of rows.groups) {
      this.byId.set(g.id, { id: g.id, name: g.name, isSystem: !!g.is_system_group, deactivated: !!g.deactivated });
      this.byName.set(g.name, g.id);
      this.direct.set(g.id, new Set());
      this.subgroups.set(g.id, []);
    }
    for (const m of rows.members) this.direct.get(m.group_id)?.add(m.user_id);
    for (const s of rows.subgroups) this.subgroups.get(s.group_id)?.push(s.subgroup_id);
    this.inactive = new Set(rows.inactiveUserIds);
  }

  systemGroupId(name: string): number {
    const id = this.byName.get(name);
    if (id === undefined) throw new Error(`system group ${name} missing`);
    return id;
  }

  isActiveUser(userId: number): boolean {
    return !this.inactive.has(userId);
  }

  directMembers(groupId: number): number[] {
    return [...(this.direct.get(groupId) ?? [])].filter((u) => !this.inactive.has(u)).sort((a, b) => a - b);
  }

  directSubgroups(groupId: number): number[] {
    return [...(this.subgroups.get(groupId) ?? [])].sort((a, b) => a - b);
  }

  /** Every subgroup reachable from groupId, itself included; cycles are impossible but tolerated. */
  descendants(groupId: number): Set<number> {
    const seen = new Set<number>();
    const stack = [groupId];
    while (stack.length) {
      const g = stack.pop()!;
      if (seen.has(g)) continue;
      seen.add(g);
      for (const s of this.subgroups.get(g) ?? []) stack.push(s);
    }
    return seen;
  }

  /** Active members of the group, directly or through nested subgroups. */
  members(groupId: number): Set<number> {
    const cached = this.expanded.get(groupId);
    if (cached) return cached;
    const out = new Set<number>();
    for (const g of this.descendants(groupId)) {
      for (const u of this.direct.get(g) ?? []) if (!this.inactive.has(u)) out.add(u);
    }
    this.expanded.set(groupId, out);
    return out;
  }

  isMember(groupId: number, userId: number, directOnly = false): boolean {
    if (this.inactive.has(userId)) return false;
    if (directOnly) return this.direct.get(groupId)?.has(userId) ?? false;
    return this.members(groupId).has(userId);
  }

  /** Users a group-setting value grants, recursively. Deactivated groups grant nothing. */
  settingMembers(value: GroupSettingValue): Set<number> {
    if (typeof value === 'number') {
      if (this.byId.get(value)?.deactivated) return new Set();
      return this.members(value);
    }
    const out = new Set<number>(value.direct_members.filter((u) => !this.inactive.has(u)));
    for (const g of value.direct_subgroups) {
      if (this.byId.get(g)?.deactivated) continue;
      for (const u of this.members(g)) out.add(u);
    }
    return out;
  }

  /** Deactivated groups grant nothing. */
  isUserInSetting(value: GroupSettingValue, userId: number): boolean {
    if (this.inactive.has(userId)) return false;
    if (typeof value === 'number') return !this.byId.get(value)?.deactivated && this.members(value).has(userId);
    if (value.direct_members.includes(userId)) return true;
    return value.direct_subgroups.some((g) => !this.byId.get(g)?.deactivated && this.members(g).has(userId));
  }

  /** Whether a setting names exactly one system group (e.g. to test `role:everyone`). */
  isSystemGroupValue(value: GroupSettingValue, name: string): boolean {
    const id = this.byName.get(name);
    if (typeof value === 'number') return value === id;
    return value.direct_members.length === 0 && value.direct_subgroups.length === 1 && value.direct_subgroups[0] === id;
  }
}

// One GroupMembership per cached read of the rows: built once, not on every register.
const memberships = new WeakMap<GroupRows, GroupMembership>();

export async function loadGroupMembership(db: Tx, realmId: number): Promise<GroupMembership> {
  const rows = await fetchGroupRows(db, realmId);
  let membership = memberships.get(rows);
  if (!membership) memberships.set(rows, (membership = new GroupMembership(rows)));
  return membership;
}

/**
 * A GroupMembership holding only the groups that contain `user`: it answers
 * isUserInSetting / userHasGroupPermission for that one user exactly as the realm-wide one
 * would, with one query whatever the realm's size. For per-request permission checks.
 */
export async function loadUserGroupMembership(db: Tx, user: { id: number; is_active: number }): Promise<GroupMembership> {
  return new GroupMembership(await fetchGroupRowsForUserCached(db, user));
}

/** The one entry point for permission checks against a group-setting value. */
export async function isUserInGroupSetting(db: Tx, realmId: number, value: GroupSettingValue, userId: number): Promise<boolean> {
  return (await loadGroupMembership(db, realmId)).isUserInSetting(value, userId);
}

/** Zulip's API shape of a stored value: an anonymous group with one subgroup and no members is that group's ID. */
export function normalizeGroupSettingValue(value: GroupSettingValue): GroupSettingValue {
  if (typeof value === 'number') return value;
  const members = [...new Set(value.direct_members)].sort((a, b) => a - b);
  const subgroups = [...new Set(value.direct_subgroups)].sort((a, b) => a - b);
  if (members.length === 0 && subgroups.length === 1) return subgroups[0]!;
  return { direct_members: members, direct_subgroups: subgroups };
}

/**
 * How a permission setting may be configured, as in Zulip's GroupPermissionSetting:
 * which system groups it may name and what it defaults to.
 */
export interface GroupPermissionConfig {
  requireSystemGroup: boolean;
  allowInternetGroup: boolean;
  allowNobodyGroup: boolean;
  allowEveryoneGroup: boolean;
  /** Extra system groups this setting may never be set to (e.g. role:owners for can_mention_group). */
  forbiddenSystemGroups?: readonly string[];
  /** Default for a new user group: a system group name, or 'group_creator' for the creator alone. */
  defaultGroupName: string;
}

export const USER_GROUP_PERMISSION_CONFIG: Record<string, GroupPermissionConfig> = {
  can_add_members_group: { requireSystemGroup: false, allowInternetGroup: false, allowNobodyGroup: true, allowEveryoneGroup: false, defaultGroupName: 'group_creator' },
  can_join_group: { requireSystemGroup: false, allowInternetGroup: false, allowNobodyGroup: true, allowEveryoneGroup: false, defaultGroupName: 'role:nobody' },
  can_leave_group: { requireSystemGroup: false, allowInternetGroup: false, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: 'role:everyone' },
  can_manage_group: { requireSystemGroup: false, allowInternetGroup: false, allowNobodyGroup: true, allowEveryoneGroup: false, defaultGroupName: 'group_creator' },
  // The spec forbids role:owners here too.
  can_mention_group: { requireSystemGroup: false, allowInternetGroup: false, allowNobodyGroup: true, allowEveryoneGroup: true, forbiddenSystemGroups: ['role:owners'], defaultGroupName: 'role:everyone' },
  can_remove_members_group: { requireSystemGroup: false, allowInternetGroup: false, allowNobodyGroup: true, allowEveryoneGroup: false, defaultGroupName: 'role:nobody' },
};

export const USER_GROUP_PERMISSION_SETTINGS = Object.keys(USER_GROUP_PERMISSION_CONFIG);

/** `{new, old?}`: how every group-valued setting is changed. */
export const groupSettingUpdateSchema = z
  .object({ new: groupSettingValueSchema, old: groupSettingValueSchema.optional() })
  .strict();
export type GroupSettingUpdate = z.infer<typeof groupSettingUpdateSchema>;

export function groupSettingValuesEqual(a: GroupSettingValue, b: GroupSettingValue): boolean {
  const na = normalizeGroupSettingValue(a);
  const nb = normalizeGroupSettingValue(b);
  if (typeof na === 'number' || typeof nb === 'number') return na === nb;
  const same = (x: number[], y: number[]) => x.length === y.length && x.every((v, i) => v === y[i]);
  return same(na.direct_members, nb.direct_members) && same(na.direct_subgroups, nb.direct_subgroups);
}

/**
 * Refuses a change whose `old` does not match the current value (a client acting on stale
 * state); returns whether `new` actually differs from the current value.
 */
export function checkGroupSettingChange(current: GroupSettingValue, update: GroupSettingUpdate): boolean {
  if (update.old !== undefined && !groupSettingValuesEqual(update.old, current)) {
    throw badRequest("'old' value does not match the expected value.");
  }
  return !groupSettingValuesEqual(current, update.new);
}

/**
 * Validates a proposed value for `settingName`: every named group exists in the realm and is
 * active, every direct member is an active user of the realm, and system-group restrictions
 * hold. Returns the value in its normalized API form.
 */
export function checkGroupSettingValue(
  m: GroupMembership,
  value: GroupSettingValue,
  settingName: string,
  config: GroupPermissionConfig,
  activeUserIds: ReadonlySet<number>,
): GroupSettingValue {
  const normalized = normalizeGroupSettingValue(value);
  if (typeof normalized === 'number') {
    const group = m.byId.get(normalized);
    if (!group) throw badRequest('Invalid user group');
    if (group.deactivated) throw badRequest('User group is deactivated.');
    checkSystemGroupAllowed(group.name, group.isSystem, settingName, config);
    return normalized;
  }
  if (config.requireSystemGroup) {
    throw new JsonableError(`'${settingName}' must be a system user group.`, 'SYSTEM_GROUP_REQUIRED', 400, { setting_name: settingName });
  }
  for (const u of normalized.direct_members) {
    if (!activeUserIds.has(u)) throw badRequest(`Invalid user ID: ${u}`);
  }
  for (const g of normalized.direct_subgroups) {
    const group = m.byId.get(g);
    if (!group) throw badRequest(`Invalid user group ID: ${g}`);
    if (group.deactivated) throw badRequest('User group is deactivated.');
  }
  return normalized;
}

function checkSystemGroupAllowed(name: string, isSystem: boolean, settingName: string, config: GroupPermissionConfig): void {
  if (config.requireSystemGroup && !isSystem) {
    throw new JsonableError(`'${settingName}' must be a system user group.`, 'SYSTEM_GROUP_REQUIRED', 400, { setting_name: settingName });
  }
  const refuse = (group: string) => badRequest(`'${settingName}' setting cannot be set to '${group}' group.`);
  if (!config.allowInternetGroup && name === 'role:internet') throw refuse(name);
  if (!config.allowNobodyGroup && name === 'role:nobody') throw refuse(name);
  if (!config.allowEveryoneGroup && name === 'role:everyone') throw refuse(name);
  if (config.forbiddenSystemGroups?.includes(name)) throw refuse(name);
}

/**
 * Whether a user holds a permission setting. Settings that may not be `role:everyone` never
 * grant anything to guests, as in Zulip's user_has_permission_for_group_setting.
 */
export function userHasGroupPermission(
  m: GroupMembership,
  value: GroupSettingValue,
  user: { id: number; role: number },
  config: Pick<GroupPermissionConfig, 'allowEveryoneGroup'>,
): boolean {
  if (!config.allowEveryoneGroup && user.role === 600) return false;
  return m.isUserInSetting(value, user.id);
}
