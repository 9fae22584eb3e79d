import { ROLE_ADMINISTRATOR, ROLE_GUEST, ROLE_MEMBER, ROLE_MODERATOR, ROLE_OWNER } from './roles.js';

/**
 * Zulip's system groups, each containing the next stricter one as its only subgroup, so that
 * "role:members" includes moderators, administrators and owners through nesting. A user is a
 * direct member of the group of their role (members who are full members are also direct
 * members of role:fullmembers).
 */
export interface SystemGroupDef {
  name: string;
  description: string;
  /** The group nested directly inside this one. */
  subgroup: string | null;
  /** The role whose holders are direct members. */
  role: number | null;
}

export const SYSTEM_GROUPS: readonly SystemGroupDef[] = [
  { name: 'role:nobody', description: 'Nobody', subgroup: null, role: null },
  { name: 'role:owners', description: 'Owners of this organization', subgroup: null, role: ROLE_OWNER },
  { name: 'role:administrators', description: 'Administrators of this organization, including owners', subgroup: 'role:owners', role: ROLE_ADMINISTRATOR },
  { name: 'role:moderators', description: 'Moderators of this organization, including administrators', subgroup: 'role:administrators', role: ROLE_MODERATOR },
  { name: 'role:fullmembers', description: 'Members of this organization, not including new accounts and guests', subgroup: 'role:moderators', role: null },
  { name: 'role:members', description: 'Members of this organization, not including guests', subgroup: 'role:fullmembers', role: ROLE_MEMBER },
  { name: 'role:everyone', description: 'Everyone in this organization, including guests', subgroup: 'role:members', role: ROLE_GUEST },
  { name: 'role:internet', description: 'Everyone on the Internet', subgroup: 'role:everyone', role: null },
];

export const SYSTEM_GROUP_FOR_ROLE: Record<number, string> = {
  [ROLE_OWNER]: 'role:owners',
  [ROLE_ADMINISTRATOR]: 'role:administrators',
  [ROLE_MODERATOR]: 'role:moderators',
  [ROLE_MEMBER]: 'role:members',
  [ROLE_GUEST]: 'role:everyone',
};
