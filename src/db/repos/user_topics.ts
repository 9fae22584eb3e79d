import type { Tx } from '../index.js';

export interface UserTopicRow {
  user_id: number;
  stream_id: number;
  topic: string;
  topic_lc: string;
  visibility_policy: number;
  last_updated: number;
}

export async function fetchUserTopic(db: Tx, userId: number, streamId: number, topicLc: string): Promise<UserTopicRow | undefined> {
  return db
    .selectFrom('user_topics')
    .selectAll()
    .where('user_id', '=', userId)
    .where('stream_id', '=', streamId)
    .where('topic_lc', '=', topicLc)
    .executeTakeFirst();
}

/** These users' rows for one topic. */
export async function fetchUserTopicsForTopic(db: Tx, userIds: readonly number[], streamId: number, topicLc: string): Promise<UserTopicRow[]> {
  if (userIds.length === 0) return [];
  return db
    .selectFrom('user_topics')
    .selectAll()
    .where('stream_id', '=', streamId)
    .where('topic_lc', '=', topicLc)
    .where('user_id', 'in', [...userIds])
    .execute();
}

/** Every topic preference of one user, oldest change first. */
export async function fetchUserTopicsForUser(db: Tx, userId: number): Promise<UserTopicRow[]> {
  return db.selectFrom('user_topics').selectAll().where('user_id', '=', userId).orderBy('last_updated').orderBy('stream_id').execute();
}

/** Muted topics of one user with their channel names, for the legacy muted_topics shape. */
export async function fetchMutedTopicsWithStreamNames(db: Tx, userId: number): Promise<{ stream_name: string; topic: string; last_updated: number }[]> {
  return db
    .selectFrom('user_topics')
    .innerJoin('streams', 'streams.id', 'user_topics.stream_id')
    .select(['streams.name as stream_name', 'user_topics.topic', 'user_topics.last_updated'])
    .where('user_topics.user_id', '=', userId)
    .where('user_topics.visibility_policy', '=', 1)
    .orderBy('user_topics.last_updated')
    .execute();
}

/** Inserts or updates one row; an existing row keeps its stored topic spelling. */
export async function upsertUserTopic(db: Tx, row: UserTopicRow): Promise<void> {
  await db
    .insertInto('user_topics')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['user_id', 'stream_id', 'topic_lc']).doUpdateSet({ visibility_policy: row.visibility_policy, last_updated: row.last_updated }),
    )
    .execute();
}

export async function deleteUserTopic(db: Tx, userId: number, streamId: number, topicLc: string): Promise<void> {
  await db.deleteFrom('user_topics').where('user_id', '=', userId).where('stream_id', '=', streamId).where('topic_lc', '=', topicLc).execute();
}
