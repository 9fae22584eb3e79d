import { cachedRead } from './cache.js';
import { fetchRealmByStringId } from './repos/realms.js';
import { fetchUserByEmail } from './repos/users.js';
import { fetchGroupRowsForUser } from './repos/user_groups.js';
import { fetchStreamWithSubscription, streamNameKey } from './repos/streams.js';
import { fetchChannelRecipients, fetchMutingUserIds, fetchRealmAlertWords } from './repos/messages.js';
import { fetchLinkifiers } from './repos/settings.js';
import { fetchActiveRealmEmoji } from './repos/realm_emoji.js';
import { fetchUserTopic } from './repos/user_topics.js';

/**
 * The reads nearly every request repeats, served from the read cache outside transactions
 * (db/cache.ts). Each names the tables its answer depends on; a commit to any of them makes
 * the cached answer stale. Results are shared and frozen: copy before changing.
 */

/** Every request: the organization chosen by host name. */
export const fetchRealmByStringIdCached = cachedRead('realm', ['realms'], (stringId: string) => stringId, fetchRealmByStringId);

/** Every request: the user named in the Basic credentials (the key is compared by the caller). */
export const fetchUserByEmailCached = cachedRead(
  'user_by_email',
  ['users'],
  (realmId: number, email: string) => `${realmId}:${email.toLowerCase()}`,
  fetchUserByEmail,
);

/** Permission checks: the groups containing a user, directly or through subgroups. */
export const fetchGroupRowsForUserCached = cachedRead(
  'groups_for_user',
  ['group_members', 'group_subgroups', 'user_groups'],
  (user: { id: number; is_active: number }) => `${user.id}:${user.is_active}`,
  fetchGroupRowsForUser,
);

/** Sending and channel access: a channel with the caller's subscription. */
export const fetchStreamWithSubscriptionCached = cachedRead(
  'stream_with_subscription',
  ['streams', 'subscriptions'],
  (realmId: number, key: { id: number } | { name: string }, userId: number) =>
    `${realmId}:${'id' in key ? `#${key.id}` : streamNameKey(key.name)}:${userId}`,
  fetchStreamWithSubscription,
);

/** Sending to a channel: who receives it. */
export const fetchChannelRecipientsCached = cachedRead(
  'channel_recipients',
  ['subscriptions', 'users'],
  (streamId: number) => String(streamId),
  fetchChannelRecipients,
);

export const fetchMutingUserIdsCached = cachedRead('muting_users', ['muted_users'], (userId: number) => String(userId), fetchMutingUserIds);

export const fetchRealmAlertWordsCached = cachedRead(
  'alert_words',
  ['alert_words', 'users'],
  (realmId: number) => String(realmId),
  fetchRealmAlertWords,
);

export const fetchLinkifiersCached = cachedRead('linkifiers', ['linkifiers'], (realmId: number) => String(realmId), fetchLinkifiers);

export const fetchActiveRealmEmojiCached = cachedRead('realm_emoji', ['realm_emoji'], (realmId: number) => String(realmId), fetchActiveRealmEmoji);

export const fetchUserTopicCached = cachedRead(
  'user_topic',
  ['user_topics'],
  (userId: number, streamId: number, topicLc: string) => `${userId}:${streamId}:${topicLc}`,
  fetchUserTopic,
);
