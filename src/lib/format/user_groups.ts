import type { UserGroup } from '../../db/tables.js';
import { normalizeGroupSettingValue, USER_GROUP_PERMISSION_SETTINGS, type GroupMembership, type GroupSettingValue } from '../group_settings.js';

export function groupPermissions(group: Pick<UserGroup, 'permissions'>): Record<string, GroupSettingValue> {
  return JSON.parse(group.permissions) as Record<string, GroupSettingValue>;
}

/** A group-setting value as the API shows it: anonymous groups list only active members. */
export function formatGroupSettingValue(m: GroupMembership, value: GroupSettingValue): GroupSettingValue {
  if (typeof value === 'number') return value;
  const active = value.direct_members.filter((u) => m.isActiveUser(u));
  return normalizeGroupSettingValue({ direct_members: active, direct_subgroups: value.direct_subgroups });
}

/** The UserGroup object of GET /user_groups, register's realm_user_groups and user_group add events. */
export function formatUserGroup(group: UserGroup, m: GroupMembership): Record<string, unknown> {
  const perms = groupPermissions(group);
  const out: Record<string, unknown> = {
    id: group.id,
    name: group.name,
    description: group.description,
    creator_id: group.creator_id,
    date_created: group.date_created,
    members: m.directMembers(group.id),
    direct_subgroup_ids: m.directSubgroups(group.id),
    is_system_group: !!group.is_system_group,
    deactivated: !!group.deactivated,
  };
  for (const s of USER_GROUP_PERMISSION_SETTINGS) out[s] = formatGroupSettingValue(m, perms[s]!);
  return out;
}
