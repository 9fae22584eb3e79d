import { loadConfig } from '../config.js';
import type { Realm, User } from '../db/tables.js';
import { fetchRealmByStringId } from '../db/repos/realms.js';
import { fetchUserByEmail } from '../db/repos/users.js';
import type { ActionServices } from '../services.js';
import { ROLE_NAMES } from '../lib/roles.js';
import type { SpecialPermission } from '../actions/users.js';
import { CliError } from './errors.js';
import { openCliContext } from './context.js';

/** The actions, loaded by the commands that change something (api-key needs none of them). */
const userActions = () => import('../actions/users.js');

/**
 * Runs `fn` against the same configuration and database as the server (DATABASE_URL,
 * .env, ...), in the lean context of cli/context.ts: no event queues, no background work.
 */
async function withContext<T>(realmId: string, fn: (services: ActionServices, realm: Realm) => Promise<T>): Promise<T> {
  const context = await openCliContext(loadConfig(), (line) => process.stderr.write(`${line}\n`));
  try {
    const realm = await fetchRealmByStringId(context.services.db.kysely, realmId);
    if (!realm) throw new CliError(`No organization with string_id '${realmId}'`);
    return await fn(context.services, realm);
  } finally {
    await context.close();
  }
}

async function userByEmail(services: ActionServices, realm: Realm, email: string): Promise<User> {
  const user = await fetchUserByEmail(services.db.kysely, realm.id, email.trim());
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
  const { checkEmailAvailable, checkFullName, doCreateUser, isValidEmailAddress } = await userActions();
  if (!isValidEmailAddress(email)) throw new CliError(`Invalid email address '${email}'`);
  return withContext(realmId, async (services, realm) => {
    const db = services.db.kysely;
    await checkEmailAvailable(db, realm, email);
    const fullName = await checkFullName(db, realm, opts.fullName);
    const user = await doCreateUser(services, realm, { email, fullName, password: opts.password ?? null, role, isBot: !!opts.bot, actingUser: null });
    return { user_id: user.id, email: user.email, api_key: user.api_key };
  });
}

export async function changePassword(realmId: string, opts: { email: string; password: string }): Promise<unknown> {
  if (opts.password === '') throw new CliError('The password must not be empty');
  const { doChangePassword } = await userActions();
  return withContext(realmId, async (services, realm) => {
    const user = await userByEmail(services, realm, opts.email);
    if (user.is_bot) throw new CliError('Bots cannot have passwords');
    await doChangePassword(services, realm, user, opts.password);
    return { user_id: user.id, email: user.email };
  });
}

export async function apiKey(realmId: string, opts: { email: string }): Promise<unknown> {
  return withContext(realmId, async (services, realm) => {
    const user = await userByEmail(services, realm, opts.email);
    return { user_id: user.id, email: user.email, api_key: user.api_key };
  });
}

export async function grant(realmId: string, opts: { email: string; permission: string; revoke?: boolean }): Promise<unknown> {
  const { SPECIAL_PERMISSIONS, doSetSpecialPermission } = await userActions();
  if (!(SPECIAL_PERMISSIONS as readonly string[]).includes(opts.permission)) {
    throw new CliError(`Unknown permission '${opts.permission}': use ${SPECIAL_PERMISSIONS.join(', ')}`);
  }
  const permission = opts.permission as SpecialPermission;
  return withContext(realmId, async (services, realm) => {
    const user = await userByEmail(services, realm, opts.email);
    await doSetSpecialPermission(services, realm, user, permission, !opts.revoke);
    return { user_id: user.id, email: user.email, permission, value: !opts.revoke };
  });
}

export async function demo(realmId: string, opts: { domain: string; password: string }): Promise<unknown> {
  const { runDemo } = await import('./demo.js');
  return withContext(realmId, (services, realm) => runDemo(services, realm, opts));
}

/** Backup and restore work on the database directly: no migration, bootstrap or event bus first. */
async function backupModule(): Promise<typeof import('../db/backup.js')> {
  return import('../db/backup.js');
}

async function refusing<T>(fn: () => Promise<T>): Promise<T> {
  const { BackupError } = await backupModule();
  try {
    return await fn();
  } catch (e) {
    if (e instanceof BackupError) throw new CliError(e.message);
    throw e;
  }
}

export async function backup(opts: { to: string }): Promise<unknown> {
  const { createBackup } = await backupModule();
  const { statSync } = await import('node:fs');
  return refusing(async () => {
    const manifest = await createBackup(loadConfig().databaseUrl, opts.to);
    const { entries: _entries, ...summary } = manifest;
    return { file: opts.to, bytes: statSync(opts.to).size, ...summary };
  });
}

export async function restore(file: string): Promise<unknown> {
  const { restoreBackup } = await backupModule();
  const { migrate, openDatabase } = await import('../db/index.js');
  const config = loadConfig();
  return refusing(async () => {
    const manifest = await restoreBackup(config.databaseUrl, file);
    // Brings the restored schema up to this version's, as the next server start would.
    const db = openDatabase(config.databaseUrl, { background: false });
    try {
      await migrate(db);
    } finally {
      await db.close();
    }
    return { restored: file, dialect: manifest.dialect, parley_version: manifest.parley_version, created_at: manifest.created_at, tables: manifest.tables, uploads: manifest.uploads };
  });
}
