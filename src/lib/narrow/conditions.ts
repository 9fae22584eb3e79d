import { FLAG_BITS } from '../message_flags.js';
import type { SearchQuery } from './search.js';

/**
 * A narrow after resolution: every name looked up, every operand checked, ready for
 * db/repos/narrow.ts to turn into SQL. Each condition only removes messages (Zulip's
 * NarrowBuilder invariant), so access control lives entirely in the query's base.
 */
export type Condition =
  | { kind: 'stream'; streamIds: number[] }
  | { kind: 'topic'; topicKey: string }
  /** One direct-message conversation, by its sorted participant list (messages.dm_key). */
  | { kind: 'dm'; dmKey: string }
  /** Direct messages the user takes part in; `groupOnly` keeps conversations of 3 or more. */
  | { kind: 'dm_including'; userId: number; groupOnly: boolean }
  | { kind: 'private' }
  | { kind: 'sender'; userId: number }
  /** The reader's flags have one of `mask`'s bits. */
  | { kind: 'flags_any'; mask: number }
  | { kind: 'unread' }
  | { kind: 'resolved' }
  | { kind: 'followed' }
  /**
   * Zulip's exclude_stream_and_topic_mutes: not in a topic the reader muted and, with
   * `streamMutes`, not in a channel they muted unless they unmuted or follow the topic.
   * Negated, it is `is:muted`.
   */
  | { kind: 'unmuted'; streamMutes: boolean }
  | { kind: 'id'; id: number }
  | { kind: 'has'; what: 'link' | 'image' | 'attachment' | 'reaction' }
  /** Contains a visible (non-silent) personal mention of the user. */
  | { kind: 'mentions'; userId: number }
  | { kind: 'nothing' };

export type NarrowCondition = Condition & { negated: boolean };

export interface ResolvedNarrow {
  conditions: NarrowCondition[];
  /** Every search term combined (Zulip applies them as one positive search). */
  search: SearchQuery | null;
  /**
   * Whether messages the reader has no user_messages row for may match: only when the
   * narrow pins a channel whose history the reader may read, or all public channels
   * (Zulip's ok_to_include_history). Otherwise the reader's own rows bound the query.
   */
  includeHistory: boolean;
  /** The first channel term's channel, which limits muting to topic mutes (first_unread). */
  channelStreamId: number | null;
}

/** `is:mentioned`: personal, channel-wildcard and topic-wildcard mentions (partial index user_messages_mentioned). */
export const MENTION_MASK = FLAG_BITS.mentioned | FLAG_BITS.stream_wildcard_mentioned | FLAG_BITS.topic_wildcard_mentioned;
