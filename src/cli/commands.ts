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
  return withServices(async (services) => {
    const realm = await fetchRealmByStringId(services.db.kysely, realmId);
    if (!realm) throw new CliError(`No organization with string_id '${realmId}'`);
    return fn(services, realm);
  });
}

/** withContext for the commands about the whole server rather than one organization. */
async function withServices<T>(fn: (services: ActionServices) => Promise<T>): Promise<T> {
  const context = await openCliContext(loadConfig(), (line) => process.stderr.write(`${line}\n`));
  try {
    return await fn(context.services);
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

/**
 * Zulip's register_server: registers this server with the push notification service at
 * PUSH_NOTIFICATION_BOUNCER_URL under its UUID and key (ZULIP_ORG_ID / ZULIP_ORG_KEY, or the
 * ones generated and kept with the server's secrets); prints the server's UUID.
 */
export async function pushRegister(opts: { contactEmail: string }): Promise<unknown> {
  const config = loadConfig();
  if (!config.pushBouncer.url) throw new CliError('Set PUSH_NOTIFICATION_BOUNCER_URL (Zulip\'s is https://push.zulipchat.com) first');
  return withContext('', async (services) => {
    const { BouncerPushSender, serverIdentity } = await import('../lib/push/bouncer.js');
    const sender = new BouncerPushSender(config, services.db, services.log);
    const answer = await sender.registerServer(new URL(config.externalUrl).host, opts.contactEmail);
    return { zulip_org_id: (await serverIdentity(config, services.db)).orgId, created: answer.created ?? null };
  });
}

export async function syncLdap(realmId: string): Promise<unknown> {
  const config = loadConfig();
  const ldap = config.ldap;
  if (!ldap) throw new CliError('No directory is configured: set PARLEY_LDAP_URL and the other PARLEY_LDAP_* settings');
  const { doSyncLdap } = await import('../actions/ldap.js');
  const { LdapUnavailableError } = await import('../lib/ldap.js');
  return withContext(realmId, async (services, realm) => {
    try {
      return await doSyncLdap(services, ldap, realm);
    } catch (e) {
      if (e instanceof LdapUnavailableError) throw new CliError(`The directory cannot be reached (${e.message}); nothing was changed`);
      throw e;
    }
  });
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

/** The fields an administrator needs to recognize an account. */
function userSummary(user: User): Record<string, unknown> {
  return {
    user_id: user.id,
    email: user.email,
    delivery_email: user.delivery_email,
    full_name: user.full_name,
    role: ROLE_LABELS[user.role] ?? String(user.role),
    is_active: !!user.is_active,
    is_bot: !!user.is_bot,
    date_joined: new Date(user.date_joined * 1000).toISOString(),
  };
}

const ROLE_LABELS: Record<number, string> = Object.fromEntries(
  ['owner', 'admin', 'moderator', 'member', 'guest'].map((name) => [ROLE_NAMES[name]!, name]),
);

export async function listUsers(realmId: string, opts: { all?: boolean }): Promise<unknown> {
  const { fetchRealmUsers } = await import('../db/repos/users.js');
  return withContext(realmId, async (services, realm) => {
    const users = await fetchRealmUsers(services.db.kysely, realm.id);
    return users.filter((u) => opts.all || u.is_active).map(userSummary);
  });
}

export async function deactivateUser(realmId: string, opts: { email: string }): Promise<unknown> {
  const { doDeactivateUser, isLastOwner } = await userActions();
  return withContext(realmId, async (services, realm) => {
    const user = await userByEmail(services, realm, opts.email);
    if (!user.is_active) throw new CliError(`User '${user.delivery_email}' is already deactivated`);
    if (await isLastOwner(services.db.kysely, realm, user)) throw new CliError('Cannot deactivate the only organization owner');
    await doDeactivateUser(services, realm, user, null);
    return { user_id: user.id, email: user.email, is_active: false };
  });
}

export async function reactivateUser(realmId: string, opts: { email: string }): Promise<unknown> {
  const { doReactivateUser } = await userActions();
  const { fetchActiveUserNames } = await import('../db/repos/users.js');
  return withContext(realmId, async (services, realm) => {
    const user = await userByEmail(services, realm, opts.email);
    if (user.is_active) throw new CliError(`User '${user.delivery_email}' is already active`);
    if (user.is_bot && (await fetchActiveUserNames(services.db.kysely, realm.id)).includes(user.full_name.trim())) {
      throw new CliError(`There is already an active bot named "${user.full_name}": rename or deactivate it first`);
    }
    await doReactivateUser(services, realm, user, null);
    return { user_id: user.id, email: user.email, is_active: true };
  });
}

export async function disableTwoFactor(realmId: string, opts: { email: string }): Promise<unknown> {
  const { doResetTwoFactor } = await import('../actions/two_factor.js');
  return withContext(realmId, async (services, realm) => {
    const user = await userByEmail(services, realm, opts.email);
    if (!(await doResetTwoFactor(services, realm, user))) throw new CliError(`User '${user.delivery_email}' does not use two-factor authentication`);
    return { user_id: user.id, email: user.email, two_factor: false };
  });
}

export async function setRole(realmId: string, opts: { email: string; role: string }): Promise<unknown> {
  const role = ROLE_NAMES[opts.role];
  if (role === undefined) throw new CliError(`Invalid role '${opts.role}': use owner, admin, moderator, member or guest`);
  const { doChangeUserRole, isLastOwner } = await userActions();
  return withContext(realmId, async (services, realm) => {
    const user = await userByEmail(services, realm, opts.email);
    if (user.role !== role && (await isLastOwner(services.db.kysely, realm, user))) {
      throw new CliError('The owner permission cannot be removed from the only organization owner');
    }
    await doChangeUserRole(services, realm, user, role, null);
    return { user_id: user.id, email: user.email, role: ROLE_LABELS[role] };
  });
}

export async function changeEmail(realmId: string, opts: { email: string; newEmail: string }): Promise<unknown> {
  const { checkEmailAvailable, doChangeUserDeliveryEmail, isValidEmailAddress } = await userActions();
  const newEmail = opts.newEmail.trim();
  if (!isValidEmailAddress(newEmail)) throw new CliError(`Invalid email address '${newEmail}'`);
  return withContext(realmId, async (services, realm) => {
    const user = await userByEmail(services, realm, opts.email);
    if (user.is_bot) throw new CliError('Bots have no email address of their own to change');
    await checkEmailAvailable(services.db.kysely, realm, newEmail, user.id);
    await doChangeUserDeliveryEmail(services, realm, user, newEmail, null);
    const { fetchUserById } = await import('../db/repos/users.js');
    const changed = (await fetchUserById(services.db.kysely, realm.id, user.id))!;
    return { user_id: changed.id, email: changed.email, delivery_email: changed.delivery_email };
  });
}

export interface CreateOrganizationArgs {
  subdomain: string;
  name: string;
  ownerEmail: string;
  ownerName: string;
  ownerPassword?: string;
}

export async function createOrganization(opts: CreateOrganizationArgs): Promise<unknown> {
  const { checkFullName, doCreateUser, isValidEmailAddress } = await userActions();
  const { checkNewRealmSubdomain, doCreateRealm } = await import('../actions/realms.js');
  const { realmUrl } = await import('../lib/urls.js');
  const { ROLE_OWNER } = await import('../lib/roles.js');
  const email = opts.ownerEmail.trim();
  if (!isValidEmailAddress(email)) throw new CliError(`Invalid email address '${email}'`);
  if (opts.name.trim() === '') throw new CliError('The organization name must not be empty');
  return withServices(async (services) => {
    await checkNewRealmSubdomain(services.db.kysely, opts.subdomain);
    const realm = await doCreateRealm(services, { stringId: opts.subdomain, name: opts.name.trim() });
    const fullName = await checkFullName(services.db.kysely, realm, opts.ownerName);
    const owner = await doCreateUser(services, realm, { email, fullName, password: opts.ownerPassword ?? null, role: ROLE_OWNER, actingUser: null });
    return {
      realm_id: realm.id,
      string_id: realm.string_id,
      name: realm.name,
      url: realmUrl(services.config, realm),
      owner: { user_id: owner.id, email: owner.email, api_key: owner.api_key },
    };
  });
}

export async function listOrganizations(): Promise<unknown> {
  const { fetchRealmsWithUserCounts } = await import('../db/repos/realms.js');
  const { realmUrl } = await import('../lib/urls.js');
  return withServices(async (services) =>
    (await fetchRealmsWithUserCounts(services.db.kysely)).map((r) => ({
      realm_id: r.id,
      string_id: r.string_id,
      name: r.name,
      url: realmUrl(services.config, r),
      deactivated: !!r.deactivated,
      active_users: r.active_users,
    })),
  );
}

export interface SendMessageArgs {
  sender: string;
  type: string;
  to: string;
  topic?: string;
  content: string;
}

export async function sendMessage(realmId: string, opts: SendMessageArgs): Promise<unknown> {
  const types: Record<string, 'stream' | 'private'> = { stream: 'stream', channel: 'stream', private: 'private', direct: 'private' };
  const type = types[opts.type];
  if (!type) throw new CliError(`Invalid type '${opts.type}': use channel or direct`);
  if (type === 'stream' && opts.topic === undefined) throw new CliError('A channel message needs --topic');
  const { checkSendMessage, doSendMessage, messageLinks } = await import('../actions/messages.js');
  return withContext(realmId, async (services, realm) => {
    const sender = await userByEmail(services, realm, opts.sender);
    if (!sender.is_active) throw new CliError(`User '${sender.delivery_email}' is deactivated`);
    // Direct messages name their recipients as a comma-separated list of emails here.
    const to = type === 'private' ? JSON.stringify(opts.to.split(',').map((e) => e.trim())) : opts.to;
    const prepared = await checkSendMessage(services, realm, sender, { type, to, topic: opts.topic, content: opts.content, client: 'ParleyCLI' });
    const sent = await doSendMessage(services, prepared);
    return { id: sent.id, ...messageLinks(services, prepared, sent.id) };
  });
}

export async function deleteTopic(realmId: string, opts: { channel: string; topic: string }): Promise<unknown> {
  const { doDeleteTopic } = await import('../actions/messages.js');
  const { fetchStreamByName } = await import('../db/repos/streams.js');
  const { topicKey } = await import('../lib/topics.js');
  return withContext(realmId, async (services, realm) => {
    const stream = await fetchStreamByName(services.db.kysely, realm.id, opts.channel);
    if (!stream) throw new CliError(`No channel named '${opts.channel}'`);
    const { countTopicMessages } = await import('../db/repos/messages.js');
    const messages = await countTopicMessages(services.db.kysely, stream.id, topicKey(opts.topic));
    if (messages === 0) throw new CliError(`Channel '${stream.name}' has no topic '${opts.topic}'`);
    // Batches as the API does, but until the topic is gone: nobody waits on an HTTP response here.
    while (!(await doDeleteTopic(services, realm, null, stream, opts.topic, services.config.deleteTopic)));
    return { channel_id: stream.id, channel: stream.name, topic: opts.topic, deleted_messages: messages };
  });
}

export async function check(): Promise<{ ok: boolean; problems: unknown[] }> {
  const { findIntegrityProblems } = await import('../db/repos/integrity.js');
  return withServices(async (services) => {
    const { problems, counts } = await findIntegrityProblems(services.db);
    return { ok: problems.length === 0, counts, problems };
  });
}

export async function archiveMessages(): Promise<unknown> {
  const { doRetentionPass } = await import('../actions/retention.js');
  return withServices((services) => doRetentionPass(services));
}

export async function listArchived(realmId: string, opts: { channel?: string }): Promise<unknown> {
  const { fetchArchive } = await import('../actions/retention.js');
  return withContext(realmId, async (services, realm) => {
    const streamId = opts.channel === undefined ? undefined : (await channelByName(services, realm, opts.channel)).id;
    const rows = await fetchArchive(services, realm.id, streamId);
    return rows.map((r) => ({ ...r, type: r.type === 1 ? 'retention_policy' : 'manual', restored: r.restored === 1 }));
  });
}

/**
 * Zulip's restore_data_from_archive (one transaction) and
 * restore_retention_policy_deletions_for_stream (every unrestored one of a channel).
 */
export async function restoreArchived(realmId: string, opts: { transaction?: string; channel?: string }): Promise<unknown> {
  if ((opts.transaction === undefined) === (opts.channel === undefined)) throw new CliError('Give either --transaction or --channel');
  const { doRestoreArchiveTransaction, fetchArchive } = await import('../actions/retention.js');
  return withContext(realmId, async (services, realm) => {
    let ids: number[];
    if (opts.transaction !== undefined) {
      const id = Number(opts.transaction);
      const row = Number.isSafeInteger(id) ? (await fetchArchive(services, realm.id)).find((r) => r.id === id) : undefined;
      if (!row) throw new CliError(`No archive transaction ${opts.transaction} in this organization`);
      if (row.restored) throw new CliError(`Archive transaction ${id} was restored already`);
      ids = [id];
    } else {
      const stream = await channelByName(services, realm, opts.channel!);
      ids = (await fetchArchive(services, realm.id, stream.id)).filter((r) => !r.restored && r.type === 1).map((r) => r.id).reverse();
    }
    let restored = 0;
    for (const id of ids) restored += (await doRestoreArchiveTransaction(services, id)).length;
    return { transactions: ids, restored_messages: restored };
  });
}

async function channelByName(services: ActionServices, realm: Realm, name: string): Promise<{ id: number; name: string }> {
  const { fetchStreamByName } = await import('../db/repos/streams.js');
  const stream = await fetchStreamByName(services.db.kysely, realm.id, name);
  if (!stream) throw new CliError(`No channel named '${name}'`);
  return stream;
}

/**
 * `parley export`: the organization in Zulip's export format (Zulip's `manage.py export`), written
 * here and now, not queued. As the server administrator's command it is the full export unless
 * --type says otherwise.
 */
export async function exportRealm(realmId: string, opts: { to: string; type: string }): Promise<unknown> {
  const { EXPORT_TYPES } = await import('../lib/zulip_export/export.js');
  if (!(EXPORT_TYPES as readonly string[]).includes(opts.type)) throw new CliError(`Invalid type '${opts.type}': use ${EXPORT_TYPES.join(', ')}`);
  const { writeFileSync, renameSync, existsSync } = await import('node:fs');
  if (existsSync(opts.to)) throw new CliError(`${opts.to} already exists`);
  const { writeRealmExport } = await import('../actions/realm_export.js');
  return withContext(realmId, async (services, realm) => {
    const written = await writeRealmExport(services, realm, opts.type as (typeof EXPORT_TYPES)[number]);
    writeFileSync(`${opts.to}.partial`, written.data);
    renameSync(`${opts.to}.partial`, opts.to);
    return { file: opts.to, bytes: written.data.length, export_type: opts.type, realm_id: realm.id, string_id: realm.string_id };
  });
}

/** `parley import-zulip` and `parley import-slack`: a new organization from an export. */
export async function importRealm(kind: 'zulip' | 'slack', path: string, opts: { subdomain: string }): Promise<unknown> {
  const { readZulipExport, ExportFormatError } = await import('../lib/zulip_export/archive.js');
  const { doImportRealm } = await import('../actions/realm_import.js');
  const { checkNewRealmSubdomain } = await import('../actions/realms.js');
  return withServices(async (services) => {
    await checkNewRealmSubdomain(services.db.kysely, opts.subdomain);
    try {
      let data;
      const skipped: string[] = [];
      if (kind === 'zulip') data = await readZulipExport(path);
      else {
        const { convertSlackExport } = await import('../lib/slack_import.js');
        const converted = convertSlackExport(path);
        data = converted.data;
        skipped.push(...converted.skipped);
      }
      const report = await doImportRealm(services, data, opts.subdomain);
      return { ...report, skipped: [...skipped, ...report.skipped] };
    } catch (e) {
      if (e instanceof ExportFormatError) throw new CliError(e.message);
      throw e;
    }
  });
}
