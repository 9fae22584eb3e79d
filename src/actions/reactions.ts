import { transaction, type Tx } from '../db/index.js';
import type { Message, Realm, User } from '../db/tables.js';
import { fetchChannelRecipients, fetchStreamAccessRows, fetchUserIdsWithRows, type StreamAccessRow } from '../db/repos/messages.js';
import { fetchActiveRealmEmoji, fetchRealmEmoji } from '../db/repos/realm_emoji.js';
import {
  deleteReaction,
  fetchFirstReactionWithEmoji,
  fetchUserReaction,
  insertHistoricalUserMessageIfAbsent,
  insertReaction,
} from '../db/repos/reactions.js';
import { fetchSubscriptionRow } from '../db/repos/subscriptions.js';
import { fetchUserTopic } from '../db/repos/user_topics.js';
import { JsonableError, badRequest } from '../errors.js';
import type { ZulipEvent } from '../events/bus.js';
import { accessMessage } from '../lib/access/messages.js';
import { checkEmojiRequest, emojiDataForName } from '../lib/emoji.js';
import { FLAG_BITS } from '../lib/message_flags.js';
import { topicKey, VISIBILITY_FOLLOWED, VISIBILITY_INHERIT, VISIBILITY_UNMUTED } from '../lib/topics.js';
import { AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_PARTICIPATION, userSettings } from '../lib/user_settings.js';
import type { ActionServices } from '../services.js';
import { setUserTopicPolicies } from './user_topics.js';

/** A message the caller may act on (react to, attach widgets to), with its channel if any. */
export interface ModifiableMessage {
  message: Message;
  /** The caller has no user_messages row (a readable channel message they never received). */
  historical: boolean;
  stream: StreamAccessRow | null;
}

/**
 * Zulip's access_message(..., is_modifying_message=True): a readable message that is not in an
 * archived channel; "Invalid message(s)" otherwise, never revealing which.
 */
export async function accessMessageForModification(db: Tx, realm: Realm, user: User, messageId: number): Promise<ModifiableMessage> {
  const { message, flags } = await accessMessage(db, realm, user, messageId);
  let stream: StreamAccessRow | null = null;
  if (message.type === 'stream') {
    stream = (await fetchStreamAccessRows(db, [message.stream_id ?? 0])).get(message.stream_id ?? 0) ?? null;
    if (!stream || stream.deactivated) throw badRequest('Invalid message(s)');
  }
  return { message, historical: flags === null, stream };
}

/**
 * Zulip's event_recipient_ids_for_action_on_messages for one message: everyone with a
 * user_messages row; for a channel message, combined with its active subscribers (union when
 * the channel shares history with subscribers, intersection when it does not).
 */
export async function messageActionRecipientIds(db: Tx, message: Message, stream: StreamAccessRow | null): Promise<number[]> {
  const withRows = new Set(await fetchUserIdsWithRows(db, [message.id]));
  if (!stream) return [...withRows].sort((a, b) => a - b);
  const subscribers = (await fetchChannelRecipients(db, stream.id)).map((r) => r.user_id);
  const ids = stream.history_public_to_subscribers ? new Set([...withRows, ...subscribers]) : new Set(subscribers.filter((id) => withRows.has(id)));
  return [...ids].sort((a, b) => a - b);
}

export interface ReactionRequest {
  emojiName: string | undefined;
  emojiCode: string | undefined;
  reactionType: string | undefined;
}

export interface PreparedReaction {
  target: ModifiableMessage;
  emojiName: string;
  emojiCode: string;
  reactionType: string;
}

/**
 * Zulip's check_add_reaction. Without a code or type they come from the name. Reacting with an
 * emoji someone already used on the message is a vote for that reaction: it takes the earlier
 * reaction's name and skips validation (the emoji may have been deactivated since).
 */
export async function checkAddReaction(services: ActionServices, realm: Realm, user: User, messageId: number, req: ReactionRequest & { emojiName: string }): Promise<PreparedReaction> {
  const db = services.db.kysely;
  const target = await accessMessageForModification(db, realm, user, messageId);
  let { emojiCode, reactionType } = req;
  if (emojiCode === undefined || reactionType === undefined) {
    const data = emojiDataForName(await fetchActiveRealmEmoji(db, realm.id), req.emojiName);
    emojiCode ??= data.emojiCode;
    reactionType ??= data.reactionType;
  }
  if (await fetchUserReaction(db, messageId, user.id, emojiCode, reactionType)) {
    throw new JsonableError('Reaction already exists.', 'REACTION_ALREADY_EXISTS');
  }
  let emojiName = req.emojiName;
  const existing = await fetchFirstReactionWithEmoji(db, messageId, emojiCode, reactionType);
  if (existing) emojiName = existing.emoji_name;
  else checkEmojiRequest(await fetchRealmEmoji(db, realm.id), emojiName, emojiCode, reactionType);
  return { target, emojiName, emojiCode, reactionType };
}

/**
 * Zulip's notify_reaction_update. `user` repeats `user_id` with the reactor's API email (the
 * same for every recipient, as Zulip's user_profile.email) and name: zulip.yaml no longer lists
 * it, but zulip-terminal stores it as the reaction's user and fails without it.
 */
function reactionEvent(op: 'add' | 'remove', user: User, messageId: number, r: { emojiName: string; emojiCode: string; reactionType: string }): ZulipEvent {
  return {
    type: 'reaction',
    op,
    user_id: user.id,
    user: { user_id: user.id, email: user.email, full_name: user.full_name },
    message_id: messageId,
    emoji_name: r.emojiName,
    emoji_code: r.emojiCode,
    reaction_type: r.reactionType,
  };
}

/**
 * Zulip's visibility_policy_for_participation and should_change_visibility_policy: reacting
 * counts as participating in the topic, which may follow it (or unmute it in a muted channel);
 * these automatic changes only ever raise the topic's visibility.
 */
export async function participationPolicy(db: Tx, user: User, message: Message): Promise<number | null> {
  if (message.type !== 'stream' || user.is_bot) return null;
  const settings = userSettings(user);
  const follow = settings.automatically_follow_topics_policy === AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_PARTICIPATION;
  const unmute = settings.automatically_unmute_topics_in_muted_streams_policy === AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_PARTICIPATION;
  if (!follow && !unmute) return null;
  const sub = await fetchSubscriptionRow(db, user.id, message.stream_id ?? 0);
  if (!sub || !sub.active) return null;
  let policy: number | null = null;
  if (follow) policy = VISIBILITY_FOLLOWED;
  else if (sub.is_muted && unmute) policy = VISIBILITY_UNMUTED;
  if (policy === null) return null;
  const current = (await fetchUserTopic(db, user.id, message.stream_id ?? 0, topicKey(message.topic)))?.visibility_policy ?? VISIBILITY_INHERIT;
  if (current === policy || current === VISIBILITY_FOLLOWED) return null;
  return policy;
}

/**
 * Adds the reaction (with a `historical` read row first when the user never received the
 * message, so later events about it reach them), applies the participation topic policy, and
 * sends the `reaction` event to everyone who has the message.
 */
export async function doAddReaction(services: ActionServices, realm: Realm, user: User, r: PreparedReaction): Promise<void> {
  const { message, stream } = r.target;
  await transaction(services.db, async (tx, afterCommit) => {
    if (r.target.historical) await insertHistoricalUserMessageIfAbsent(tx, user.id, message.id, FLAG_BITS.read | FLAG_BITS.historical);
    const inserted = await insertReaction(tx, {
      message_id: message.id,
      user_id: user.id,
      emoji_name: r.emojiName,
      emoji_code: r.emojiCode,
      reaction_type: r.reactionType,
    });
    // Only a concurrent identical request gets here: answer as if it had been seen first.
    if (!inserted) throw new JsonableError('Reaction already exists.', 'REACTION_ALREADY_EXISTS');
    const policy = await participationPolicy(tx, user, message);
    if (policy !== null) {
      await setUserTopicPolicies(services, tx, afterCommit, { realmId: realm.id, streamId: message.stream_id ?? 0, topic: message.topic }, [user.id], policy);
    }
    const recipients = await messageActionRecipientIds(tx, message, stream);
    afterCommit(() => services.events.send(realm.id, reactionEvent('add', user, message.id, r), recipients));
  });
}

/**
 * Zulip's remove_reaction: by code (and type, default unicode_emoji), or by name looked up in
 * the current emoji data. The emoji is not re-validated: it may have been deactivated since.
 */
export async function checkRemoveReaction(services: ActionServices, realm: Realm, user: User, messageId: number, req: ReactionRequest): Promise<PreparedReaction> {
  const db = services.db.kysely;
  const target = await accessMessageForModification(db, realm, user, messageId);
  const reactionType = req.reactionType ?? 'unicode_emoji';
  let emojiCode = req.emojiCode;
  if (emojiCode === undefined) {
    if (req.emojiName === undefined) throw badRequest('At least one of the following arguments must be present: emoji_name, emoji_code');
    emojiCode = emojiDataForName(await fetchActiveRealmEmoji(db, realm.id), req.emojiName).emojiCode;
  }
  const existing = await fetchUserReaction(db, messageId, user.id, emojiCode, reactionType);
  if (!existing) throw new JsonableError("Reaction doesn't exist.", 'REACTION_DOES_NOT_EXIST');
  return { target, emojiName: existing.emoji_name, emojiCode, reactionType };
}

export async function doRemoveReaction(services: ActionServices, realm: Realm, user: User, r: PreparedReaction): Promise<void> {
  const { message, stream } = r.target;
  await transaction(services.db, async (tx, afterCommit) => {
    if (!(await deleteReaction(tx, message.id, user.id, r.emojiCode, r.reactionType))) {
      throw new JsonableError("Reaction doesn't exist.", 'REACTION_DOES_NOT_EXIST');
    }
    const recipients = await messageActionRecipientIds(tx, message, stream);
    afterCommit(() => services.events.send(realm.id, reactionEvent('remove', user, message.id, r), recipients));
  });
}
