import { loadConfig } from '../config.js';
import { buildApp, type App } from '../app.js';
import type { Realm, User } from '../db/tables.js';
import { fetchRealmByStringId } from '../db/repos/realms.js';
import { fetchUserByEmail } from '../db/repos/users.js';
import {
  SPECIAL_PERMISSIONS,
  checkEmailAvailable,
  checkFullName,
  doChangePassword,
  doCreateUser,
  doSetSpecialPermission,
  isValidEmailAddress,
  type SpecialPermission,
} from '../actions/users.js';
import { ROLE_NAMES } from '../lib/roles.js';
import { CliError } from './errors.js';
import { runDemo } from './demo.js';

/**
 * Runs `fn` against the same configuration and database as the server (DATABASE_URL,
 * .env, ...), migrating and bootstrapping exactly as a server start would. Server logs are
 * silenced so that stdout carries only the command's JSON.
 */
async function withApp<T>(realmId: string, fn: (app: App, realm: Realm) => Promise<T>): Promise<T> {
  const app = await buildApp(loadConfig({ logLevel: 'silent' }), { announce: (line) => process.stderr.write(`${line}\n`), backgroundWork: false });
  try {
    const realm = await fetchRealmByStringId(app.services.db.kysely, realmId);
    if (!realm) throw new CliError(`No organization with string_id '${realmId}'`);
    return await fn(app, realm);
  } finally {
    await app.close();
  }
}

async function userByEmail(app: App, realm: Realm, email: string): Promise<User> {
  const user = await fetchUserByEmail(app.services.db.kysely, realm.id, email.trim());
  if (!user) throw new CliError(`No user with email '${email}'`);
  return user;
}

export interface CreateUserArgs {
  email: string;
  fullName: string;
  password?: string;
  role: string;
  bot?: boolean;
}

export async function createUser(realmId: string, opts: CreateUserArgs): Promise<unknown> {
  const role = ROLE_NAMES[opts.role];
  if (role === undefined) throw new CliError(`Invalid role '${opts.role}': use owner, admin, moderator, member or guest`);
  if (opts.bot && opts.password !== undefined) throw new CliError('Bots cannot have passwords');
  const email = opts.email.trim();
  if (!isValidEmailAddress(email)) throw new CliError(`Invalid email address '${email}'`);
  return withApp(realmId, async (app, realm) => {
    const db = app.services.db.kysely;
    await checkEmailAvailable(db, realm, email);
    const fullName = await checkFullName(db, realm, opts.fullName);
    const user = await doCreateUser(app.services, realm, { email, fullName, password: opts.password ?? null, role, isBot: !!opts.bot, actingUser: null });
    return { user_id: user.id, email: user.email, api_key: user.api_key };
  });
}

export async function changePassword(realmId: string, opts: { email: string; password: string }): Promise<unknown> {
  if (opts.password === '') throw new CliError('The password must not be empty');
  return withApp(realmId, async (app, realm) => {
    const user = await userByEmail(app, realm, opts.email);
    if (user.is_bot) throw new CliError('Bots cannot have passwords');
    await doChangePassword(app.services, realm, user, opts.password);
    return { user_id: user.id, email: user.email };
  });
}

export async function apiKey(realmId: string, opts: { email: string }): Promise<unknown> {
  return withApp(realmId, async (app, realm) => {
    const user = await userByEmail(app, realm, opts.email);
    return { user_id: user.id, email: user.email, api_key: user.api_key };
  });
}

export async function grant(realmId: string, opts: { email: string; permission: string; revoke?: boolean }): Promise<unknown> {
  if (!(SPECIAL_PERMISSIONS as readonly string[]).includes(opts.permission)) {
    throw new CliError(`Unknown permission '${opts.permission}': use ${SPECIAL_PERMISSIONS.join(', ')}`);
  }
  const permission = opts.permission as SpecialPermission;
  return withApp(realmId, async (app, realm) => {
    const user = await userByEmail(app, realm, opts.email);
    await doSetSpecialPermission(app.services, realm, user, permission, !opts.revoke);
    return { user_id: user.id, email: user.email, permission, value: !opts.revoke };
  });
}

export async function demo(realmId: string, opts: { domain: string; password: string }): Promise<unknown> {
  return withApp(realmId, (app, realm) => runDemo(app.services, realm, opts));
}
