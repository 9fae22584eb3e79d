import { JsonableError, adminRequired, badRequest, ownerRequired } from '../errors.js';
import { now, transaction, type Tx } from '../db/index.js';
import type { CustomProfileField, Realm, User } from '../db/tables.js';
import type { Config } from '../config.js';
import { passwordGuesses } from '../lib/password_strength.js';
import {
  countActiveOwners,
  countActiveUsers,
  emailInUse,
  fetchActiveBotsOwnedBy,
  fetchActiveSubscriberIds,
  fetchActiveUserNames,
  fetchActiveUserRoles,
  fetchRealmUsers,
  fetchSubscribedStreams,
  fetchUsersByIds,
  insertAuditLog,
  insertUser,
  updateUserRow,
} from '../db/repos/users.js';
import { deleteGroupMembers, fetchSystemGroups, insertGroupMembers } from '../db/repos/user_groups.js';
import { deleteUserSessions } from '../db/repos/sessions.js';
import {
  deleteCustomProfileValue,
  fetchCustomProfileFields,
  fetchCustomProfileValue,
  upsertCustomProfileValue,
} from '../db/repos/custom_profile_fields.js';
import { generateApiKey, hashPassword } from '../lib/secrets.js';
import { BOT_INCOMING_WEBHOOK, ROLE_GUEST, ROLE_MEMBER, ROLE_OWNER, isAdmin } from '../lib/roles.js';
import { REALM_GROUP_SETTING_CONFIG, realmSettings } from '../lib/realm_settings.js';
import { loadGroupMembership, userHasGroupPermission } from '../lib/group_settings.js';
import { SYSTEM_GROUP_FOR_ROLE } from '../lib/system_groups.js';
import { initialUserSettingsJson, realmUserSettingsDefaults } from '../lib/user_settings.js';
import { AccessorIndex, apiEmailFor, canAccessDeliveryEmail, loadAccessorIndex, userIdsWhoCanAccess } from '../lib/access/users.js';
import { formatInaccessibleUser, formatUser } from '../lib/format/users.js';
import { checkProfileFieldValue, isRenderable, renderProfileValue } from '../lib/custom_profile_fields.js';
import { emailAllowedForRealm } from './realm_domains.js';
import { subscribeNewUserToDefaultStreams } from './streams.js';
import { realmUrl } from '../lib/urls.js';
import type { ActionServices } from '../services.js';

export type AfterCommit = (cb: () => void) => void;

export interface CreateUserOptions {
  email: string;
  fullName: string;
  password?: string | null;
  role?: number;
  isBot?: boolean;
  botType?: number | null;
  botOwnerId?: number | null;
  timezone?: string;
  actingUser: User | null;
  /** Channels to join besides (or, with includeDefaults false, instead of) the default channels. */
  initialStreams?: { streamIds: readonly number[]; includeDefaults: boolean };
  /** A bot's default channels (POST /bots). */
  botDefaults?: { sendingStreamId: number | null; eventsRegisterStreamId: number | null; allPublicStreams: boolean };
  /**
   * Runs in the creating transaction after the user's own rows and events (a bot's Service row
   * and realm_bot event, actions/bots.ts).
   */
  inTransaction?: (tx: Tx, afterCommit: AfterCommit, user: User) => Promise<void>;
}

/** The system groups a role makes a user a direct member of (members are also full members). */
function roleGroupNames(role: number): string[] {
  const names = [SYSTEM_GROUP_FOR_ROLE[role]!];
  if (role === ROLE_MEMBER) names.push('role:fullmembers');
  return names;
}

async function systemGroupIds(tx: Tx, realmId: number): Promise<Map<string, number>> {
  return new Map((await fetchSystemGroups(tx, realmId)).map((g) => [g.name, g.id]));
}

/** Adds a user to the system groups of their role (members are also full members). */
export async function addToRoleSystemGroups(tx: Tx, realmId: number, userId: number, role: number): Promise<void> {
  const byName = await systemGroupIds(tx, realmId);
  for (const n of roleGroupNames(role)) await insertGroupMembers(tx, byName.get(n)!, [userId]);
}

function sendAfterCommit(services: ActionServices, afterCommit: AfterCommit, realm: Realm, event: Record<string, unknown> & { type: string }, users: number[]): void {
  afterCommit(() => services.events.send(realm.id, event, users));
}

function realmUserUpdate(person: Record<string, unknown>): { type: string; op: string; person: Record<string, unknown> } {
  return { type: 'realm_user', op: 'update', person };
}

/**
 * realm_user add for a new user (Zulip's notify_created_user): the dict differs by whether the
 * recipient may see the real email; guests who may not see the user at all get the "Unknown
 * user" placeholder, and only if their client did not declare user_list_incomplete.
 */
async function notifyCreatedUser(tx: Tx, services: ActionServices, afterCommit: AfterCommit, realm: Realm, user: User): Promise<void> {
  const active = await fetchActiveUserRoles(tx, realm.id);
  const withAccess = new Set(await userIdsWhoCanAccess(tx, realm, user));
  const seeing: number[] = [];
  const notSeeing: number[] = [];
  for (const viewer of active) {
    if (!withAccess.has(viewer.id)) continue;
    (canAccessDeliveryEmail(viewer, user) ? seeing : notSeeing).push(viewer.id);
  }
  const person = (viewer: { id: number; role: number }) =>
    formatUser(user, { config: services.config, realm, viewer, clientGravatar: false, profileData: new Map() });
  const viewerOf = (id: number) => active.find((u) => u.id === id)!;
  const without = active.filter((u) => !withAccess.has(u.id)).map((u) => u.id);
  afterCommit(() => {
    if (seeing.length) services.events.send(realm.id, { type: 'realm_user', op: 'add', person: person(viewerOf(seeing[0]!)) }, seeing);
    if (notSeeing.length) services.events.send(realm.id, { type: 'realm_user', op: 'add', person: person(viewerOf(notSeeing[0]!)) }, notSeeing);
    if (without.length) {
      services.events.send(
        realm.id,
        { type: 'realm_user', op: 'add', person: formatInaccessibleUser(services.config, realm, user.id) },
        without,
        undefined,
        { capability: 'user_list_incomplete', value: false },
      );
    }
  });
}

/** user_group add_members / remove_members for the system groups a role change touches. */
async function notifyGroupMembership(tx: Tx, services: ActionServices, afterCommit: AfterCommit, realm: Realm, op: 'add_members' | 'remove_members', groupIds: number[], userId: number): Promise<void> {
  if (groupIds.length === 0) return;
  const everyone = (await fetchActiveUserRoles(tx, realm.id)).map((u) => u.id);
  for (const groupId of groupIds) {
    sendAfterCommit(services, afterCommit, realm, { type: 'user_group', op, group_id: groupId, user_ids: [userId] }, everyone);
  }
}

/**
 * Creates an account. Preconditions (checked by callers): the email is valid and unused
 * in the realm, the role is one of ROLES. Announces the user with realm_user add and
 * subscribes people to the realm's default channels.
 */
export async function doCreateUser(services: ActionServices, realm: Realm, opts: CreateUserOptions): Promise<User> {
  const passwordHash = opts.password ? await hashPassword(opts.password) : null;
  const role = opts.role ?? ROLE_MEMBER;
  return transaction(services.db, async (tx, afterCommit) => {
    let user = await insertUser(tx, {
      realm_id: realm.id,
      email: opts.email,
      email_lc: opts.email.toLowerCase(),
      delivery_email: opts.email,
      full_name: opts.fullName,
      password_hash: passwordHash,
      api_key: generateApiKey(),
      role,
      is_bot: opts.isBot ? 1 : 0,
      bot_type: opts.isBot ? (opts.botType ?? 1) : null,
      bot_owner_id: opts.isBot ? (opts.botOwnerId ?? null) : null,
      default_sending_stream_id: opts.botDefaults?.sendingStreamId ?? null,
      default_events_register_stream_id: opts.botDefaults?.eventsRegisterStreamId ?? null,
      default_all_public_streams: opts.botDefaults?.allPublicStreams ? 1 : 0,
      timezone: opts.timezone ?? '',
      date_joined: now(),
      settings: initialUserSettingsJson(realmUserSettingsDefaults(realm)),
    });
    // The API email depends on the new user's visibility setting and (if fake) on their ID.
    const email = apiEmailFor(services.config, realm, user);
    if (email !== user.email) {
      await updateUserRow(tx, user.id, { email, email_lc: email.toLowerCase() });
      user = { ...user, email, email_lc: email.toLowerCase() };
    }
    await addToRoleSystemGroups(tx, realm.id, user.id, role);
    await insertAuditLog(tx, {
      realm_id: realm.id,
      acting_user_id: opts.actingUser?.id ?? null,
      modified_user_id: user.id,
      event_type: 'user_created',
      event_time: now(),
    });
    await notifyCreatedUser(tx, services, afterCommit, realm, user);
    const groups = await systemGroupIds(tx, realm.id);
    await notifyGroupMembership(tx, services, afterCommit, realm, 'add_members', roleGroupNames(role).map((n) => groups.get(n)!), user.id);
    // As Zulip's process_new_human_user: people (not bots) join the default channels.
    if (!user.is_bot) {
      const initial = opts.initialStreams ?? { streamIds: [], includeDefaults: true };
      await subscribeNewUserToDefaultStreams(tx, afterCommit, services, realm, user, initial.streamIds, initial.includeDefaults);
    }
    if (opts.inTransaction) await opts.inTransaction(tx, afterCommit, user);
    return user;
  });
}

/**
 * Subscriber-list events for a user leaving or rejoining their channels on (de)activation:
 * public channels' subscribers are visible to every member and to subscribed guests, private
 * ones to their subscribers and administrators.
 */
async function notifyPeerSubscriptions(tx: Tx, services: ActionServices, afterCommit: AfterCommit, realm: Realm, user: User, op: 'peer_add' | 'peer_remove'): Promise<void> {
  const streams = await fetchSubscribedStreams(tx, user.id);
  if (streams.length === 0) return;
  const active = await fetchActiveUserRoles(tx, realm.id);
  const subscribers = await fetchActiveSubscriberIds(tx, streams.map((s) => s.stream_id), user.id);
  for (const s of streams) {
    const recipients = new Set(subscribers.filter((r) => r.stream_id === s.stream_id).map((r) => r.user_id));
    for (const u of active) {
      if (u.id === user.id) continue;
      if (s.invite_only ? isAdmin(u) : u.role !== ROLE_GUEST) recipients.add(u.id);
    }
    sendAfterCommit(services, afterCommit, realm, { type: 'subscription', op, stream_ids: [s.stream_id], user_ids: [user.id] }, [...recipients].sort((a, b) => a - b));
  }
}

async function deactivateOne(tx: Tx, services: ActionServices, afterCommit: AfterCommit, realm: Realm, user: User, actingUser: User | null): Promise<void> {
  await updateUserRow(tx, user.id, { is_active: 0 });
  await deleteUserSessions(tx, user.id);
  await insertAuditLog(tx, { realm_id: realm.id, acting_user_id: actingUser?.id ?? null, modified_user_id: user.id, event_type: 'user_deactivated', event_time: now() });
  // Zulip sends the subscriber removals before the deactivation itself.
  await notifyPeerSubscriptions(tx, services, afterCommit, realm, user, 'peer_remove');
  const recipients = await userIdsWhoCanAccess(tx, realm, user);
  sendAfterCommit(services, afterCommit, realm, realmUserUpdate({ user_id: user.id, is_active: false }), recipients);
}

/**
 * Deactivates an account, and first every bot it owns (as Zulip does). Its API key and
 * sessions stop working at once because authentication checks is_active.
 */
export async function doDeactivateUser(services: ActionServices, realm: Realm, target: User, actingUser: User | null): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    const bots = target.is_bot ? [] : await fetchActiveBotsOwnedBy(tx, realm.id, target.id);
    for (const bot of bots) await deactivateOne(tx, services, afterCommit, realm, bot, actingUser);
    await deactivateOne(tx, services, afterCommit, realm, target, actingUser);
  });
}

export async function doReactivateUser(services: ActionServices, realm: Realm, target: User, actingUser: User | null): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await updateUserRow(tx, target.id, { is_active: 1 });
    await insertAuditLog(tx, { realm_id: realm.id, acting_user_id: actingUser?.id ?? null, modified_user_id: target.id, event_type: 'user_reactivated', event_time: now() });
    const reactivated = { ...target, is_active: 1 };
    const recipients = await userIdsWhoCanAccess(tx, realm, reactivated);
    sendAfterCommit(services, afterCommit, realm, realmUserUpdate({ user_id: target.id, is_active: true }), recipients);
    await notifyPeerSubscriptions(tx, services, afterCommit, realm, reactivated, 'peer_add');
  });
}

/**
 * realm_user updates of `delivery_email` for each viewer whose access to a user's real email
 * differs between `before` and `after` (a change of the user's visibility setting).
 */
async function notifyDeliveryEmailAccess(
  services: ActionServices,
  afterCommit: AfterCommit,
  realm: Realm,
  viewers: ReadonlyMap<number, { id: number; role: number }>,
  accessors: AccessorIndex,
  before: User,
  after: User,
): Promise<void> {
  const gained: number[] = [];
  const lost: number[] = [];
  for (const id of await accessors.userIds(after)) {
    const viewer = viewers.get(id);
    if (!viewer) continue;
    const could = canAccessDeliveryEmail(viewer, before);
    const can = canAccessDeliveryEmail(viewer, after);
    if (could !== can) (can ? gained : lost).push(id);
  }
  if (gained.length) sendAfterCommit(services, afterCommit, realm, realmUserUpdate({ user_id: after.id, delivery_email: after.delivery_email }), gained);
  if (lost.length) sendAfterCommit(services, afterCommit, realm, realmUserUpdate({ user_id: after.id, delivery_email: null }), lost);
}

async function storeApiEmail(tx: Tx, services: ActionServices, afterCommit: AfterCommit, realm: Realm, user: User, accessors?: AccessorIndex): Promise<User> {
  const email = apiEmailFor(services.config, realm, user);
  if (email === user.email) return user;
  await updateUserRow(tx, user.id, { email, email_lc: email.toLowerCase() });
  const updated = { ...user, email, email_lc: email.toLowerCase() };
  const recipients = await (accessors ?? (await loadAccessorIndex(tx, realm))).userIds(updated);
  sendAfterCommit(services, afterCommit, realm, realmUserUpdate({ user_id: user.id, new_email: email }), recipients);
  return updated;
}

/**
 * Keeps the stored API email (`users.email`, Zulip's `email`) consistent after users' email
 * visibility changed, and tells clients: `new_email` when the API email changes, and
 * `delivery_email` to each viewer who gains or loses sight of the real address.
 *
 * Call it inside the transaction that wrote the change (a user's email_address_visibility
 * setting, or several users' at once), passing the rows as they were before the change.
 */
export async function syncEmailVisibility(
  services: ActionServices,
  tx: Tx,
  afterCommit: AfterCommit,
  realm: Realm,
  usersBefore: readonly User[],
): Promise<void> {
  const viewers = new Map((await fetchActiveUserRoles(tx, realm.id)).map((u) => [u.id, u]));
  const accessors = await loadAccessorIndex(tx, realm);
  const current = new Map((await fetchUsersByIds(tx, realm.id, usersBefore.map((u) => u.id))).map((u) => [u.id, u]));
  for (const before of usersBefore) {
    const row = current.get(before.id);
    if (!row) continue;
    const after = await storeApiEmail(tx, services, afterCommit, realm, row, accessors);
    await notifyDeliveryEmailAccess(services, afterCommit, realm, viewers, accessors, before, after);
  }
}

export interface ProfileDataChange {
  set: { field: CustomProfileField; value: string }[];
  remove: CustomProfileField[];
}

/** Writes custom profile values that changed and announces each to everyone who can see the user. */
async function applyProfileData(tx: Tx, services: ActionServices, afterCommit: AfterCommit, realm: Realm, target: User, change: ProfileDataChange): Promise<void> {
  const recipients = await userIdsWhoCanAccess(tx, realm, target);
  for (const { field, value } of change.set) {
    const existing = await fetchCustomProfileValue(tx, target.id, field.id);
    if (existing && existing.value === value) continue;
    const rendered = isRenderable(field.type) ? renderProfileValue(value, realmUrl(services.config, realm)) : null;
    await upsertCustomProfileValue(tx, { user_id: target.id, field_id: field.id, value, rendered_value: rendered });
    const data: Record<string, unknown> = { id: field.id, value };
    if (rendered) data.rendered_value = rendered;
    sendAfterCommit(services, afterCommit, realm, realmUserUpdate({ user_id: target.id, custom_profile_field: data }), recipients);
  }
  for (const field of change.remove) {
    if (!(await fetchCustomProfileValue(tx, target.id, field.id))) continue;
    await deleteCustomProfileValue(tx, target.id, field.id);
    sendAfterCommit(services, afterCommit, realm, realmUserUpdate({ user_id: target.id, custom_profile_field: { id: field.id, value: null } }), recipients);
  }
}

export async function doUpdateProfileData(services: ActionServices, realm: Realm, target: User, change: ProfileDataChange): Promise<void> {
  await transaction(services.db, (tx, afterCommit) => applyProfileData(tx, services, afterCommit, realm, target, change));
}

async function changeRole(tx: Tx, services: ActionServices, afterCommit: AfterCommit, realm: Realm, target: User, role: number, actingUser: User | null): Promise<User> {
  await updateUserRow(tx, target.id, { role });
  const groups = await systemGroupIds(tx, realm.id);
  const oldNames = roleGroupNames(target.role);
  const newNames = roleGroupNames(role);
  const removed = oldNames.filter((n) => !newNames.includes(n)).map((n) => groups.get(n)!);
  const added = newNames.filter((n) => !oldNames.includes(n)).map((n) => groups.get(n)!);
  for (const g of removed) await deleteGroupMembers(tx, g, [target.id]);
  for (const g of added) await insertGroupMembers(tx, g, [target.id]);
  await insertAuditLog(tx, {
    realm_id: realm.id,
    acting_user_id: actingUser?.id ?? null,
    modified_user_id: target.id,
    event_type: 'user_role_changed',
    event_time: now(),
    extra_data: JSON.stringify({ old_value: target.role, new_value: role }),
  });
  const updated = { ...target, role };
  sendAfterCommit(services, afterCommit, realm, realmUserUpdate({ user_id: target.id, role }), await userIdsWhoCanAccess(tx, realm, updated));
  await notifyGroupMembership(tx, services, afterCommit, realm, 'remove_members', removed, target.id);
  await notifyGroupMembership(tx, services, afterCommit, realm, 'add_members', added, target.id);
  // The new role may show the user more or fewer real email addresses of others.
  const others = (await fetchRealmUsers(tx, realm.id)).filter((u) => u.id !== target.id);
  const gained: User[] = [];
  const lost: User[] = [];
  for (const other of others) {
    const could = canAccessDeliveryEmail(target, other);
    const can = canAccessDeliveryEmail(updated, other);
    if (could !== can) (can ? gained : lost).push(other);
  }
  for (const other of gained) sendAfterCommit(services, afterCommit, realm, realmUserUpdate({ user_id: other.id, delivery_email: other.delivery_email }), [target.id]);
  for (const other of lost) sendAfterCommit(services, afterCommit, realm, realmUserUpdate({ user_id: other.id, delivery_email: null }), [target.id]);
  return updated;
}

export async function doChangeUserRole(services: ActionServices, realm: Realm, target: User, role: number, actingUser: User | null): Promise<void> {
  if (target.role === role) return;
  await transaction(services.db, (tx, afterCommit) => changeRole(tx, services, afterCommit, realm, target, role, actingUser));
}

async function changeFullName(tx: Tx, services: ActionServices, afterCommit: AfterCommit, realm: Realm, target: User, fullName: string, actingUser: User | null): Promise<User> {
  await updateUserRow(tx, target.id, { full_name: fullName });
  await insertAuditLog(tx, {
    realm_id: realm.id,
    acting_user_id: actingUser?.id ?? null,
    modified_user_id: target.id,
    event_type: 'user_full_name_changed',
    event_time: now(),
    extra_data: JSON.stringify({ old_value: target.full_name, new_value: fullName }),
  });
  sendAfterCommit(services, afterCommit, realm, realmUserUpdate({ user_id: target.id, full_name: fullName }), await userIdsWhoCanAccess(tx, realm, target));
  return { ...target, full_name: fullName };
}

export async function doChangeFullName(services: ActionServices, realm: Realm, target: User, fullName: string, actingUser: User | null): Promise<void> {
  if (target.full_name === fullName) return;
  await transaction(services.db, (tx, afterCommit) => changeFullName(tx, services, afterCommit, realm, target, fullName, actingUser));
}

async function changeDeliveryEmail(tx: Tx, services: ActionServices, afterCommit: AfterCommit, realm: Realm, target: User, newEmail: string, actingUser: User | null): Promise<User> {
  await updateUserRow(tx, target.id, { delivery_email: newEmail });
  await insertAuditLog(tx, {
    realm_id: realm.id,
    acting_user_id: actingUser?.id ?? null,
    modified_user_id: target.id,
    event_type: 'user_email_changed',
    event_time: now(),
    extra_data: JSON.stringify({ old_value: target.delivery_email, new_value: newEmail }),
  });
  const changed = { ...target, delivery_email: newEmail };
  const viewers = new Map((await fetchActiveUserRoles(tx, realm.id)).map((u) => [u.id, u]));
  const accessors = await userIdsWhoCanAccess(tx, realm, changed);
  const seeing = accessors.filter((id) => viewers.has(id) && canAccessDeliveryEmail(viewers.get(id)!, changed));
  sendAfterCommit(services, afterCommit, realm, realmUserUpdate({ user_id: target.id, delivery_email: newEmail }), seeing);
  return storeApiEmail(tx, services, afterCommit, realm, changed);
}

/** Changes a user's real email (and their API email when everyone may see it). */
export async function doChangeUserDeliveryEmail(services: ActionServices, realm: Realm, target: User, newEmail: string, actingUser: User | null): Promise<void> {
  await transaction(services.db, (tx, afterCommit) => changeDeliveryEmail(tx, services, afterCommit, realm, target, newEmail, actingUser));
}

export interface UserUpdate {
  fullName?: string;
  role?: number;
  profileData?: ProfileDataChange;
  newEmail?: string;
}

/**
 * PATCH /users/{user_id}: every change in one transaction, after checkUpdateUser-style
 * validation by the caller, so a refused part leaves nothing half-applied.
 */
export async function doUpdateUser(services: ActionServices, realm: Realm, target: User, update: UserUpdate, actingUser: User): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    let user = target;
    if (update.role !== undefined && update.role !== user.role) user = await changeRole(tx, services, afterCommit, realm, user, update.role, actingUser);
    if (update.fullName !== undefined && update.fullName !== user.full_name) user = await changeFullName(tx, services, afterCommit, realm, user, update.fullName, actingUser);
    if (update.profileData) await applyProfileData(tx, services, afterCommit, realm, user, update.profileData);
    if (update.newEmail !== undefined && update.newEmail !== user.delivery_email) await changeDeliveryEmail(tx, services, afterCommit, realm, user, update.newEmail, actingUser);
  });
}

/** A new API key that works at once; the old one stops working at once. */
export async function doRegenerateApiKey(services: ActionServices, realm: Realm, user: User, actingUser: User = user): Promise<string> {
  const apiKey = generateApiKey();
  await transaction(services.db, async (tx) => {
    await updateUserRow(tx, user.id, { api_key: apiKey });
    await insertAuditLog(tx, { realm_id: realm.id, acting_user_id: actingUser.id, modified_user_id: user.id, event_type: 'user_api_key_changed', event_time: now() });
  });
  return apiKey;
}

export async function doChangePassword(services: ActionServices, realm: Realm, user: User, password: string): Promise<void> {
  const hash = await hashPassword(password);
  await transaction(services.db, async (tx) => {
    await updateUserRow(tx, user.id, { password_hash: hash });
    await insertAuditLog(tx, { realm_id: realm.id, acting_user_id: null, modified_user_id: user.id, event_type: 'user_password_changed', event_time: now() });
  });
}

/** Zulip's special permissions, granted only by server administrators (the CLI). */
export const SPECIAL_PERMISSIONS = ['can_change_user_emails', 'can_create_users', 'can_forge_sender'] as const;
export type SpecialPermission = (typeof SPECIAL_PERMISSIONS)[number];

export async function doSetSpecialPermission(services: ActionServices, realm: Realm, user: User, permission: SpecialPermission, value: boolean): Promise<void> {
  await transaction(services.db, async (tx) => {
    await updateUserRow(tx, user.id, { [permission]: value ? 1 : 0 });
    await insertAuditLog(tx, {
      realm_id: realm.id,
      acting_user_id: null,
      modified_user_id: user.id,
      event_type: `user_${permission}_changed`,
      event_time: now(),
      extra_data: JSON.stringify({ new_value: value }),
    });
  });
}

// ---------------------------------------------------------------------------
// Checks (4xx) that run before the actions above.

export const MAX_FULL_NAME_LENGTH = 100;
const NAME_INVALID_CHARS = ['*', '`', '\\', '>', '"', '@'];

/** Zulip's check_full_name: returns the stripped name or refuses it with Zulip's message. */
export async function checkFullName(db: Tx, realm: Realm, raw: string, exceptUserId?: number): Promise<string> {
  const name = raw.trim();
  if (name.length > MAX_FULL_NAME_LENGTH) throw badRequest('Name too long!');
  if (name.length === 0) throw badRequest('Name must not be empty!');
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name) || NAME_INVALID_CHARS.some((c) => name.includes(c))) {
    throw badRequest('Invalid characters in name!');
  }
  // Names ending in `|<digits>` would be ambiguous in the mention syntax.
  if (/\|\d+$/.test(raw)) throw badRequest('Invalid format!');
  if (realmSettings(realm).require_unique_names) {
    const normalized = name.normalize('NFKC').toLowerCase();
    const others = (await fetchRealmUsers(db, realm.id)).filter((u) => u.id !== exceptUserId);
    if (others.some((u) => u.full_name.normalize('NFKC').toLowerCase() === normalized)) {
      throw badRequest('Unique names required in this organization.');
    }
  }
  return name;
}

/** An address Django's validate_email would accept, closely enough. */
export function isValidEmailAddress(email: string): boolean {
  const m = /^([^\s@"(),:;<>[\\\]]+)@([^\s@]+)$/.exec(email);
  if (!m || m[1]!.length > 64 || email.length > 254) return false;
  const domain = m[2]!;
  if (domain === 'localhost') return true;
  return /^([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}\.?$/i.test(domain);
}

/** Refuses an address the realm does not allow or that someone already uses. */
export async function checkEmailAvailable(db: Tx, realm: Realm, email: string, exceptUserId?: number): Promise<void> {
  const problem = await emailAllowedForRealm(db, realm, email);
  if (problem === 'Outside your domain.') throw badRequest(`Email '${email}' not allowed in this organization`);
  if (problem) throw badRequest(problem);
  if (await emailInUse(db, realm.id, email, exceptUserId)) throw badRequest(`Email '${email}' already in use`);
}

/**
 * Zulip's check_password_strength: at least PASSWORD_MIN_LENGTH characters and, by zxcvbn's
 * estimate, at least PASSWORD_MIN_GUESSES guesses to find.
 */
export function isStrongEnoughPassword(config: Config, password: string): boolean {
  if (password.length < config.passwords.minLength) return false;
  return passwordGuesses(password) >= config.passwords.minGuesses;
}

/** POST /users (Zulip's create_user_backend): the caller is an administrator already. */
export async function checkCreateUser(
  services: ActionServices,
  realm: Realm,
  caller: User,
  input: { email: string; password: string; fullName: string },
): Promise<{ email: string; password: string; fullName: string }> {
  if (!caller.can_create_users) throw badRequest('User not authorized to create users');
  const fullName = await checkFullName(services.db.kysely, realm, input.fullName);
  const email = input.email.trim();
  if (!isValidEmailAddress(email)) throw badRequest('Bad name or username');
  await checkEmailAvailable(services.db.kysely, realm, email);
  if (!isStrongEnoughPassword(services.config, input.password)) throw badRequest('The password is too weak.');
  return { email, password: input.password, fullName };
}

/** One entry of profile_data / data: a field ID and a value, null (or empty) clearing it. */
export interface ProfileDataEntry {
  id: number;
  value: string | number[] | null;
}

/**
 * Validates profile data updates (Zulip's validate_user_custom_profile_data): unknown fields,
 * fields users may not edit themselves (administrators may edit all), and values that do not
 * fit the field type are refused. Empty values remove the stored value.
 */
export async function checkProfileDataChange(db: Tx, realm: Realm, caller: User, entries: readonly ProfileDataEntry[]): Promise<ProfileDataChange> {
  const fields = new Map((await fetchCustomProfileFields(db, realm.id)).map((f) => [f.id, f]));
  const users = new Map((await fetchRealmUsers(db, realm.id)).map((u) => [u.id, u]));
  const change: ProfileDataChange = { set: [], remove: [] };
  for (const entry of entries) {
    const field = fields.get(entry.id);
    if (!field) throw badRequest(`Field id ${entry.id} not found.`);
    if (!isAdmin(caller) && !field.editable_by_user) {
      throw badRequest('You are not allowed to change this field. Contact an administrator to update it.');
    }
    const empty = entry.value === null || entry.value === '' || (Array.isArray(entry.value) && entry.value.length === 0);
    if (empty) change.remove.push(field);
    else change.set.push({ field, value: checkProfileFieldValue(field, entry.value!, users) });
  }
  return change;
}

/** Zulip's check_last_owner: the target is the only active human owner. */
export async function isLastOwner(db: Tx, realm: Realm, target: User): Promise<boolean> {
  return target.role === ROLE_OWNER && !target.is_bot && (await countActiveOwners(db, realm.id)) === 1;
}

/** Role rules of PATCH /users/{user_id}: only owners grant or remove ownership; an organization keeps an owner. */
export async function checkRoleChange(db: Tx, realm: Realm, caller: User, target: User, role: number): Promise<void> {
  if (role === target.role) return;
  if ((role === ROLE_OWNER || target.role === ROLE_OWNER) && caller.role !== ROLE_OWNER) throw ownerRequired();
  if (!isAdmin(caller)) throw adminRequired();
  if (await isLastOwner(db, realm, target)) {
    throw badRequest('The owner permission cannot be removed from the only organization owner.');
  }
}

/** DELETE /users/me (Zulip's deactivate_user_own_backend). */
export async function checkDeactivateOwnUser(db: Tx, realm: Realm, user: User): Promise<void> {
  if ((await countActiveUsers(db, realm.id)) === 1) {
    throw new JsonableError('Cannot deactivate the only user', 'CANNOT_DEACTIVATE_LAST_USER', 400, { is_last_owner: false, entity: 'user' });
  }
  if (await isLastOwner(db, realm, user)) {
    throw new JsonableError('Cannot deactivate the only organization owner', 'CANNOT_DEACTIVATE_LAST_USER', 400, {
      is_last_owner: true,
      entity: 'organization owner',
    });
  }
}

/** POST /users/{id}/reactivate: bots also need the caller's right to create such a bot and a free name. */
export async function checkReactivateUser(db: Tx, realm: Realm, caller: User, target: User): Promise<void> {
  if (target.is_active) throw badRequest('User is already active.');
  if (!target.is_bot) return;
  const m = await loadGroupMembership(db, realm.id);
  const s = realmSettings(realm);
  const mayCreate =
    userHasGroupPermission(m, s.can_create_bots_group, caller, REALM_GROUP_SETTING_CONFIG.can_create_bots_group) ||
    (target.bot_type === BOT_INCOMING_WEBHOOK &&
      userHasGroupPermission(m, s.can_create_write_only_bots_group, caller, REALM_GROUP_SETTING_CONFIG.can_create_write_only_bots_group));
  if (!mayCreate) throw badRequest('Insufficient permission');
  const name = target.full_name.trim();
  if ((await fetchActiveUserNames(db, realm.id)).includes(name)) {
    throw badRequest(
      `There is already an active bot named "${target.full_name}" in this organization. To reactivate this bot, you must rename or deactivate the other one first.`,
    );
  }
}
