import { JsonableError, badRequest, insufficientPermission } from '../../errors.js';
import type { Config } from '../../config.js';
import type { Tx } from '../../db/index.js';
import type { Realm, User } from '../../db/tables.js';
import {
  fetchActiveUserRoles,
  fetchUserByDeliveryEmail,
  fetchUserById,
  fetchUserIdsSharingConversations,
} from '../../db/repos/users.js';
import { loadGroupMembership, userHasGroupPermission, type GroupMembership } from '../group_settings.js';
import { REALM_GROUP_SETTING_CONFIG, realmSettings } from '../realm_settings.js';
import { EMAIL_ADDRESS_VISIBILITY_EVERYONE, userSettings } from '../user_settings.js';
import { ROLE_ADMINISTRATOR, ROLE_GUEST, ROLE_MEMBER, ROLE_MODERATOR, ROLE_OWNER, isAdmin } from '../roles.js';
import { realmHost } from '../urls.js';

/**
 * Email address visibility, a personal setting since Zulip 7.0 (feature level 163): who may
 * see a user's real (delivery) email. New users start from the realm's user-settings
 * defaults (lib/user_settings.ts); whoever changes the setting must call
 * syncEmailVisibility (actions/users.ts) so the stored API email follows.
 */
export const EMAIL_VISIBILITY_EVERYONE = EMAIL_ADDRESS_VISIBILITY_EVERYONE;

/** Zulip's ROLE_TO_ACCESSIBLE_EMAIL_ADDRESS_VISIBILITY_IDS. */
const VISIBILITIES_READABLE_BY_ROLE: Record<number, readonly number[]> = {
  [ROLE_OWNER]: [1, 2, 3, 5],
  [ROLE_ADMINISTRATOR]: [1, 2, 3, 5],
  [ROLE_MODERATOR]: [1, 2, 5],
  [ROLE_MEMBER]: [1, 2],
  [ROLE_GUEST]: [1],
};

/** A user's effective visibility. Bots always show their real email, as in Zulip. */
export function emailAddressVisibility(user: Pick<User, 'is_bot' | 'settings' | 'timezone'>): number {
  if (user.is_bot) return EMAIL_VISIBILITY_EVERYONE;
  return userSettings(user).email_address_visibility;
}

/** Zulip's can_access_delivery_email: everyone sees their own; others per the target's setting. */
export function canAccessDeliveryEmail(
  viewer: Pick<User, 'id' | 'role'> | null,
  target: Pick<User, 'id' | 'is_bot' | 'settings' | 'timezone'>,
): boolean {
  if (!viewer) return false;
  if (viewer.id === target.id) return true;
  return (VISIBILITIES_READABLE_BY_ROLE[viewer.role] ?? []).includes(emailAddressVisibility(target));
}

/** The domain of fake API emails, `user{id}@{realm host}`. */
export function fakeEmailDomain(config: Config, realm: Pick<Realm, 'string_id'>): string {
  return realmHost(config, realm);
}

export function dummyEmail(config: Config, realm: Pick<Realm, 'string_id'>, userId: number): string {
  return `user${userId}@${fakeEmailDomain(config, realm)}`;
}

/** The API email a user should have: the real one only when everyone may see it. */
export function apiEmailFor(config: Config, realm: Realm, user: Pick<User, 'id' | 'is_bot' | 'settings' | 'timezone' | 'delivery_email'>): string {
  return emailAddressVisibility(user) === EMAIL_VISIBILITY_EVERYONE ? user.delivery_email : dummyEmail(config, realm, user.id);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The user ID inside a dummy address `user{id}@{realm host}`, or null. */
export function parseDummyEmail(config: Config, realm: Pick<Realm, 'string_id'>, email: string): number | null {
  const m = new RegExp(`^user(\\d+)@${escapeRegExp(fakeEmailDomain(config, realm))}$`, 'i').exec(email.trim());
  if (!m) return null;
  const id = Number(m[1]);
  return Number.isSafeInteger(id) ? id : null;
}

/** Zulip's can_admin_user: administrators, and the owner of a bot for that bot. */
export function canAdminUser(caller: Pick<User, 'id' | 'role'>, target: Pick<User, 'bot_owner_id'>): boolean {
  return target.bot_owner_id === caller.id || isAdmin(caller);
}

/**
 * Which users a caller may see, per the realm's can_access_all_users_group: everyone may see
 * everyone unless the caller is a guest outside that group, who then sees only themself, bots,
 * and people they share a channel or a direct message conversation with.
 */
export class UserAccess {
  constructor(
    readonly callerId: number,
    /** null: unrestricted. */
    private readonly visible: ReadonlySet<number> | null,
  ) {}

  get restricted(): boolean {
    return this.visible !== null;
  }

  canAccess(target: Pick<User, 'id' | 'is_bot'>): boolean {
    return this.visible === null || !!target.is_bot || target.id === this.callerId || this.visible.has(target.id);
  }
}

export function callerCanAccessAllUsers(realm: Realm, caller: Pick<User, 'id' | 'role'>, m: GroupMembership): boolean {
  if (caller.role !== ROLE_GUEST) return true;
  return userHasGroupPermission(
    m,
    realmSettings(realm).can_access_all_users_group,
    caller,
    REALM_GROUP_SETTING_CONFIG.can_access_all_users_group,
  );
}

export async function loadUserAccess(db: Tx, realm: Realm, caller: Pick<User, 'id' | 'role'>, m?: GroupMembership): Promise<UserAccess> {
  if (caller.role !== ROLE_GUEST) return new UserAccess(caller.id, null);
  const membership = m ?? (await loadGroupMembership(db, realm.id));
  if (callerCanAccessAllUsers(realm, caller, membership)) return new UserAccess(caller.id, null);
  return new UserAccess(caller.id, new Set(await fetchUserIdsSharingConversations(db, realm.id, caller.id)));
}

/**
 * Who may see which users, loaded once for a realm: the recipients of events about users
 * (Zulip's get_user_ids_who_can_access_user). Reuse one index for many targets.
 */
export class AccessorIndex {
  constructor(
    private readonly db: Tx,
    private readonly realmId: number,
    private readonly active: readonly { id: number; role: number }[],
    /** Active guests outside can_access_all_users_group. */
    private readonly restrictedGuests: readonly { id: number }[],
  ) {}

  /** Active users who may see `target`. */
  async userIds(target: Pick<User, 'id' | 'is_bot'>): Promise<number[]> {
    const guests = this.restrictedGuests.filter((g) => g.id !== target.id);
    if (target.is_bot || guests.length === 0) return this.active.map((u) => u.id);
    const sharing = new Set(await fetchUserIdsSharingConversations(this.db, this.realmId, target.id));
    const excluded = new Set(guests.filter((g) => !sharing.has(g.id)).map((g) => g.id));
    return this.active.filter((u) => !excluded.has(u.id)).map((u) => u.id);
  }
}

export async function loadAccessorIndex(db: Tx, realm: Realm): Promise<AccessorIndex> {
  const active = await fetchActiveUserRoles(db, realm.id);
  const guests = active.filter((u) => u.role === ROLE_GUEST);
  if (guests.length === 0) return new AccessorIndex(db, realm.id, active, []);
  const m = await loadGroupMembership(db, realm.id);
  return new AccessorIndex(db, realm.id, active, guests.filter((g) => !callerCanAccessAllUsers(realm, g, m)));
}

/** Active users who may see `target`; for many targets, use loadAccessorIndex once. */
export async function userIdsWhoCanAccess(db: Tx, realm: Realm, target: Pick<User, 'id' | 'is_bot'>): Promise<number[]> {
  return (await loadAccessorIndex(db, realm)).userIds(target);
}

export interface AccessUserOptions {
  allowDeactivated?: boolean;
  allowBots: boolean;
  /** Require the right to administer the target (canAdminUser). */
  forAdmin: boolean;
}

const noSuchUser = (): JsonableError => badRequest('No such user');

/** Zulip's access_user_common: the checks once the target row is known. */
export async function checkUserAccess(db: Tx, realm: Realm, caller: User, target: User, opts: AccessUserOptions): Promise<User> {
  if (target.is_bot && !opts.allowBots) throw noSuchUser();
  if (!target.is_active && !opts.allowDeactivated) throw badRequest('User is deactivated');
  if (!opts.forAdmin) {
    if (!(await loadUserAccess(db, realm, caller)).canAccess(target)) throw insufficientPermission();
    return target;
  }
  if (!canAdminUser(caller, target)) throw insufficientPermission();
  return target;
}

/**
 * The only way to get another user for a caller by ID (Zulip's access_user_by_id): the user
 * must be in the caller's realm, and the options say which kinds of user are acceptable.
 */
export async function accessUserById(db: Tx, realm: Realm, caller: User, userId: number, opts: AccessUserOptions): Promise<User> {
  const target = Number.isSafeInteger(userId) ? await fetchUserById(db, realm.id, userId) : undefined;
  if (!target) throw noSuchUser();
  return checkUserAccess(db, realm, caller, target, opts);
}

/**
 * A user by email (Zulip's access_user_by_email): a dummy `user{id}@{host}` address works for
 * every user; a real address only finds users whose email visibility lets the caller see it,
 * so the answer never reveals a hidden address.
 */
export async function accessUserByEmail(
  db: Tx,
  config: Config,
  realm: Realm,
  caller: User,
  email: string,
  opts: AccessUserOptions,
): Promise<User> {
  const dummyId = parseDummyEmail(config, realm, email);
  if (dummyId !== null) return accessUserById(db, realm, caller, dummyId, opts);
  const target = await fetchUserByDeliveryEmail(db, realm.id, email.trim());
  if (!target || !canAccessDeliveryEmail(caller, target)) throw noSuchUser();
  return checkUserAccess(db, realm, caller, target, opts);
}
