import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import type { Realm, User } from '../../db/tables.js';
import { badRequest } from '../../errors.js';
import { isAdmin } from '../../lib/roles.js';
import { realmSettings } from '../../lib/realm_settings.js';
import { USER_SETTING_NAMES } from '../../lib/user_settings.js';
import { verifyPassword } from '../../lib/secrets.js';
import { checkFullName, doChangeFullName, doChangePassword, isStrongEnoughPassword } from '../../actions/users.js';
import { doChangeUserSettings, isValidTimezone } from '../../actions/user_settings.js';
import { checkEmailChange, doStartEmailChange } from '../../actions/email_change.js';
import { createMailer, type Mailer } from '../../lib/email.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { checkUserSettingValues, userSettingParams } from './user_params.js';

/** Zulip's human_users_only. */
function requireHuman(user: User): void {
  if (user.is_bot) throw badRequest('This endpoint does not accept bot requests.');
}

const settingsParams = {
  ...userSettingParams(USER_SETTING_NAMES),
  full_name: p.str().optional(),
  email: p.str().optional(),
  old_password: p.str().optional(),
  new_password: p.str().optional(),
  timezone: p.str().optional(),
};

type SettingsParams = Record<string, unknown> & {
  full_name?: string;
  email?: string;
  old_password?: string;
  new_password?: string;
  timezone?: string;
};

async function changeSettings(services: Services, mailer: Mailer, realm: Realm, user: User, params: SettingsParams): Promise<Record<string, unknown>> {
  const db = services.db.kysely;
  // Zulip checks the new address first; the change itself waits for its confirmation link.
  const newEmail = params.email !== undefined && params.email.trim() !== user.delivery_email ? await checkEmailChange(services, realm, user, params.email) : undefined;
  const settings = checkUserSettingValues(params, USER_SETTING_NAMES);
  if (params.timezone !== undefined && !isValidTimezone(params.timezone)) {
    throw badRequest('timezone is not a recognized time zone');
  }
  let fullName: string | undefined;
  // As in Zulip, a name change refused by the organization is silently skipped.
  if (params.full_name !== undefined && params.full_name !== user.full_name && (!realmSettings(realm).name_changes_disabled || isAdmin(user))) {
    fullName = await checkFullName(db, realm, params.full_name, user.id);
  }
  if (params.new_password !== undefined) {
    if (!(await verifyPassword(params.old_password ?? '', user.password_hash))) throw badRequest('Wrong password!');
    if (!isStrongEnoughPassword(services.config, params.new_password)) throw badRequest('New password is too weak!');
    await doChangePassword(services, realm, user, params.new_password);
  }
  if (fullName !== undefined) await doChangeFullName(services, realm, user, fullName, user);
  await doChangeUserSettings(services, realm, user, { settings, timezone: params.timezone }, user);
  if (newEmail === undefined) return {};
  await doStartEmailChange(services, mailer, realm, user, newEmail);
  return { account_email: 'Check your email for a confirmation link. ' };
}

export function registerUserSettingsRoutes(app: FastifyInstance, services: Services): void {
  const mailer = createMailer(services.config, services.log);
  app.addHook('onClose', async () => mailer.close());
  // The /settings/display and /settings/notifications forms predate feature level 80 and
  // take the same parameters.
  for (const path of ['/settings', '/settings/display', '/settings/notifications']) {
    endpoint(app, services, {
      method: 'PATCH',
      path,
      authorize: requireHuman,
      params: settingsParams,
      handler: async ({ realm, user, params }) => changeSettings(services, mailer, realm, user, params as SettingsParams),
    });
  }
}

