import type { Tx } from '../index.js';
import type { Message, Realm, Stream, User } from '../tables.js';

export async function fetchActiveRealms(db: Tx): Promise<Realm[]> {
  return db.selectFrom('realms').selectAll().where('deactivated', '=', 0).orderBy('id').execute();
}

/**
 * The realm's active human accounts with an email address that neither were active after
 * `cutoff` (presence) nor got a digest after `sentAfter`, by ID.
 */
export async function fetchDigestCandidates(db: Tx, realmId: number, cutoff: number, sentAfter: number): Promise<User[]> {
  return db
    .selectFrom('users')
    .selectAll('users')
    .where('users.realm_id', '=', realmId)
    .where('users.is_active', '=', 1)
    .where('users.is_bot', '=', 0)
    .where('users.delivery_email', '!=', '')
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('presence').select('presence.user_id').whereRef('presence.user_id', '=', 'users.id').where('presence.last_active_time', '>', cutoff))),
    )
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('digest_emails_sent').select('digest_emails_sent.user_id').whereRef('digest_emails_sent.user_id', '=', 'users.id').where('digest_emails_sent.sent_at', '>', sentAfter))),
    )
    .orderBy('users.id')
    .execute();
}

/**
 * Takes the user's digest for this run: one statement that succeeds for one process only
 * (it inserts the row, or moves an old one forward, unless a digest was sent after `sentAfter`).
 */
export async function claimDigest(db: Tx, userId: number, at: number, sentAfter: number): Promise<boolean> {
  const r = await db
    .insertInto('digest_emails_sent')
    .values({ user_id: userId, sent_at: at })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ sent_at: at }).where('digest_emails_sent.sent_at', '<=', sentAfter))
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) === 1;
}

/** Channels the user is subscribed to and has not muted. */
export async function fetchUnmutedSubscribedStreamIds(db: Tx, userId: number): Promise<number[]> {
  const rows = await db.selectFrom('subscriptions').select('stream_id').where('user_id', '=', userId).where('active', '=', 1).where('is_muted', '=', 0).execute();
  return rows.map((r) => Number(r.stream_id));
}

/** Channel messages sent after `cutoff` in these channels, oldest first, with whether the sender is a bot. */
export async function fetchChannelMessagesSince(db: Tx, realmId: number, streamIds: readonly number[], cutoff: number): Promise<(Message & { sender_name: string; sender_is_bot: number })[]> {
  if (streamIds.length === 0) return [];
  return db
    .selectFrom('messages')
    .innerJoin('users', 'users.id', 'messages.sender_id')
    .selectAll('messages')
    .select(['users.full_name as sender_name', 'users.is_bot as sender_is_bot'])
    .where('messages.realm_id', '=', realmId)
    .where('messages.type', '=', 'stream')
    .where('messages.stream_id', 'in', [...streamIds])
    .where('messages.date_sent', '>', cutoff)
    .orderBy('messages.id')
    .execute();
}

/** Active channels of the realm created after `cutoff`. */
export async function fetchChannelsCreatedSince(db: Tx, realmId: number, cutoff: number): Promise<Stream[]> {
  return db.selectFrom('streams').selectAll().where('realm_id', '=', realmId).where('deactivated', '=', 0).where('date_created', '>', cutoff).orderBy('id').execute();
}
