import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { badRequest, insufficientPermission } from '../../errors.js';
import { endpoint } from '../endpoint.js';
import { p, type Param } from '../params.js';
import { fetchRealmUserGroups } from '../../db/repos/user_groups.js';
import { fetchUserById, fetchActiveUserIds } from '../../db/repos/users.js';
import {
  USER_GROUP_PERMISSION_SETTINGS,
  groupSettingUpdateSchema,
  groupSettingValueSchema,
  loadGroupMembership,
  userHasGroupPermission,
  type GroupSettingUpdate,
  type GroupSettingValue,
} from '../../lib/group_settings.js';
import { formatUserGroup } from '../../lib/format/user_groups.js';
import {
  accessUserGroupForRead,
  accessUserGroupForSelfOrOthers,
  accessUserGroupForUpdate,
  checkNotGuest,
} from '../../lib/access/user_groups.js';
import { realmSettings } from '../../lib/realm_settings.js';
import {
  checkActiveUserIds,
  checkCreateUserGroup,
  checkDeactivateUserGroup,
  checkSubgroupsToAdd,
  checkUpdateUserGroup,
  doChangeGroupMembership,
  doCreateUserGroup,
  doDeactivateUserGroup,
  doUpdateUserGroup,
} from '../../actions/user_groups.js';

const settingParams = <T>(make: () => Param<T>): Record<string, Param<T | undefined>> =>
  Object.fromEntries(USER_GROUP_PERMISSION_SETTINGS.map((s) => [s, make().optional()]));

function pickSettings<T>(params: Record<string, unknown>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const s of USER_GROUP_PERMISSION_SETTINGS) if (params[s] !== undefined) out[s] = params[s] as T;
  return out;
}

export function registerGroupRoutes(app: FastifyInstance, services: Services): void {
  const db = services.db.kysely;

  endpoint(app, services, {
    method: 'GET',
    path: '/user_groups',
    authorize: checkNotGuest,
    params: { include_deactivated_groups: p.bool().default(false) },
    handler: async ({ realm, user, params }) => {
      const [groups, m] = await Promise.all([fetchRealmUserGroups(db, realm.id), loadGroupMembership(db, realm.id)]);
      return {
        user_groups: groups.filter((g) => params.include_deactivated_groups || !g.deactivated).map((g) => formatUserGroup(g, m)),
      };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/user_groups/create',
    authorize: checkNotGuest,
    params: {
      name: p.str(),
      description: p.str(),
      members: p.intList(),
      subgroups: p.intList().default([]),
      ...settingParams(() => p.json(groupSettingValueSchema)),
    },
    handler: async ({ realm, user, params }) => {
      const m = await loadGroupMembership(db, realm.id);
      if (!userHasGroupPermission(m, realmSettings(realm).can_create_groups, user, { allowEveryoneGroup: false })) {
        throw insufficientPermission();
      }
      const input = await checkCreateUserGroup(services, realm, {
        name: params.name,
        description: params.description,
        members: [...new Set(params.members)],
        subgroups: [...new Set(params.subgroups)],
        settings: pickSettings<GroupSettingValue>(params),
      });
      return { group_id: await doCreateUserGroup(services, realm, user, input) };
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/user_groups/:user_group_id',
    authorize: checkNotGuest,
    params: {
      user_group_id: p.int(),
      name: p.str().optional(),
      description: p.str().optional(),
      deactivated: p.bool().optional(),
      ...settingParams(() => p.json(groupSettingUpdateSchema)),
    },
    handler: async ({ realm, user, params }) => {
      const settings = pickSettings<GroupSettingUpdate>(params);
      if (params.name === undefined && params.description === undefined && params.deactivated === undefined && !Object.keys(settings).length) {
        throw badRequest('No new data supplied');
      }
      const { group, membership } = await accessUserGroupForUpdate(db, realm, user, params.user_group_id, 'can_manage_group', {
        allowDeactivated: true,
      });
      const changes = await checkUpdateUserGroup(services, realm, group, membership, {
        name: params.name,
        description: params.description,
        deactivated: params.deactivated,
        settings,
      });
      await doUpdateUserGroup(services, realm, user, group, changes);
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/user_groups/:user_group_id/deactivate',
    authorize: checkNotGuest,
    params: { user_group_id: p.int() },
    handler: async ({ realm, user, params }) => {
      const { group, membership } = await accessUserGroupForUpdate(db, realm, user, params.user_group_id, 'can_manage_group');
      await checkDeactivateUserGroup(services, realm, group, membership);
      await doDeactivateUserGroup(services, realm, user, group);
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/user_groups/:user_group_id/members',
    authorize: checkNotGuest,
    params: {
      user_group_id: p.int(),
      add: p.intList().default([]),
      delete: p.intList().default([]),
      add_subgroups: p.intList().default([]),
      delete_subgroups: p.intList().default([]),
    },
    handler: async ({ realm, user, params }) => {
      const add = [...new Set(params.add)];
      const remove = [...new Set(params.delete)];
      if (!add.length && !remove.length && !params.add_subgroups.length && !params.delete_subgroups.length) {
        throw badRequest('Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".');
      }
      const active = new Set(await fetchActiveUserIds(db, realm.id));
      // Check every part before changing anything, so a refused request changes nothing.
      if (add.length) {
        checkActiveUserIds(active, add);
        const { group, membership } = await accessUserGroupForSelfOrOthers(db, realm, user, params.user_group_id, add, 'can_join_group', 'can_add_members_group');
        const direct = new Set(membership.directMembers(group.id));
        for (const id of add) if (direct.has(id)) throw badRequest(`User ${id} is already a member of this group`);
      }
      if (remove.length) {
        checkActiveUserIds(active, remove);
        const { group, membership } = await accessUserGroupForSelfOrOthers(db, realm, user, params.user_group_id, remove, 'can_leave_group', 'can_remove_members_group');
        const direct = new Set(membership.directMembers(group.id));
        for (const id of remove) if (!direct.has(id)) throw badRequest(`There is no member '${id}' in this user group`);
      }
      const subgroupChange = params.add_subgroups.length || params.delete_subgroups.length;
      if (subgroupChange) await checkSubgroupChange(params.user_group_id, params.add_subgroups, params.delete_subgroups, realm, user);
      const group = await accessUserGroupForRead(db, realm, params.user_group_id, true);
      if (add.length) await doChangeGroupMembership(services, realm, user, group, { op: 'add_members', userIds: add });
      if (remove.length) await doChangeGroupMembership(services, realm, user, group, { op: 'remove_members', userIds: remove });
      if (params.add_subgroups.length) await doChangeGroupMembership(services, realm, user, group, { op: 'add_subgroups', groupIds: [...new Set(params.add_subgroups)] });
      if (params.delete_subgroups.length) await doChangeGroupMembership(services, realm, user, group, { op: 'remove_subgroups', groupIds: [...new Set(params.delete_subgroups)] });
    },
  });

  async function checkSubgroupChange(groupId: number, add: number[], remove: number[], realm: Parameters<typeof accessUserGroupForRead>[1], user: Parameters<typeof accessUserGroupForUpdate>[2]): Promise<void> {
    const { group, membership } = await accessUserGroupForUpdate(db, realm, user, groupId, 'can_manage_group', { allowDeactivated: true });
    checkSubgroupsToAdd(membership, group.id, [...new Set(add)]);
    const direct = new Set(membership.directSubgroups(group.id));
    for (const id of new Set(remove)) {
      if (!membership.byId.has(id)) throw badRequest(`Invalid user group ID: ${id}`);
      if (!direct.has(id)) throw badRequest(`User group ${id} is not a subgroup of this group.`);
    }
  }

  endpoint(app, services, {
    method: 'POST',
    path: '/user_groups/:user_group_id/subgroups',
    authorize: checkNotGuest,
    params: { user_group_id: p.int(), add: p.intList().default([]), delete: p.intList().default([]) },
    handler: async ({ realm, user, params }) => {
      if (!params.add.length && !params.delete.length) throw badRequest('Nothing to do. Specify at least one of "add" or "delete".');
      await checkSubgroupChange(params.user_group_id, params.add, params.delete, realm, user);
      const group = await accessUserGroupForRead(db, realm, params.user_group_id, true);
      if (params.add.length) await doChangeGroupMembership(services, realm, user, group, { op: 'add_subgroups', groupIds: [...new Set(params.add)] });
      if (params.delete.length) await doChangeGroupMembership(services, realm, user, group, { op: 'remove_subgroups', groupIds: [...new Set(params.delete)] });
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/user_groups/:user_group_id/members',
    authorize: checkNotGuest,
    params: { user_group_id: p.int(), direct_member_only: p.bool().default(false) },
    handler: async ({ realm, user, params }) => {
      const group = await accessUserGroupForRead(db, realm, params.user_group_id);
      const m = await loadGroupMembership(db, realm.id);
      const members = params.direct_member_only ? m.directMembers(group.id) : [...m.members(group.id)].sort((a, b) => a - b);
      return { members };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/user_groups/:user_group_id/subgroups',
    authorize: checkNotGuest,
    params: { user_group_id: p.int(), direct_subgroup_only: p.bool().default(false) },
    handler: async ({ realm, user, params }) => {
      const group = await accessUserGroupForRead(db, realm, params.user_group_id);
      const m = await loadGroupMembership(db, realm.id);
      const subgroups = params.direct_subgroup_only
        ? m.directSubgroups(group.id)
        : [...m.descendants(group.id)].filter((id) => id !== group.id).sort((a, b) => a - b);
      return { subgroups };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/user_groups/:user_group_id/members/:user_id',
    authorize: checkNotGuest,
    params: { user_group_id: p.int(), user_id: p.int(), direct_member_only: p.bool().default(false) },
    handler: async ({ realm, user, params }) => {
      const group = await accessUserGroupForRead(db, realm, params.user_group_id);
      const target = await fetchUserById(db, realm.id, params.user_id);
      if (!target) throw badRequest('No such user');
      const m = await loadGroupMembership(db, realm.id);
      return { is_user_group_member: m.isMember(group.id, target.id, params.direct_member_only) };
    },
  });
}
