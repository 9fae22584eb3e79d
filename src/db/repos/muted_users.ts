import { sql } from 'kysely';
import type { Tx } from '../index.js';

export interface MutedUserRow {
  muted_user_id: number;
  date_muted: number;
}

export async function fetchMutedUsers(db: Tx, userId: number): Promise<MutedUserRow[]> {
  return db.selectFrom('muted_users').select(['muted_user_id', 'date_muted']).where('user_id', '=', userId).orderBy('muted_user_id').execute();
}

export async function isUserMuted(db: Tx, userId: number, mutedUserId: number): Promise<boolean> {
  const row = await db.selectFrom('muted_users').select('user_id').where('user_id', '=', userId).where('muted_user_id', '=', mutedUserId).executeTakeFirst();
  return row !== undefined;
}

/** False when the mute already existed (a concurrent request). */
export async function insertMutedUser(db: Tx, userId: number, mutedUserId: number, dateMuted: number): Promise<boolean> {
  const r = await db
    .insertInto('muted_users')
    .values({ user_id: userId, muted_user_id: mutedUserId, date_muted: dateMuted })
    .onConflict((oc) => oc.columns(['user_id', 'muted_user_id']).doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function deleteMutedUser(db: Tx, userId: number, mutedUserId: number): Promise<void> {
  await db.deleteFrom('muted_users').where('user_id', '=', userId).where('muted_user_id', '=', mutedUserId).execute();
}

/** The user's unread messages from one sender (marked read when that sender is muted). */
export async function fetchUnreadMessageIdsFrom(db: Tx, userId: number, senderId: number): Promise<number[]> {
  const rows = await db
    .selectFrom('user_messages')
    .innerJoin('messages', 'messages.id', 'user_messages.message_id')
    .select('user_messages.message_id')
    .where('user_messages.user_id', '=', userId)
    .where('messages.sender_id', '=', senderId)
    // The read bit; the partial index user_messages_unread covers this test.
    .where(sql<boolean>`(user_messages.flags & 1) = 0`)
    .orderBy('user_messages.message_id')
    .execute();
  return rows.map((r) => r.message_id);
}
