import { now, transaction, type Tx } from '../db/index.js';
import {
  deleteUserTopic,
  fetchMutedTopicsWithStreamNames,
  fetchUserTopicsForTopic,
  upsertUserTopic,
} from '../db/repos/user_topics.js';
import { topicKey, VISIBILITY_INHERIT } from '../lib/topics.js';
import type { ActionServices } from '../services.js';

export interface TopicTarget {
  realmId: number;
  streamId: number;
  topic: string;
}

/** The legacy `muted_topics` event payload: [channel name, topic, date muted] triples. */
export async function mutedTopicsTriples(db: Tx, userId: number): Promise<[string, string, number][]> {
  const rows = await fetchMutedTopicsWithStreamNames(db, userId);
  return rows.map((r) => [r.stream_name, r.topic, r.last_updated]);
}

/**
 * Sets several users' visibility policy for one topic inside the caller's transaction and
 * queues, for each user whose row actually changed, the legacy `muted_topics` event and the
 * `user_topic` event (Zulip's bulk_do_set_user_topic_visibility_policy). Policy 0 deletes the
 * row. Returns the users whose policy changed.
 */
export async function setUserTopicPolicies(
  services: ActionServices,
  tx: Tx,
  afterCommit: (cb: () => void) => void,
  target: TopicTarget,
  userIds: readonly number[],
  policy: number,
  lastUpdated: number = now(),
): Promise<number[]> {
  const key = topicKey(target.topic);
  const existing = new Map((await fetchUserTopicsForTopic(tx, userIds, target.streamId, key)).map((r) => [r.user_id, r]));
  const changed: number[] = [];
  for (const userId of userIds) {
    const row = existing.get(userId);
    if (policy === VISIBILITY_INHERIT) {
      if (!row) continue;
      await deleteUserTopic(tx, userId, target.streamId, key);
    } else {
      if (row && row.visibility_policy === policy) continue;
      await upsertUserTopic(tx, {
        user_id: userId,
        stream_id: target.streamId,
        topic: target.topic,
        topic_lc: key,
        visibility_policy: policy,
        last_updated: lastUpdated,
      });
    }
    changed.push(userId);
  }
  for (const userId of changed) {
    const muted = await mutedTopicsTriples(tx, userId);
    afterCommit(() => {
      services.events.send(target.realmId, { type: 'muted_topics', muted_topics: muted }, [userId]);
      services.events.send(
        target.realmId,
        { type: 'user_topic', stream_id: target.streamId, topic_name: target.topic, last_updated: lastUpdated, visibility_policy: policy },
        [userId],
      );
    });
  }
  return changed;
}

/** One user's topic preference (POST /user_topics, the muted_topics endpoint). Preconditions: the caller may access the channel. */
export async function doSetUserTopicVisibilityPolicy(services: ActionServices, target: TopicTarget, userId: number, policy: number): Promise<void> {
  await transaction(services.db, (tx, afterCommit) => setUserTopicPolicies(services, tx, afterCommit, target, [userId], policy));
}
