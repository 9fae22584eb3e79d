import type { Updateable } from 'kysely';
import type { Tx } from '../index.js';
import type { Subscription, SubscriptionTable } from '../tables.js';
import { chunks } from './streams.js';
import { cachedRead } from '../cache.js';

export type SubscriptionUpdate = Updateable<SubscriptionTable>;

/** Per-subscription settings the messages area needs to deliver and notify. */
export interface FanoutSubscription {
  user_id: number;
  is_muted: number;
  desktop_notifications: number | null;
  audible_notifications: number | null;
  push_notifications: number | null;
  email_notifications: number | null;
  wildcard_mentions_notify: number | null;
}

/** Every subscription row of a user, active or not (unsubscribed rows keep personal settings). */
export async function fetchUserSubscriptionRows(db: Tx, userId: number): Promise<Subscription[]> {
  return db.selectFrom('subscriptions').selectAll().where('user_id', '=', userId).execute();
}

export async function fetchSubscriptionRow(db: Tx, userId: number, streamId: number): Promise<Subscription | undefined> {
  return db.selectFrom('subscriptions').selectAll().where('user_id', '=', userId).where('stream_id', '=', streamId).executeTakeFirst();
}

/** Existing rows (active or not) for any of these users in any of these channels. */
export async function fetchSubscriptionRows(db: Tx, userIds: readonly number[], streamIds: readonly number[]): Promise<Subscription[]> {
  if (userIds.length === 0 || streamIds.length === 0) return [];
  return db
    .selectFrom('subscriptions')
    .selectAll()
    .where('user_id', 'in', [...new Set(userIds)])
    .where('stream_id', 'in', [...new Set(streamIds)])
    .execute();
}

/** IDs of the channels a user is actively subscribed to. */
export async function fetchSubscribedStreamIdSet(db: Tx, userId: number): Promise<Set<number>> {
  const rows = await db.selectFrom('subscriptions').select('stream_id').where('user_id', '=', userId).where('active', '=', 1).execute();
  return new Set(rows.map((r) => r.stream_id));
}

/**
 * Active subscribers (active users only) of the given channels, by channel, in ascending
 * user ID order; every requested channel has an entry.
 */
export async function fetchSubscriberIdsByStream(db: Tx, streamIds: readonly number[]): Promise<Map<number, number[]>> {
  const out = new Map<number, number[]>(streamIds.map((id) => [id, []]));
  if (streamIds.length === 0) return out;
  const rows = await db
    .selectFrom('subscriptions')
    .innerJoin('users', 'users.id', 'subscriptions.user_id')
    .select(['subscriptions.stream_id', 'subscriptions.user_id'])
    .where('subscriptions.stream_id', 'in', [...new Set(streamIds)])
    .where('subscriptions.active', '=', 1)
    .where('users.is_active', '=', 1)
    .orderBy('subscriptions.user_id')
    .execute();
  for (const r of rows) out.get(r.stream_id)?.push(r.user_id);
  return out;
}

/** Active subscribers of every channel of a realm, by channel (for POST /register include_subscribers). */
/** Active subscribers (active users) of every channel of the realm: cached (db/cache.ts) for register. */
export const fetchRealmSubscriberIds = cachedRead(
  'realm_subscribers',
  ['subscriptions', 'users'],
  (realmId: number) => String(realmId),
  fetchRealmSubscriberIdsUncached,
);

async function fetchRealmSubscriberIdsUncached(db: Tx, realmId: number): Promise<Map<number, number[]>> {
  const rows = await db
    .selectFrom('subscriptions')
    .innerJoin('users', 'users.id', 'subscriptions.user_id')
    .select(['subscriptions.stream_id', 'subscriptions.user_id'])
    .where('subscriptions.realm_id', '=', realmId)
    .where('subscriptions.active', '=', 1)
    .where('users.is_active', '=', 1)
    .orderBy('subscriptions.user_id')
    .execute();
  const out = new Map<number, number[]>();
  for (const r of rows) {
    let list = out.get(r.stream_id);
    if (!list) out.set(r.stream_id, (list = []));
    list.push(r.user_id);
  }
  return out;
}

/** Number of active subscribers (active users, bots included) per channel; every requested channel has an entry. */
export async function countSubscribersByStream(db: Tx, streamIds: readonly number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>(streamIds.map((id) => [id, 0]));
  if (streamIds.length === 0) return out;
  const rows = await db
    .selectFrom('subscriptions')
    .innerJoin('users', 'users.id', 'subscriptions.user_id')
    .select(['subscriptions.stream_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('subscriptions.stream_id', 'in', [...new Set(streamIds)])
    .where('subscriptions.active', '=', 1)
    .where('users.is_active', '=', 1)
    .groupBy('subscriptions.stream_id')
    .execute();
  for (const r of rows) out.set(r.stream_id, Number(r.n));
  return out;
}

/** Active subscribers (active users) of every channel of an organization that has any. */
export async function countSubscribersByRealmStream(db: Tx, realmId: number): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('subscriptions')
    .innerJoin('users', 'users.id', 'subscriptions.user_id')
    .select(['subscriptions.stream_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('subscriptions.realm_id', '=', realmId)
    .where('subscriptions.active', '=', 1)
    .where('users.is_active', '=', 1)
    .groupBy('subscriptions.stream_id')
    .execute();
  return new Map(rows.map((r) => [r.stream_id, Number(r.n)]));
}

/** The subscribers a channel message is delivered to, with their per-channel notification settings. */
export async function fetchFanoutSubscriptions(db: Tx, streamId: number): Promise<FanoutSubscription[]> {
  return db
    .selectFrom('subscriptions')
    .innerJoin('users', 'users.id', 'subscriptions.user_id')
    .select([
      'subscriptions.user_id',
      'subscriptions.is_muted',
      'subscriptions.desktop_notifications',
      'subscriptions.audible_notifications',
      'subscriptions.push_notifications',
      'subscriptions.email_notifications',
      'subscriptions.wildcard_mentions_notify',
    ])
    .where('subscriptions.stream_id', '=', streamId)
    .where('subscriptions.active', '=', 1)
    .where('users.is_active', '=', 1)
    .orderBy('subscriptions.user_id')
    .execute();
}

/** Colors each user already uses, active subscriptions or not. */
export async function fetchUsedColors(db: Tx, userIds: readonly number[]): Promise<Map<number, Set<string>>> {
  const out = new Map<number, Set<string>>(userIds.map((id) => [id, new Set<string>()]));
  if (userIds.length === 0) return out;
  const rows = await db.selectFrom('subscriptions').select(['user_id', 'color']).where('user_id', 'in', [...new Set(userIds)]).execute();
  for (const r of rows) out.get(r.user_id)?.add(r.color);
  return out;
}

export async function insertSubscriptions(
  db: Tx,
  rows: readonly { user_id: number; stream_id: number; realm_id: number; color: string }[],
): Promise<void> {
  for (const part of chunks(rows)) {
    // A concurrent request may have subscribed the same user meanwhile: the result is the same.
    await db
      .insertInto('subscriptions')
      .values(part.map((r) => ({ ...r, active: 1 })))
      .onConflict((oc) => oc.columns(['user_id', 'stream_id']).doUpdateSet({ active: 1 }))
      .execute();
  }
}

/** Sets `active` on the given (user, channel) pairs. */
export async function setSubscriptionsActive(
  db: Tx,
  pairs: readonly { user_id: number; stream_id: number }[],
  active: boolean,
): Promise<void> {
  const byStream = new Map<number, number[]>();
  for (const p of pairs) {
    let list = byStream.get(p.stream_id);
    if (!list) byStream.set(p.stream_id, (list = []));
    list.push(p.user_id);
  }
  for (const [streamId, userIds] of byStream) {
    for (const part of chunks(userIds)) {
      await db
        .updateTable('subscriptions')
        .set({ active: active ? 1 : 0 })
        .where('stream_id', '=', streamId)
        .where('user_id', 'in', part)
        .execute();
    }
  }
}

export async function updateSubscriptionRow(db: Tx, userId: number, streamId: number, changes: SubscriptionUpdate): Promise<void> {
  await db.updateTable('subscriptions').set(changes).where('user_id', '=', userId).where('stream_id', '=', streamId).execute();
}
