import { MESSAGES_REWRITTEN, cachedRead } from './cache.js';
import { fetchRealmByStringId } from './repos/realms.js';
import { fetchActiveHumanIdSet, fetchUserByEmail } from './repos/users.js';
import { fetchGroupRowsForUser } from './repos/user_groups.js';
import { fetchStreamWithSubscription, streamNameKey } from './repos/streams.js';
import { fetchChannelRecipients, fetchMutingUserIds, fetchRealmAlertWords, topicHasMessages } from './repos/messages.js';
import { fetchLinkifiers } from './repos/settings.js';
import { fetchActiveRealmEmoji } from './repos/realm_emoji.js';
import { fetchUserTopic } from './repos/user_topics.js';
import { fetchRealmEmoji } from './repos/realm_emoji.js';
import { fetchRealmDomains } from './repos/realm_domains.js';
import { fetchRealmPlaygrounds } from './repos/realm_playgrounds.js';
import { fetchDefaultStreamIds } from './repos/streams.js';
import { fetchSystemGroups } from './repos/user_groups.js';
import { fetchUserAlertWords } from './repos/alert_words.js';
import { fetchUserDrafts } from './repos/drafts.js';
import { fetchUserNavigationViews } from './repos/navigation_views.js';
import { fetchUserSavedSnippets } from './repos/saved_snippets.js';
import { fetchExternalToken } from './repos/external_tokens.js';
import { countSubscribersByRealmStream } from './repos/subscriptions.js';

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

/**
 * Sending: whether a topic already has messages (automatic follow on initiation, permission to
 * start topics). Only "yes" is kept: new messages cannot make it false, only an update
 * (a move) or a deletion of messages can.
 */
export const topicHasMessagesCached = cachedRead(
  'topic_has_messages',
  [MESSAGES_REWRITTEN],
  (streamId: number, topicLc: string) => `${streamId}:${topicLc}`,
  topicHasMessages,
  (exists) => exists,
);

/*
 * POST /register: the organization's small settings tables and the caller's own short lists,
 * each otherwise a query of every register (a round trip each on PostgreSQL).
 */
const byRealm = (realmId: number): string => String(realmId);
const byUser = (userId: number): string => String(userId);
export const fetchRealmEmojiCached = cachedRead('realm_emoji_all', ['realm_emoji'], byRealm, fetchRealmEmoji);
export const fetchRealmDomainsCached = cachedRead('realm_domains', ['realm_domains'], byRealm, fetchRealmDomains);
export const fetchRealmPlaygroundsCached = cachedRead('realm_playgrounds', ['realm_playgrounds'], byRealm, fetchRealmPlaygrounds);
export const fetchDefaultStreamIdsCached = cachedRead('default_streams', ['default_streams'], byRealm, fetchDefaultStreamIds);
export const fetchSystemGroupsCached = cachedRead('system_groups', ['user_groups'], byRealm, fetchSystemGroups);
/** Every presence report (lib/presence_view.ts): who counts among the organization's people. */
export const fetchActiveHumanIdsCached = cachedRead('active_humans', ['users'], byRealm, fetchActiveHumanIdSet);
/** Every register and GET /streams: the subscriber count of each channel (one scan of the organization's subscriptions). */
export const countSubscribersCached = cachedRead('subscriber_counts', ['subscriptions', 'users'], byRealm, countSubscribersByRealmStream);
export const fetchUserAlertWordsCached = cachedRead('user_alert_words', ['alert_words'], byUser, fetchUserAlertWords);
export const fetchUserDraftsCached = cachedRead('drafts', ['drafts'], byUser, fetchUserDrafts);
export const fetchUserNavigationViewsCached = cachedRead('navigation_views', ['navigation_views'], byUser, fetchUserNavigationViews);
export const fetchUserSavedSnippetsCached = cachedRead('saved_snippets', ['saved_snippets'], byUser, fetchUserSavedSnippets);
export const fetchExternalTokenCached = cachedRead(
  'external_token',
  ['external_tokens'],
  (userId: number, provider: string) => `${userId}:${provider}`,
  fetchExternalToken,
);
