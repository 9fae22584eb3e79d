import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../services.js';
import type { Realm, User } from '../../db/tables.js';
import { adminRequired, badRequest, ownerRequired } from '../../errors.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { profileDataParam, userIdPathParam, userRefParam, type UserRef } from './params.js';
import { registerProfileFieldRoutes } from './profile_fields.js';
import { registerBotRoutes } from './bots.js';
import {
  checkCreateUser,
  checkDeactivateOwnUser,
  checkEmailAvailable,
  checkFullName,
  checkProfileDataChange,
  checkReactivateUser,
  checkRoleChange,
  doCreateUser,
  doDeactivateUser,
  doReactivateUser,
  doRegenerateApiKey,
  doUpdateProfileData,
  doUpdateUser,
  isLastOwner,
  isValidEmailAddress,
  type UserUpdate,
} from '../../actions/users.js';
import { accessUserByEmail, accessUserById, type AccessUserOptions } from '../../lib/access/users.js';
import { getUserForApi, getUsersForApi } from '../../lib/users.js';
import { fetchMaxMessageIdForUser } from '../../db/repos/users.js';
import { ROLES, ROLE_ADMINISTRATOR, ROLE_GUEST, ROLE_MEMBER, ROLE_OWNER, isAdmin } from '../../lib/roles.js';

const requireAdmin = (user: User): void => {
  if (!isAdmin(user)) throw adminRequired();
};

const roleParam = p.int(z.number().int().refine((r) => (ROLES as readonly number[]).includes(r), { message: 'Invalid role' }));

/**
 * The role a PATCH asks for: `role`, or the pre-feature-level-8 `is_admin` / `is_guest`
 * booleans, which could ask for the impossible guest administrator.
 */
function requestedRole(target: User, params: { role?: number; is_admin?: boolean; is_guest?: boolean }): number | undefined {
  if (params.role !== undefined) return params.role;
  const { is_admin: admin, is_guest: guest } = params;
  if (admin && guest) throw badRequest('Guests cannot be organization administrators');
  if (admin === true) return target.role === ROLE_OWNER ? ROLE_OWNER : ROLE_ADMINISTRATOR;
  if (guest === true) return ROLE_GUEST;
  if (admin === false && isAdmin(target)) return ROLE_MEMBER;
  if (guest === false && target.role === ROLE_GUEST) return ROLE_MEMBER;
  return undefined;
}

export function registerUserRoutes(app: FastifyInstance, services: Services): void {
  const db = () => services.db.kysely;
  const accessRef = (realm: Realm, caller: User, ref: UserRef, opts: AccessUserOptions) =>
    'id' in ref ? accessUserById(db(), realm, caller, ref.id, opts) : accessUserByEmail(db(), services.config, realm, caller, ref.email, opts);

  endpoint(app, services, {
    method: 'GET',
    path: '/users',
    params: {
      client_gravatar: p.bool().default(true).alias('client_extavatar'),
      include_custom_profile_fields: p.bool().default(false),
      user_ids: p.intList().optional(),
    },
    handler: async ({ realm, user, params }) => {
      const users = await getUsersForApi(db(), services.config, realm, user, {
        clientGravatar: params.client_gravatar,
        includeCustomProfileFields: params.include_custom_profile_fields,
        userIds: params.user_ids,
      });
      return { members: users.map((u) => u.dict) };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/users',
    authorize: requireAdmin,
    params: { email: p.str(), password: p.str(), full_name: p.str() },
    handler: async ({ realm, user, params }) => {
      const input = await checkCreateUser(services, realm, user, { email: params.email, password: params.password, fullName: params.full_name });
      const created = await doCreateUser(services, realm, { ...input, actingUser: user });
      return { user_id: created.id };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/users/me',
    params: {},
    handler: async ({ realm, user }) => {
      const dict = await getUserForApi(db(), services.config, realm, user, user, { clientGravatar: false, includeCustomProfileFields: !user.is_bot });
      // /users/me documents no bot_type for humans.
      if (!user.is_bot) delete dict.bot_type;
      return { ...dict, max_message_id: await fetchMaxMessageIdForUser(db(), user.id) };
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/users/me',
    params: {},
    handler: async ({ realm, user }) => {
      await checkDeactivateOwnUser(db(), realm, user);
      await doDeactivateUser(services, realm, user, user);
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/users/me/api_key/regenerate',
    params: {},
    handler: async ({ realm, user }) => ({ api_key: await doRegenerateApiKey(services, realm, user) }),
  });

  const humansOnly = (user: User): void => {
    if (user.is_bot) throw badRequest('This endpoint does not accept bot requests.');
  };

  endpoint(app, services, {
    method: 'PATCH',
    path: '/users/me/profile_data',
    authorize: humansOnly,
    params: { data: profileDataParam },
    handler: async ({ realm, user, params }) => {
      const change = await checkProfileDataChange(db(), realm, user, params.data);
      await doUpdateProfileData(services, realm, user, change);
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/users/me/profile_data',
    authorize: humansOnly,
    params: { data: p.intList() },
    handler: async ({ realm, user, params }) => {
      const change = await checkProfileDataChange(db(), realm, user, params.data.map((id) => ({ id, value: null })));
      await doUpdateProfileData(services, realm, user, change);
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/users/:user_id',
    params: {
      user_id: userRefParam,
      client_gravatar: p.bool().default(true).alias('client_extavatar'),
      include_custom_profile_fields: p.bool().default(false),
    },
    handler: async ({ realm, user, params }) => {
      const target = await accessRef(realm, user, params.user_id, { allowDeactivated: true, allowBots: true, forAdmin: false });
      const dict = await getUserForApi(db(), services.config, realm, user, target, {
        clientGravatar: params.client_gravatar,
        includeCustomProfileFields: params.include_custom_profile_fields,
      });
      return { user: dict };
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/users/:user_id',
    params: {
      user_id: userRefParam,
      full_name: p.str().optional(),
      role: roleParam.optional(),
      profile_data: profileDataParam.optional(),
      new_email: p.str().optional(),
      is_admin: p.bool().optional(),
      is_guest: p.bool().optional(),
    },
    handler: async ({ realm, user, params }) => {
      const target = await accessRef(realm, user, params.user_id, { allowDeactivated: true, allowBots: true, forAdmin: true });
      const update: UserUpdate = {};
      const role = requestedRole(target, params);
      if (role !== undefined && role !== target.role) {
        await checkRoleChange(db(), realm, user, target, role);
        update.role = role;
      }
      // As in Zulip, a blank name is ignored rather than refused: the request is an administrator's.
      if (params.full_name !== undefined && params.full_name !== target.full_name && params.full_name.trim() !== '') {
        update.fullName = await checkFullName(db(), realm, params.full_name, target.id);
      }
      if (params.profile_data !== undefined) update.profileData = await checkProfileDataChange(db(), realm, user, params.profile_data);
      if (params.new_email !== undefined) {
        if (user.role !== ROLE_OWNER) throw ownerRequired();
        if (!user.can_change_user_emails) throw badRequest('User not authorized to change user emails');
        const email = params.new_email.trim();
        if (!isValidEmailAddress(email)) throw badRequest('Invalid address.');
        if (email.toLowerCase() !== target.delivery_email.toLowerCase()) await checkEmailAvailable(db(), realm, email, target.id);
        update.newEmail = email;
      }
      await doUpdateUser(services, realm, target, update, user);
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/users/:user_id',
    params: { user_id: userIdPathParam },
    handler: async ({ realm, user, params }) => {
      const target = await accessUserById(db(), realm, user, params.user_id, { allowBots: false, forAdmin: true });
      if (target.role === ROLE_OWNER && user.role !== ROLE_OWNER) throw ownerRequired();
      if (await isLastOwner(db(), realm, target)) throw badRequest('Cannot deactivate the only organization owner');
      await doDeactivateUser(services, realm, target, user);
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/users/:user_id/reactivate',
    params: { user_id: userIdPathParam },
    handler: async ({ realm, user, params }) => {
      const target = await accessUserById(db(), realm, user, params.user_id, { allowDeactivated: true, allowBots: true, forAdmin: true });
      await checkReactivateUser(db(), realm, user, target);
      await doReactivateUser(services, realm, target, user);
    },
  });

  registerProfileFieldRoutes(app, services);
  registerBotRoutes(app, services);
}
