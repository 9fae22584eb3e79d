import type { Config } from '../config.js';
import type { Tx } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { fetchRealmUsers, fetchUsersByIds } from '../db/repos/users.js';
import { fetchCustomProfileFields, fetchCustomProfileValues } from '../db/repos/custom_profile_fields.js';
import { loadUserAccess } from './access/users.js';
import { formatInaccessibleUser, formatUser, profileDataByUser } from './format/users.js';
import { SYSTEM_BOTS, fetchSystemBot, type SystemBotName } from './system_bots.js';
import { cachedRead } from '../db/cache.js';

export interface UsersForApiOptions {
  clientGravatar: boolean;
  includeCustomProfileFields: boolean;
  /** Only these users (GET /users?user_ids=, or one target). */
  userIds?: readonly number[];
  /**
   * Leave out users the caller may not see (the user_list_incomplete capability); otherwise
   * they appear as "Unknown user" placeholders, as Zulip does for older clients.
   */
  userListIncomplete?: boolean;
  omitIsActive?: boolean;
}

/**
 * User dicts for a caller (Zulip's get_users_for_api), in user ID order: the one read path
 * behind GET /users, GET /users/{id}, GET /users/me and register's realm_users. Rows the caller
 * may not access per can_access_all_users_group are dropped or replaced by placeholders.
 */
/** A user's dict for a caller; `json` is the dict already serialized, when cached. */
export interface UserForApi {
  user: User | null;
  dict: Record<string, unknown>;
  json?: string;
}

export async function getUsersForApi(
  db: Tx,
  config: Config,
  realm: Realm,
  caller: User | null,
  opts: UsersForApiOptions,
): Promise<UserForApi[]> {
  // System bots are listed apart (register's cross_realm_bots), as Zulip's live in another realm;
  // asked for by ID, they are found like anyone else.
  const access = caller ? await loadUserAccess(db, realm, caller) : null;
  if (!opts.userIds && caller && !access?.restricted) return everyoneForApi(db, config, realm, caller, opts);
  const rows = opts.userIds
    ? await fetchUsersByIds(db, realm.id, opts.userIds)
    : (await fetchRealmUsers(db, realm.id)).filter((u) => !u.is_system_bot);
  let profileData;
  if (opts.includeCustomProfileFields && caller) {
    const onlyIds = opts.userIds ? rows.map((r) => r.id) : undefined;
    const [fields, values] = await Promise.all([fetchCustomProfileFields(db, realm.id), fetchCustomProfileValues(db, realm.id, onlyIds)]);
    profileData = profileDataByUser(fields, values);
  }
  const ctx = { config, realm, viewer: caller, clientGravatar: opts.clientGravatar, profileData, omitIsActive: opts.omitIsActive };
  const out: UserForApi[] = [];
  for (const row of rows) {
    if (access && !access.canAccess(row)) {
      if (opts.userListIncomplete ?? true) continue;
      out.push({ user: null, dict: formatInaccessibleUser(config, realm, row.id) });
      continue;
    }
    out.push({ user: row, dict: formatUser(row, ctx) });
  }
  return out;
}

/** What a role's user list depends on, and its cache key. */
const ROLE_LIST_DEPS = ['users', 'custom_profile_values', 'custom_profile_fields', 'realms'];
const roleListKey = (_config: Config, realm: Realm, role: number, opts: UsersForApiOptions): string =>
  `${realm.id}:${role}:${opts.clientGravatar}:${opts.includeCustomProfileFields}:${!!opts.omitIsActive}`;

/**
 * Every user's dict as seen by callers of one role: the same for all of them except for the
 * caller's own entry (one always sees one's own email), so it is built once and cached
 * (db/cache.ts) until a user, a profile value or the organization changes. Register formats
 * the whole organization on every call otherwise.
 */
const realmUserDictsByRole = cachedRead(
  'realm_user_dicts',
  ROLE_LIST_DEPS,
  roleListKey,
  async (db: Tx, config: Config, realm: Realm, role: number, opts: UsersForApiOptions) => {
    const rows = (await fetchRealmUsers(db, realm.id)).filter((u) => !u.is_system_bot);
    const profileData = opts.includeCustomProfileFields
      ? profileDataByUser(...(await Promise.all([fetchCustomProfileFields(db, realm.id), fetchCustomProfileValues(db, realm.id)])))
      : undefined;
    // A viewer who is none of the users: delivery_email by role alone.
    const ctx = { config, realm, viewer: { id: 0, role }, clientGravatar: opts.clientGravatar, profileData, omitIsActive: opts.omitIsActive };
    return rows.map((row): UserForApi => {
      const dict = formatUser(row, ctx);
      return { user: row, dict, json: JSON.stringify(dict) };
    });
  },
);

/** The caller's own dict: the only one of a role's list that differs for them (their own email). */
async function ownDict(db: Tx, config: Config, realm: Realm, caller: User, self: User, opts: UsersForApiOptions): Promise<Record<string, unknown>> {
  const profileData = opts.includeCustomProfileFields
    ? profileDataByUser(await fetchCustomProfileFields(db, realm.id), await fetchCustomProfileValues(db, realm.id, [caller.id]))
    : undefined;
  return formatUser(self, { config, realm, viewer: caller, clientGravatar: opts.clientGravatar, profileData, omitIsActive: opts.omitIsActive });
}

async function everyoneForApi(
  db: Tx,
  config: Config,
  realm: Realm,
  caller: User,
  opts: UsersForApiOptions,
): Promise<UserForApi[]> {
  const list = await realmUserDictsByRole(db, config, realm, caller.role, opts);
  const own = list.findIndex((e) => e.user?.id === caller.id);
  if (own < 0) return list;
  const out = [...list];
  const self = out[own]!.user!;
  out[own] = { user: self, dict: await ownDict(db, config, realm, caller, self, opts) };
  return out;
}

/**
 * A role's list as register sends it: the active users' JSON joined once, with where each
 * user's entry lies in it, and the deactivated users' dicts. Joining a thousand entries on
 * every register had been a tenth of its CPU.
 */
const realmUsersJsonByRole = cachedRead(
  'realm_users_json',
  ROLE_LIST_DEPS,
  roleListKey,
  async (db: Tx, config: Config, realm: Realm, role: number, opts: UsersForApiOptions) => {
    const list = await realmUserDictsByRole(db, config, realm, role, opts);
    const parts: string[] = [];
    const spans = new Map<number, { start: number; end: number; user: User }>();
    const nonActive: Record<string, unknown>[] = [];
    let length = 0;
    for (const e of list) {
      if (!e.user!.is_active) {
        nonActive.push(e.dict);
        continue;
      }
      if (parts.length > 0) length += 1;
      spans.set(e.user!.id, { start: length, end: length + e.json!.length, user: e.user! });
      parts.push(e.json!);
      length += e.json!.length;
    }
    return { json: parts.join(','), spans, nonActive };
  },
);

/**
 * register's realm_users (as JSON, without brackets) and realm_non_active_users, for a caller
 * who may see everyone; null for one whose view of the organization is restricted (then
 * getUsersForApi gives the list).
 */
export async function registerUsersForApi(
  db: Tx,
  config: Config,
  realm: Realm,
  caller: User,
  opts: UsersForApiOptions,
): Promise<{ activeJson: string; nonActive: readonly Record<string, unknown>[] } | null> {
  if ((await loadUserAccess(db, realm, caller))?.restricted) return null;
  const cached = await realmUsersJsonByRole(db, config, realm, caller.role, opts);
  const own = cached.spans.get(caller.id);
  if (!own) return { activeJson: cached.json, nonActive: cached.nonActive };
  const ownJson = JSON.stringify(await ownDict(db, config, realm, caller, own.user, opts));
  return { activeJson: `${cached.json.slice(0, own.start)}${ownJson}${cached.json.slice(own.end)}`, nonActive: cached.nonActive };
}

/**
 * register's cross_realm_bots: Notification Bot, Welcome Bot and Email Gateway (created on first use), with
 * no owner and `is_system_bot`, as Zulip's get_cross_realm_dicts.
 */
export async function getSystemBotsForApi(db: Tx, config: Config, realm: Realm, caller: User): Promise<Record<string, unknown>[]> {
  const bots = [];
  for (const name of Object.keys(SYSTEM_BOTS) as SystemBotName[]) bots.push(await fetchSystemBot(db, config, realm, name));
  return bots
    .sort((a, b) => a.id - b.id)
    .map((bot) => ({ ...formatUser({ ...bot, bot_owner_id: null }, { config, realm, viewer: caller, clientGravatar: false }), is_system_bot: true }));
}

/** One user's dict for a caller who was already granted access to that user. */
export async function getUserForApi(
  db: Tx,
  config: Config,
  realm: Realm,
  caller: User,
  target: User,
  opts: { clientGravatar: boolean; includeCustomProfileFields: boolean },
): Promise<Record<string, unknown>> {
  let profileData;
  if (opts.includeCustomProfileFields) {
    const [fields, values] = await Promise.all([fetchCustomProfileFields(db, realm.id), fetchCustomProfileValues(db, realm.id, [target.id])]);
    profileData = profileDataByUser(fields, values);
  }
  return formatUser(target, { config, realm, viewer: caller, clientGravatar: opts.clientGravatar, profileData });
}
