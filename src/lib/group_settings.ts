import { z } from 'zod';
import type { Tx } from '../db/index.js';
import { fetchGroupRows, type GroupRows } from '../db/repos/user_groups.js';

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

export async function loadGroupMembership(db: Tx, realmId: number): Promise<GroupMembership> {
  return new GroupMembership(await fetchGroupRows(db, realmId));
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
