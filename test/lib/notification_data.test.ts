import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  allowsNotificationsInTopic,
  isIdle,
  notificationTriggers,
  type MessageFacts,
  type RecipientFacts,
  type RecipientSettings,
  type SubscriptionSettings,
} from '../../src/lib/notification_data.js';
import { FLAG_BITS } from '../../src/lib/message_flags.js';
import { VISIBILITY_FOLLOWED, VISIBILITY_INHERIT, VISIBILITY_MUTED, VISIBILITY_UNMUTED } from '../../src/lib/topics.js';

/**
 * The rule set as a table, with the cases of Zulip's zerver/tests/test_notification_data.py
 * (test_is_push_notifiable, test_is_email_notifiable, test_is_notifiable,
 * test_user_allows_notifications_in_StreamTopic) and of its get_recipient_info tests for
 * channel overrides, muted channels and topics and followed topics.
 */

const SENDER = 1;
const USER = 2;

// Zulip's defaults for a new user.
const DEFAULTS: RecipientSettings = {
  enable_online_push_notifications: true,
  enable_offline_push_notifications: true,
  enable_offline_email_notifications: true,
  enable_stream_push_notifications: false,
  enable_stream_email_notifications: false,
  wildcard_mentions_notify: true,
  enable_followed_topic_push_notifications: true,
  enable_followed_topic_email_notifications: true,
  enable_followed_topic_wildcard_mentions_notify: true,
};

const SUB: SubscriptionSettings = { is_muted: false, push_notifications: null, email_notifications: null, wildcard_mentions_notify: null };

interface Case {
  name: string;
  dm?: boolean;
  flags?: number;
  settings?: Partial<RecipientSettings>;
  sub?: Partial<SubscriptionSettings>;
  policy?: number;
  mutesSender?: boolean;
  isBot?: boolean;
  user?: number;
  disableExternal?: boolean;
  idle?: boolean;
  push: string | null;
  email: string | null;
}

const F = FLAG_BITS;
const CASES: Case[] = [
  // Direct messages.
  { name: 'DM, idle', dm: true, push: 'private_message', email: 'private_message' },
  { name: 'DM, active, online push on', dm: true, idle: false, push: 'private_message', email: null },
  { name: 'DM, active, online push off', dm: true, idle: false, settings: { enable_online_push_notifications: false }, push: null, email: null },
  { name: 'DM, offline push off', dm: true, settings: { enable_offline_push_notifications: false }, push: null, email: 'private_message' },
  { name: 'DM, offline email off', dm: true, settings: { enable_offline_email_notifications: false }, push: 'private_message', email: null },
  { name: 'DM that also mentions: the DM wins', dm: true, flags: F.mentioned, push: 'private_message', email: 'private_message' },
  { name: 'DM to oneself (the sender)', dm: true, user: SENDER, push: null, email: null },
  { name: 'DM from a muted sender', dm: true, mutesSender: true, push: null, email: null },
  { name: 'DM to a bot', dm: true, isBot: true, push: null, email: null },
  { name: 'DM with external notifications disabled', dm: true, disableExternal: true, push: null, email: null },
  // Personal and group mentions (a group mention sets the same flag).
  { name: 'mention', flags: F.mentioned, push: 'mentioned', email: 'mentioned' },
  { name: 'mention, active', flags: F.mentioned, idle: false, push: 'mentioned', email: null },
  { name: 'mention, offline push and email off', flags: F.mentioned, settings: { enable_offline_push_notifications: false, enable_offline_email_notifications: false }, push: null, email: null },
  { name: 'mention in a muted channel still notifies', flags: F.mentioned, sub: { is_muted: true }, push: 'mentioned', email: 'mentioned' },
  { name: 'mention in a muted topic still notifies', flags: F.mentioned, policy: VISIBILITY_MUTED, push: 'mentioned', email: 'mentioned' },
  { name: 'mention by a muted sender', flags: F.mentioned, mutesSender: true, push: null, email: null },
  { name: 'mention outranks channel notifications', flags: F.mentioned, settings: { enable_stream_push_notifications: true, enable_stream_email_notifications: true }, push: 'mentioned', email: 'mentioned' },
  { name: 'mention, offline push off, channel push on', flags: F.mentioned, settings: { enable_offline_push_notifications: false }, sub: { push_notifications: true }, push: 'stream_push_notify', email: 'mentioned' },
  // Wildcard mentions and wildcard_mentions_notify.
  { name: 'channel wildcard', flags: F.stream_wildcard_mentioned, push: 'stream_wildcard_mentioned', email: 'stream_wildcard_mentioned' },
  { name: 'topic wildcard', flags: F.topic_wildcard_mentioned, push: 'topic_wildcard_mentioned', email: 'topic_wildcard_mentioned' },
  { name: 'channel wildcard, wildcard_mentions_notify off', flags: F.stream_wildcard_mentioned, settings: { wildcard_mentions_notify: false }, push: null, email: null },
  { name: 'channel wildcard, off for the user, on for the channel', flags: F.stream_wildcard_mentioned, settings: { wildcard_mentions_notify: false }, sub: { wildcard_mentions_notify: true }, push: 'stream_wildcard_mentioned', email: 'stream_wildcard_mentioned' },
  { name: 'channel wildcard, on for the user, off for the channel', flags: F.stream_wildcard_mentioned, sub: { wildcard_mentions_notify: false }, push: null, email: null },
  { name: 'channel wildcard in a muted channel', flags: F.stream_wildcard_mentioned, sub: { is_muted: true }, push: null, email: null },
  { name: 'channel wildcard in an unmuted topic of a muted channel', flags: F.stream_wildcard_mentioned, sub: { is_muted: true }, policy: VISIBILITY_UNMUTED, push: 'stream_wildcard_mentioned', email: 'stream_wildcard_mentioned' },
  { name: 'topic wildcard in a muted topic', flags: F.topic_wildcard_mentioned, policy: VISIBILITY_MUTED, push: null, email: null },
  { name: 'wildcard, offline push off', flags: F.stream_wildcard_mentioned, settings: { enable_offline_push_notifications: false }, push: null, email: 'stream_wildcard_mentioned' },
  { name: 'topic wildcard in a followed topic', flags: F.topic_wildcard_mentioned, policy: VISIBILITY_FOLLOWED, push: 'topic_wildcard_mentioned_in_followed_topic', email: 'topic_wildcard_mentioned_in_followed_topic' },
  { name: 'channel wildcard in a followed topic', flags: F.stream_wildcard_mentioned, policy: VISIBILITY_FOLLOWED, push: 'stream_wildcard_mentioned_in_followed_topic', email: 'stream_wildcard_mentioned_in_followed_topic' },
  {
    name: 'wildcard in a followed topic, followed-topic wildcard off',
    flags: F.stream_wildcard_mentioned,
    policy: VISIBILITY_FOLLOWED,
    settings: { enable_followed_topic_wildcard_mentions_notify: false },
    push: 'stream_wildcard_mentioned',
    email: 'stream_wildcard_mentioned',
  },
  // Alert words alone: Zulip's push and email rules do not read has_alert_word.
  { name: 'alert word', flags: F.has_alert_word, push: null, email: null },
  // Followed topics.
  { name: 'followed topic', policy: VISIBILITY_FOLLOWED, push: 'followed_topic_push_notify', email: 'followed_topic_email_notify' },
  { name: 'followed topic, followed-topic push off', policy: VISIBILITY_FOLLOWED, settings: { enable_followed_topic_push_notifications: false }, push: null, email: 'followed_topic_email_notify' },
  { name: 'followed topic in a muted channel', policy: VISIBILITY_FOLLOWED, sub: { is_muted: true }, push: 'followed_topic_push_notify', email: 'followed_topic_email_notify' },
  { name: 'followed topic, active', policy: VISIBILITY_FOLLOWED, idle: false, push: 'followed_topic_push_notify', email: null },
  // Channel notifications: the user's setting, the channel's override, muting.
  { name: 'plain channel message', push: null, email: null },
  { name: 'channel notifications on for the user', settings: { enable_stream_push_notifications: true, enable_stream_email_notifications: true }, push: 'stream_push_notify', email: 'stream_email_notify' },
  { name: 'channel override on', sub: { push_notifications: true, email_notifications: true }, push: 'stream_push_notify', email: 'stream_email_notify' },
  { name: 'channel override off beats the user setting', settings: { enable_stream_push_notifications: true }, sub: { push_notifications: false }, push: null, email: null },
  { name: 'channel notifications in a muted channel', sub: { is_muted: true, push_notifications: true, email_notifications: true }, push: null, email: null },
  { name: 'channel notifications in a muted topic', sub: { push_notifications: true }, policy: VISIBILITY_MUTED, push: null, email: null },
  { name: 'channel notifications in an unmuted topic of a muted channel', sub: { is_muted: true, push_notifications: true }, policy: VISIBILITY_UNMUTED, push: 'stream_push_notify', email: null },
  { name: 'channel notifications, active, online push off', sub: { push_notifications: true }, idle: false, settings: { enable_online_push_notifications: false }, push: null, email: null },
  { name: 'followed topic outranks channel notifications', policy: VISIBILITY_FOLLOWED, sub: { push_notifications: true, email_notifications: true }, push: 'followed_topic_push_notify', email: 'followed_topic_email_notify' },
  { name: 'channel notifications for a bot', isBot: true, sub: { push_notifications: true }, push: null, email: null },
];

for (const c of CASES) {
  test(`notificationTriggers: ${c.name}`, () => {
    const m: MessageFacts = { senderId: SENDER, isPrivate: !!c.dm, disableExternalNotifications: !!c.disableExternal };
    const r: RecipientFacts = {
      userId: c.user ?? USER,
      isBot: !!c.isBot,
      flags: (c.flags ?? 0) | (c.dm ? F.is_private : 0),
      settings: { ...DEFAULTS, ...c.settings },
      subscription: c.dm ? null : { ...SUB, ...c.sub },
      visibilityPolicy: c.policy ?? VISIBILITY_INHERIT,
      mutesSender: !!c.mutesSender,
    };
    assert.deepEqual(notificationTriggers(m, r, c.idle ?? true), { push: c.push, email: c.email });
  });
}

test('allowsNotificationsInTopic: Zulip\'s hierarchy of visibility policy, channel setting, user setting', () => {
  // [channel muted, policy, channel setting, user setting] -> allowed
  const rows: [boolean, number, boolean | null, boolean, boolean][] = [
    [true, VISIBILITY_INHERIT, true, true, false],
    [true, VISIBILITY_MUTED, true, true, false],
    [true, VISIBILITY_FOLLOWED, true, true, false],
    [true, VISIBILITY_UNMUTED, true, false, true],
    [true, VISIBILITY_UNMUTED, null, false, false],
    [false, VISIBILITY_MUTED, true, true, false],
    [false, VISIBILITY_INHERIT, false, true, false],
    [false, VISIBILITY_INHERIT, true, false, true],
    [false, VISIBILITY_INHERIT, null, true, true],
    [false, VISIBILITY_FOLLOWED, null, false, false],
  ];
  for (const [muted, policy, own, user, want] of rows) assert.equal(allowsNotificationsInTopic(muted, policy, own, user), want, JSON.stringify([muted, policy, own, user]));
});

test('isIdle: no message queue, or last active 140 s ago or more (presence ignored when disabled)', () => {
  const now = 1_000_000;
  assert.equal(isIdle(false, now, now, false), true);
  assert.equal(isIdle(true, now - 10, now, false), false);
  assert.equal(isIdle(true, now - 140, now, false), false);
  assert.equal(isIdle(true, now - 141, now, false), true);
  assert.equal(isIdle(true, null, now, false), true);
  assert.equal(isIdle(true, null, now, true), false);
  assert.equal(isIdle(false, now, now, true), true);
});
