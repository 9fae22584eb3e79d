import { OFFLINE_THRESHOLD_SECONDS } from './format/presence.js';
import { FLAG_BITS } from './message_flags.js';
import { VISIBILITY_FOLLOWED, VISIBILITY_MUTED, VISIBILITY_UNMUTED } from './topics.js';

/**
 * Who is told about a message by mobile push or email, as Zulip decides it: the sets of
 * get_recipient_info (zerver/actions/message_send.py), UserMessageNotificationsData
 * (zerver/lib/notification_data.py) and the idle test of process_message_event
 * (zerver/tornado/event_queue.py). Pure: the caller gathers the facts.
 */

/** Zulip's NotificationTriggers, the `trigger` of a push payload and of an email's reason. */
export type NotificationTrigger =
  | 'private_message'
  | 'mentioned'
  | 'topic_wildcard_mentioned_in_followed_topic'
  | 'stream_wildcard_mentioned_in_followed_topic'
  | 'topic_wildcard_mentioned'
  | 'stream_wildcard_mentioned'
  | 'followed_topic_push_notify'
  | 'followed_topic_email_notify'
  | 'stream_push_notify'
  | 'stream_email_notify';

/** The user-level settings the rules read (UserProfile's notification settings). */
export interface RecipientSettings {
  enable_online_push_notifications: boolean;
  enable_offline_push_notifications: boolean;
  enable_offline_email_notifications: boolean;
  enable_stream_push_notifications: boolean;
  enable_stream_email_notifications: boolean;
  wildcard_mentions_notify: boolean;
  enable_followed_topic_push_notifications: boolean;
  enable_followed_topic_email_notifications: boolean;
  enable_followed_topic_wildcard_mentions_notify: boolean;
}

/** A subscription's own settings: null means "as the user's setting says". */
export interface SubscriptionSettings {
  is_muted: boolean;
  push_notifications: boolean | null;
  email_notifications: boolean | null;
  wildcard_mentions_notify: boolean | null;
}

export interface RecipientFacts {
  userId: number;
  isBot: boolean;
  /** The recipient's user_messages flag bits for this message. */
  flags: number;
  settings: RecipientSettings;
  /** The recipient's subscription to the message's channel; null for direct messages. */
  subscription: SubscriptionSettings | null;
  /** The recipient's visibility policy for the message's topic (lib/topics.ts). */
  visibilityPolicy: number;
  /** Whether the recipient has muted the sender. */
  mutesSender: boolean;
}

export interface MessageFacts {
  senderId: number;
  isPrivate: boolean;
  /** Zulip's disable_external_notifications (set for some system messages). */
  disableExternalNotifications: boolean;
}

export interface NotificationDecision {
  push: NotificationTrigger | null;
  email: NotificationTrigger | null;
}

/**
 * Zulip's user_allows_notifications_in_StreamTopic: the topic's visibility policy first
 * (an unmuted topic in a muted channel counts), then the subscription's setting, then the user's.
 */
export function allowsNotificationsInTopic(streamIsMuted: boolean, visibilityPolicy: number, subscriptionSetting: boolean | null, userSetting: boolean): boolean {
  if (streamIsMuted && visibilityPolicy !== VISIBILITY_UNMUTED) return false;
  if (visibilityPolicy === VISIBILITY_MUTED) return false;
  return subscriptionSetting ?? userSetting;
}

interface Channel {
  push: boolean;
  email: boolean;
  followedPush: boolean;
  followedEmail: boolean;
  wildcard: boolean;
  followedWildcard: boolean;
}

/** The channel-message sets of get_recipient_info, for one recipient. */
function channelFacts(r: RecipientFacts): Channel {
  const sub = r.subscription;
  if (!sub) return { push: false, email: false, followedPush: false, followedEmail: false, wildcard: false, followedWildcard: false };
  const allows = (own: boolean | null, user: boolean) => allowsNotificationsInTopic(sub.is_muted, r.visibilityPolicy, own, user);
  const followed = r.visibilityPolicy === VISIBILITY_FOLLOWED;
  return {
    push: allows(sub.push_notifications, r.settings.enable_stream_push_notifications),
    email: allows(sub.email_notifications, r.settings.enable_stream_email_notifications),
    followedPush: followed && r.settings.enable_followed_topic_push_notifications,
    followedEmail: followed && r.settings.enable_followed_topic_email_notifications,
    wildcard: allows(sub.wildcard_mentions_notify, r.settings.wildcard_mentions_notify),
    followedWildcard: followed && r.settings.enable_followed_topic_wildcard_mentions_notify,
  };
}

/**
 * The push and email triggers for one recipient of one message, given whether the recipient is
 * idle (see isIdle). Bots, the sender, recipients muting the sender and messages with external
 * notifications disabled get neither. The order of the checks is Zulip's: a direct message
 * outranks a mention, which outranks wildcard mentions, which outrank channel and followed-topic
 * notifications. Alert words alone notify neither way (Zulip's rules do not read has_alert_word).
 */
export function notificationTriggers(m: MessageFacts, r: RecipientFacts, idle: boolean): NotificationDecision {
  if (r.isBot || r.userId === m.senderId || r.mutesSender || m.disableExternalNotifications) return { push: null, email: null };
  const has = (bit: number) => (r.flags & bit) !== 0;
  const c = channelFacts(r);
  const topicWildcard = has(FLAG_BITS.topic_wildcard_mentioned);
  const streamWildcard = has(FLAG_BITS.stream_wildcard_mentioned);
  const pick = (enabled: boolean): NotificationTrigger | null => {
    if (!enabled) return null;
    if (m.isPrivate) return 'private_message';
    if (has(FLAG_BITS.mentioned)) return 'mentioned';
    if (topicWildcard && c.followedWildcard) return 'topic_wildcard_mentioned_in_followed_topic';
    if (streamWildcard && c.followedWildcard) return 'stream_wildcard_mentioned_in_followed_topic';
    if (topicWildcard && c.wildcard) return 'topic_wildcard_mentioned';
    if (streamWildcard && c.wildcard) return 'stream_wildcard_mentioned';
    return null;
  };
  // dm_mention_*_disabled gates the direct-message and mention triggers (the wildcard ones too);
  // channel and followed-topic notifications have their own settings.
  let push = pick(r.settings.enable_offline_push_notifications);
  if (push === null && c.followedPush) push = 'followed_topic_push_notify';
  if (push === null && c.push) push = 'stream_push_notify';
  if (!idle && !r.settings.enable_online_push_notifications) push = null;
  let email = pick(r.settings.enable_offline_email_notifications);
  if (email === null && c.followedEmail) email = 'followed_topic_email_notify';
  if (email === null && c.email) email = 'stream_email_notify';
  if (!idle) email = null;
  return { push, email };
}

/**
 * Zulip's idle test: the recipient has no event queue that receives messages
 * (receiver_is_off_zulip), or was last active more than OFFLINE_THRESHOLD_SECONDS ago
 * (filter_presence_idle_user_ids; no presence row counts as idle). Presence is not consulted
 * when the organization has presence disabled.
 */
export function isIdle(hasMessageQueue: boolean, lastActiveTime: number | null, now: number, presenceDisabled: boolean): boolean {
  if (!hasMessageQueue) return true;
  if (presenceDisabled) return false;
  return lastActiveTime === null || lastActiveTime < now - OFFLINE_THRESHOLD_SECONDS;
}
