import type { Tx } from '../../db/index.js';
import {
  fetchMaxMessageIdForUser,
  fetchRecentDmConversations,
  fetchStarredMessageIds,
  fetchUnreadMessages,
  type UnreadRow,
} from '../../db/repos/user_messages.js';
import { fetchMutedStreamIds } from '../../db/repos/messages.js';
import { fetchMutedTopicsWithStreamNames, fetchUserTopicsForUser, type UserTopicRow } from '../../db/repos/user_topics.js';
import { dmParticipantIds } from '../../lib/format/messages.js';
import { FLAG_BITS } from '../../lib/message_flags.js';
import { realmSettings } from '../../lib/realm_settings.js';
import { VISIBILITY_FOLLOWED, VISIBILITY_MUTED, VISIBILITY_UNMUTED, displayTopic, topicKey } from '../../lib/topics.js';
import type { StateFetcher } from './types.js';

/** Zulip's MAX_UNREAD_MESSAGES: register reports at most this many unread messages (newest). */
export const MAX_UNREAD_MESSAGES = 50_000;
/** Zulip's RECENT_CONVERSATIONS_LIMIT. */
export const RECENT_CONVERSATIONS_LIMIT = 1000;

interface UnreadGroup<K> {
  key: K;
  ids: number[];
}

function group<K>(rows: readonly { id: number; key: K; sortKey: string }[]): UnreadGroup<K>[] {
  const byKey = new Map<string, UnreadGroup<K>>();
  for (const r of rows) {
    const g = byKey.get(r.sortKey);
    if (g) g.ids.push(r.id);
    else byKey.set(r.sortKey, { key: r.key, ids: [r.id] });
  }
  return [...byKey.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, g]) => ({ key: g.key, ids: g.ids.sort((a, b) => a - b) }));
}

const pad = (n: number): string => String(n).padStart(20, '0');

/**
 * Zulip's get_raw_unread_data + aggregate_unread_data: unread messages by 1:1 conversation,
 * channel topic and group conversation, the mentions, and a count that leaves out messages
 * in muted channels and topics (unless the topic is unmuted or followed).
 */
export async function buildUnreadMsgs(
  db: Tx,
  userId: number,
  userTopics: readonly UserTopicRow[],
  allowEmptyTopicName: boolean,
  emptyTopicDisplayName: string,
): Promise<Record<string, unknown>> {
  const rows: UnreadRow[] = await fetchUnreadMessages(db, userId, MAX_UNREAD_MESSAGES);
  const streamIds = [...new Set(rows.filter((r) => r.type === 'stream').map((r) => r.stream_id ?? 0))];
  const mutedStreams = await fetchMutedStreamIds(db, userId, streamIds);
  const policy = new Map(userTopics.map((t) => [`${t.stream_id}:${t.topic_lc}`, t.visibility_policy]));
  const isMuted = (r: UnreadRow): boolean => {
    const p = policy.get(`${r.stream_id}:${topicKey(r.topic)}`);
    if (p === VISIBILITY_MUTED) return true;
    if (p === VISIBILITY_UNMUTED || p === VISIBILITY_FOLLOWED) return false;
    return mutedStreams.has(r.stream_id ?? 0);
  };
  const pms: { id: number; key: number; sortKey: string }[] = [];
  const huddles: { id: number; key: string; sortKey: string }[] = [];
  const streams: { id: number; key: { stream_id: number; topic: string }; sortKey: string }[] = [];
  const mentions: number[] = [];
  let count = 0;
  for (const r of rows) {
    const wildcard = r.flags & (FLAG_BITS.stream_wildcard_mentioned | FLAG_BITS.topic_wildcard_mentioned);
    if (r.type === 'stream') {
      const muted = isMuted(r);
      if (!muted) count++;
      if (r.flags & FLAG_BITS.mentioned || (wildcard && !muted)) mentions.push(r.message_id);
      const streamId = r.stream_id ?? 0;
      streams.push({ id: r.message_id, key: { stream_id: streamId, topic: r.topic }, sortKey: `${pad(streamId)}:${r.topic}` });
      continue;
    }
    count++;
    if (r.flags & FLAG_BITS.mentioned || wildcard) mentions.push(r.message_id);
    const participants = dmParticipantIds(r.dm_key);
    if (participants.length <= 2) {
      const other = participants.find((id) => id !== userId) ?? userId;
      pms.push({ id: r.message_id, key: other, sortKey: pad(other) });
    } else {
      const key = participants.join(',');
      huddles.push({ id: r.message_id, key, sortKey: key });
    }
  }
  return {
    count,
    pms: group(pms).map((g) => ({ other_user_id: g.key, sender_id: g.key, unread_message_ids: g.ids })),
    streams: group(streams).map((g) => ({
      stream_id: g.key.stream_id,
      topic: displayTopic(g.key.topic, allowEmptyTopicName, emptyTopicDisplayName),
      unread_message_ids: g.ids,
    })),
    huddles: group(huddles).map((g) => ({ user_ids_string: g.key, unread_message_ids: g.ids })),
    mentions: mentions.sort((a, b) => a - b),
    old_unreads_missing: rows.length === MAX_UNREAD_MESSAGES,
  };
}

/**
 * POST /register keys for: message (max_message_id), update_message_flags + message
 * (unread_msgs), starred_messages, recent_private_conversations, user_topic, muted_topics.
 */
export const fetchMessagesState: StateFetcher = async ({ services, realm, user, options, want }) => {
  const db = services.db.kysely;
  const out: Record<string, unknown> = {};
  const allowEmpty = options.clientCapabilities.empty_topic_name === true;
  const display = realmSettings(realm).empty_topic_display_name;
  const needTopics = want('user_topic') || (want('message') && want('update_message_flags'));
  const userTopics = needTopics ? await fetchUserTopicsForUser(db, user.id) : [];

  if (want('message')) out.max_message_id = (await fetchMaxMessageIdForUser(db, user.id)) || -1;
  if (want('message') && want('update_message_flags')) {
    out.unread_msgs = await buildUnreadMsgs(db, user.id, userTopics, allowEmpty, display);
  }
  if (want('starred_messages')) out.starred_messages = await fetchStarredMessageIds(db, user.id);
  if (want('recent_private_conversations')) {
    const rows = await fetchRecentDmConversations(db, user.id, RECENT_CONVERSATIONS_LIMIT);
    out.recent_private_conversations = rows.map((r) => ({
      max_message_id: r.max_id,
      user_ids: dmParticipantIds(r.dm_key).filter((id) => id !== user.id),
    }));
  }
  if (want('user_topic')) {
    out.user_topics = userTopics.map((t) => ({
      stream_id: t.stream_id,
      topic_name: displayTopic(t.topic, allowEmpty, display),
      last_updated: t.last_updated,
      visibility_policy: t.visibility_policy,
    }));
  }
  // Zulip leaves out the legacy muted_topics for clients that explicitly asked for user_topic
  // (want() answers true for any type when the client named none).
  const everything = want('\u0000');
  if (want('muted_topics') && (everything || !want('user_topic'))) {
    const rows = await fetchMutedTopicsWithStreamNames(db, user.id);
    out.muted_topics = rows.map((r) => [r.stream_name, displayTopic(r.topic, allowEmpty, display), r.last_updated]);
  }
  return out;
};
