import { sql } from 'kysely';
import type { Tx } from '../index.js';
import type { NewUser, User, UserUpdate } from '../tables.js';
import { cachedRead } from '../cache.js';

export async function fetchUserById(db: Tx, realmId: number, userId: number): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('realm_id', '=', realmId).where('id', '=', userId).executeTakeFirst();
}

/**
 * The realm's users whose API email or real (delivery) email is one of `lowercased`: one
 * index search for each kind of address (migration 0107), as a UNION. Written as an OR of
 * the two, the query read every user of the organization on SQLite, whose planner has no
 * statistics to prefer the two searches.
 */
export function usersByEitherEmail(db: Tx, realmId: number, lowercased: readonly string[]) {
  const byApiEmail = db.selectFrom('users').selectAll().where('realm_id', '=', realmId).where('email_lc', 'in', lowercased);
  const byRealEmail = db.selectFrom('users').selectAll().where('realm_id', '=', realmId).where(sql`lower(delivery_email)`, 'in', lowercased);
  return byApiEmail.union(byRealEmail);
}

/** Matches the API email or the real (delivery) email, case-insensitively (the oldest user if both match). */
export async function fetchUserByEmail(db: Tx, realmId: number, email: string): Promise<User | undefined> {
  return usersByEitherEmail(db, realmId, [email.toLowerCase()]).orderBy('id').limit(1).executeTakeFirst();
}

/** The realm's user with this API key (zulip-mobile authenticates image URLs with `?api_key=` alone). */
export async function fetchUserByApiKey(db: Tx, realmId: number, apiKey: string): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('realm_id', '=', realmId).where('api_key', '=', apiKey).executeTakeFirst();
}

/** Matches only the real (delivery) email, case-insensitively. */
export async function fetchUserByDeliveryEmail(db: Tx, realmId: number, email: string): Promise<User | undefined> {
  return db
    .selectFrom('users')
    .selectAll()
    .where('realm_id', '=', realmId)
    .where(sql`lower(delivery_email)`, '=', email.toLowerCase())
    .executeTakeFirst();
}

/**
 * The oldest active user whose full name is `name` or whose API email starts with it, both
 * case-insensitively (Zulip's guess at the account behind a Jira username).
 */
export async function fetchActiveUserByNameOrEmailPrefix(db: Tx, realmId: number, name: string): Promise<User | undefined> {
  const lower = name.toLowerCase();
  const prefix = lower.replace(/[\\%_]/g, (c) => `\\${c}`) + '%';
  return db
    .selectFrom('users')
    .selectAll()
    .where('realm_id', '=', realmId)
    .where('is_active', '=', 1)
    .where((eb) => eb.or([eb(sql`lower(full_name)`, '=', lower), eb(sql`email_lc`, 'like', sql`${prefix} escape '\\'`)]))
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
}

/** Whether an address is taken in the realm, as an API email or a delivery email. */
export async function emailInUse(db: Tx, realmId: number, email: string, exceptUserId?: number): Promise<boolean> {
  const users = await usersByEitherEmail(db, realmId, [email.toLowerCase()]).execute();
  return users.some((u) => u.id !== exceptUserId);
}

/** IDs per query: a request may name more users than SQLite (32,766) or PostgreSQL (65,535) take as parameters. */
const IDS_PER_QUERY = 5000;

export async function fetchUsersByIds(db: Tx, realmId: number, ids: readonly number[]): Promise<User[]> {
  if (ids.length === 0) return [];
  if (ids.length <= IDS_PER_QUERY) {
    return db.selectFrom('users').selectAll().where('realm_id', '=', realmId).where('id', 'in', [...ids]).orderBy('id').execute();
  }
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  const out: User[] = [];
  for (let i = 0; i < sorted.length; i += IDS_PER_QUERY) {
    out.push(...(await fetchUsersByIds(db, realmId, sorted.slice(i, i + IDS_PER_QUERY))));
  }
  return out;
}

/** Every user of the realm, in ID order: cached (db/cache.ts), as register and user lists read it constantly. */
export const fetchRealmUsers = cachedRead('realm_users', ['users'], (realmId: number) => String(realmId), fetchRealmUsersUncached);

async function fetchRealmUsersUncached(db: Tx, realmId: number): Promise<User[]> {
  return db.selectFrom('users').selectAll().where('realm_id', '=', realmId).orderBy('id').execute();
}

export async function fetchActiveUsers(db: Tx, realmId: number): Promise<User[]> {
  return db.selectFrom('users').selectAll().where('realm_id', '=', realmId).where('is_active', '=', 1).orderBy('id').execute();
}

/** The set of an organization's active people (bots left out). */
export async function fetchActiveHumanIdSet(db: Tx, realmId: number): Promise<Set<number>> {
  const rows = await db.selectFrom('users').select('id').where('realm_id', '=', realmId).where('is_active', '=', 1).where('is_bot', '=', 0).execute();
  return new Set(rows.map((r) => r.id));
}

/** An organization's active users (at most `limit` of them, the first by ID, when given). */
export async function fetchActiveUserIds(db: Tx, realmId: number, limit?: number): Promise<number[]> {
  let q = db.selectFrom('users').select('id').where('realm_id', '=', realmId).where('is_active', '=', 1).orderBy('id');
  if (limit !== undefined) q = q.limit(limit);
  return (await q.execute()).map((r) => r.id);
}

export async function fetchActiveUserRoles(db: Tx, realmId: number): Promise<{ id: number; role: number }[]> {
  return db.selectFrom('users').select(['id', 'role']).where('realm_id', '=', realmId).where('is_active', '=', 1).orderBy('id').execute();
}

export async function fetchActiveUserNames(db: Tx, realmId: number): Promise<string[]> {
  const rows = await db.selectFrom('users').select('full_name').where('realm_id', '=', realmId).where('is_active', '=', 1).execute();
  return rows.map((r) => r.full_name);
}

/** A user's active bots, oldest first (GET /bots: Zulip orders them by date_joined). */
export async function fetchActiveBotsOwnedBy(db: Tx, realmId: number, ownerId: number): Promise<User[]> {
  return db
    .selectFrom('users')
    .selectAll()
    .where('realm_id', '=', realmId)
    .where('bot_owner_id', '=', ownerId)
    .where('is_bot', '=', 1)
    .where('is_active', '=', 1)
    .orderBy('date_joined')
    .orderBy('id')
    .execute();
}

export async function insertUser(db: Tx, row: NewUser): Promise<User> {
  return db.insertInto('users').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateUserRow(db: Tx, userId: number, changes: UserUpdate): Promise<void> {
  await db.updateTable('users').set(changes).where('id', '=', userId).execute();
}

export async function countActiveOwners(db: Tx, realmId: number): Promise<number> {
  const r = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('realm_id', '=', realmId)
    .where('role', '=', 100)
    .where('is_active', '=', 1)
    .where('is_bot', '=', 0)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Active accounts of the organization's own users and bots (system bots are not members). */
export async function countActiveUsers(db: Tx, realmId: number): Promise<number> {
  const r = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('realm_id', '=', realmId)
    .where('is_active', '=', 1)
    .where('is_system_bot', '=', 0)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * Users who share something with `userId`: a subscription to the same channel, or a direct
 * message conversation. This is what a guest restricted by can_access_all_users_group may see.
 */
export async function fetchUserIdsSharingConversations(db: Tx, realmId: number, userId: number): Promise<number[]> {
  const [subscribers, dmKeys] = await Promise.all([
    db
      .selectFrom('subscriptions as mine')
      .innerJoin('subscriptions as theirs', 'theirs.stream_id', 'mine.stream_id')
      .select('theirs.user_id')
      .distinct()
      .where('mine.user_id', '=', userId)
      .where('mine.realm_id', '=', realmId)
      .where('mine.active', '=', 1)
      .where('theirs.active', '=', 1)
      .execute(),
    db
      .selectFrom('user_messages')
      .innerJoin('messages', 'messages.id', 'user_messages.message_id')
      .select('messages.dm_key')
      .distinct()
      .where('user_messages.user_id', '=', userId)
      // is_private: the partial index user_messages_private holds only these rows.
      .where(sql<boolean>`(user_messages.flags & 256) <> 0`)
      .execute(),
  ]);
  const out = new Set<number>(subscribers.map((r) => r.user_id));
  for (const { dm_key } of dmKeys) {
    for (const id of (dm_key ?? '').split(',')) if (id) out.add(Number(id));
  }
  return [...out];
}

/** The channels a user is actively subscribed to, for subscriber-list events on (de)activation. */
export async function fetchSubscribedStreams(
  db: Tx,
  userId: number,
): Promise<{ stream_id: number; invite_only: number }[]> {
  return db
    .selectFrom('subscriptions')
    .innerJoin('streams', 'streams.id', 'subscriptions.stream_id')
    .select(['subscriptions.stream_id', 'streams.invite_only'])
    .where('subscriptions.user_id', '=', userId)
    .where('subscriptions.active', '=', 1)
    .where('streams.deactivated', '=', 0)
    .orderBy('subscriptions.stream_id')
    .execute();
}

/** Active subscribers of the given channels, other than `exceptUserId`. */
export async function fetchActiveSubscriberIds(db: Tx, streamIds: readonly number[], exceptUserId: number): Promise<{ stream_id: number; user_id: number }[]> {
  if (streamIds.length === 0) return [];
  return db
    .selectFrom('subscriptions')
    .innerJoin('users', 'users.id', 'subscriptions.user_id')
    .select(['subscriptions.stream_id', 'subscriptions.user_id'])
    .where('subscriptions.stream_id', 'in', [...streamIds])
    .where('subscriptions.active', '=', 1)
    .where('users.is_active', '=', 1)
    .where('subscriptions.user_id', '!=', exceptUserId)
    .execute();
}

export async function fetchMaxMessageIdForUser(db: Tx, userId: number): Promise<number> {
  const r = await db
    .selectFrom('user_messages')
    .select((eb) => eb.fn.max('message_id').as('m'))
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return r?.m === null || r?.m === undefined ? -1 : Number(r.m);
}

export async function insertAuditLog(
  db: Tx,
  row: { realm_id: number; acting_user_id: number | null; modified_user_id: number | null; event_type: string; event_time: number; extra_data?: string },
): Promise<void> {
  await db.insertInto('audit_log').values({ extra_data: '{}', ...row }).execute();
}

/** Active human accounts with this delivery email in organizations that are not deactivated. */
export async function countActiveAccountsByDeliveryEmail(db: Tx, email: string): Promise<number> {
  const row = await db
    .selectFrom('users')
    .innerJoin('realms', 'realms.id', 'users.realm_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(sql`lower(users.delivery_email)`, '=', email.toLowerCase())
    .where('users.is_active', '=', 1)
    .where('users.is_bot', '=', 0)
    .where('realms.deactivated', '=', 0)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
