import type { Tx } from '../index.js';
import type { ReactionRow } from './messages.js';

/** The user's reaction with this emoji on the message, if any. */
export async function fetchUserReaction(
  db: Tx,
  messageId: number,
  userId: number,
  emojiCode: string,
  reactionType: string,
): Promise<ReactionRow | undefined> {
  return db
    .selectFrom('reactions')
    .select(['message_id', 'user_id', 'emoji_name', 'emoji_code', 'reaction_type'])
    .where('message_id', '=', messageId)
    .where('user_id', '=', userId)
    .where('emoji_code', '=', emojiCode)
    .where('reaction_type', '=', reactionType)
    .executeTakeFirst();
}

/** The oldest reaction with this emoji on the message (whose name later votes reuse). */
export async function fetchFirstReactionWithEmoji(db: Tx, messageId: number, emojiCode: string, reactionType: string): Promise<ReactionRow | undefined> {
  return db
    .selectFrom('reactions')
    .select(['message_id', 'user_id', 'emoji_name', 'emoji_code', 'reaction_type'])
    .where('message_id', '=', messageId)
    .where('emoji_code', '=', emojiCode)
    .where('reaction_type', '=', reactionType)
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
}

/** Adds the reaction; false when an identical one exists (a concurrent request won). */
export async function insertReaction(db: Tx, row: ReactionRow): Promise<boolean> {
  const r = await db
    .insertInto('reactions')
    .values(row)
    .onConflict((oc) => oc.columns(['message_id', 'user_id', 'reaction_type', 'emoji_code']).doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** Removes the reaction; false when it was already gone. */
export async function deleteReaction(db: Tx, messageId: number, userId: number, emojiCode: string, reactionType: string): Promise<boolean> {
  const r = await db
    .deleteFrom('reactions')
    .where('message_id', '=', messageId)
    .where('user_id', '=', userId)
    .where('emoji_code', '=', emojiCode)
    .where('reaction_type', '=', reactionType)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Gives a user a `historical` row for a message they never received, unless one appeared meanwhile. */
export async function insertHistoricalUserMessageIfAbsent(db: Tx, userId: number, messageId: number, flags: number): Promise<void> {
  await db
    .insertInto('user_messages')
    .values({ user_id: userId, message_id: messageId, flags })
    .onConflict((oc) => oc.columns(['user_id', 'message_id']).doNothing())
    .execute();
}
