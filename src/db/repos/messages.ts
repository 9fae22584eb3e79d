import { sql, type Insertable } from 'kysely';
import type { Tx } from '../index.js';
import { insertRows } from '../bulk.js';
import type { Message, MessageTable, Stream, User } from '../tables.js';
import { usersByEitherEmail } from './users.js';

export type NewMessage = Insertable<MessageTable>;

export interface ReactionRow {
  message_id: number;
  user_id: number;
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
}

/** Zulip's SubMessage as message dicts list it (a poll's or to-do list's widget and events). */
export interface SubmessageRow {
  id: number;
  message_id: number;
  sender_id: number;
  msg_type: string;
  content: string;
}

/**
 * Every column of the Message type, for reads: `SELECT *` would also bring PostgreSQL's
 * search_tsvector (migration 0101), a few hundred bytes per message that nothing reads. A
 * record, so the compiler keeps the list equal to the type.
 */
const MESSAGE_COLUMN_SET: Record<keyof Message, true> = {
  id: true,
  realm_id: true,
  sender_id: true,
  type: true,
  stream_id: true,
  topic: true,
  topic_lc: true,
  dm_key: true,
  content: true,
  rendered_content: true,
  rendered_content_version: true,
  date_sent: true,
  sending_client: true,
  last_edit_time: true,
  last_moved_time: true,
  edit_history: true,
  has_link: true,
  has_image: true,
  has_attachment: true,
};
export const MESSAGE_COLUMNS = Object.keys(MESSAGE_COLUMN_SET) as (keyof Message)[];

/** What a send writes; the other columns keep their defaults. */
const NEW_MESSAGE_COLUMNS = [
  'realm_id',
  'sender_id',
  'type',
  'stream_id',
  'topic',
  'topic_lc',
  'dm_key',
  'content',
  'rendered_content',
  'date_sent',
  'sending_client',
  'has_link',
  'has_image',
  'has_attachment',
] as const satisfies readonly (keyof NewMessage)[];

export type SentMessageRow = Pick<NewMessage, (typeof NEW_MESSAGE_COLUMNS)[number]>;

/**
 * Inserts a batch of new messages in one statement (one round trip on PostgreSQL) and returns
 * their rows in the order given: IDs are assigned in the order of the VALUES list.
 */
export async function insertMessages(db: Tx, rows: readonly SentMessageRow[]): Promise<Message[]> {
  const inserted = await insertRows<Message>(db, 'messages', NEW_MESSAGE_COLUMNS, rows, MESSAGE_COLUMNS);
  return inserted.sort((a, b) => a.id - b.id);
}

/** Rows in ascending ID order; IDs of other realms or missing messages are skipped. */
export async function fetchMessagesByIds(db: Tx, realmId: number, ids: readonly number[]): Promise<Message[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('messages')
    .select(MESSAGE_COLUMNS)
    .where('realm_id', '=', realmId)
    .where('id', 'in', [...ids])
    .orderBy('id')
    .execute();
}

/** Reactions of these messages, oldest first (the order the message dict lists them). */
export async function fetchReactions(db: Tx, messageIds: readonly number[]): Promise<ReactionRow[]> {
  if (messageIds.length === 0) return [];
  return db
    .selectFrom('reactions')
    .select(['message_id', 'user_id', 'emoji_name', 'emoji_code', 'reaction_type'])
    .where('message_id', 'in', [...messageIds])
    .orderBy('id')
    .execute();
}

/** Submessages of these messages, oldest first (Zulip's SubMessage.get_raw_db_rows). */
export async function fetchSubmessages(db: Tx, messageIds: readonly number[]): Promise<SubmessageRow[]> {
  if (messageIds.length === 0) return [];
  const rows = await db
    .selectFrom('submessages')
    .select(['id', 'message_id', 'sender_id', 'msg_type', 'content'])
    .where('message_id', 'in', [...messageIds])
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ ...r, id: Number(r.id), message_id: Number(r.message_id), sender_id: Number(r.sender_id) }));
}

/** The user fields message dicts need (senders and direct-message participants). */
export interface MessageUserRow {
  id: number;
  realm_id: number;
  email: string;
  delivery_email: string;
  full_name: string;
  avatar_source: string;
  avatar_version: number;
}

export interface StreamAccessRow {
  id: number;
  realm_id: number;
  name: string;
  invite_only: number;
  is_web_public: number;
  history_public_to_subscribers: number;
  deactivated: number;
  permissions: string;
  first_message_id: number | null;
}

/** The channel fields message access and sending decide on. */
export async function fetchStreamAccessRows(db: Tx, streamIds: readonly number[]): Promise<Map<number, StreamAccessRow>> {
  if (streamIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('streams')
    .select(['id', 'realm_id', 'name', 'invite_only', 'is_web_public', 'history_public_to_subscribers', 'deactivated', 'permissions', 'first_message_id'])
    .where('id', 'in', [...streamIds])
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}

/** Which of these channels the user is actively subscribed to. */
export async function fetchSubscribedStreamIds(db: Tx, userId: number, streamIds: readonly number[]): Promise<Set<number>> {
  if (streamIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('subscriptions')
    .select('stream_id')
    .where('user_id', '=', userId)
    .where('stream_id', 'in', [...streamIds])
    .where('active', '=', 1)
    .execute();
  return new Set(rows.map((r) => r.stream_id));
}

export interface ChannelRecipientRow {
  user_id: number;
  is_muted: number;
  is_bot: number;
  bot_type: number | null;
  role: number;
}

/** Active subscribers of a channel who are active users: the recipients of a channel message. */
export async function fetchChannelRecipients(db: Tx, streamId: number): Promise<ChannelRecipientRow[]> {
  return db
    .selectFrom('subscriptions')
    .innerJoin('users', 'users.id', 'subscriptions.user_id')
    .select(['subscriptions.user_id', 'subscriptions.is_muted', 'users.is_bot', 'users.bot_type', 'users.role'])
    .where('subscriptions.stream_id', '=', streamId)
    .where('subscriptions.active', '=', 1)
    .where('users.is_active', '=', 1)
    .orderBy('subscriptions.user_id')
    .execute();
}

/** Users of the realm by API or real email (case-insensitive). */
export async function fetchUsersByEmails(db: Tx, realmId: number, emails: readonly string[]): Promise<User[]> {
  if (emails.length === 0) return [];
  return usersByEitherEmail(db, realmId, emails.map((e) => e.toLowerCase())).execute();
}

/** Topic participants (Zulip's participants_for_topic): everyone who sent or reacted to a message in it. */
export async function fetchTopicParticipants(db: Tx, streamId: number, topicLc: string): Promise<Set<number>> {
  const senders = db.selectFrom('messages').select('sender_id as user_id').where('stream_id', '=', streamId).where('topic_lc', '=', topicLc);
  const reactors = db
    .selectFrom('reactions')
    .innerJoin('messages', 'messages.id', 'reactions.message_id')
    .select('reactions.user_id as user_id')
    .where('messages.stream_id', '=', streamId)
    .where('messages.topic_lc', '=', topicLc);
  const rows = await senders.union(reactors).execute();
  return new Set(rows.map((r) => r.user_id));
}

/** Whether the topic has any message (in the whole channel history). */
export async function topicHasMessages(db: Tx, streamId: number, topicLc: string): Promise<boolean> {
  const row = await db
    .selectFrom('messages')
    .select('id')
    .where('stream_id', '=', streamId)
    .where('topic_lc', '=', topicLc)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Whether the user received any message in the topic (for channels whose history they cannot read). */
export async function topicHasMessagesReceivedBy(db: Tx, userId: number, streamId: number, topicLc: string): Promise<boolean> {
  const row = await db
    .selectFrom('user_messages')
    .innerJoin('messages', 'messages.id', 'user_messages.message_id')
    .select('messages.id')
    .where('user_messages.user_id', '=', userId)
    .where('messages.stream_id', '=', streamId)
    .where('messages.topic_lc', '=', topicLc)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Whether any direct message was ever sent in this conversation. */
export async function dmConversationExists(db: Tx, realmId: number, dmKey: string): Promise<boolean> {
  const row = await db.selectFrom('messages').select('id').where('dm_key', '=', dmKey).where('realm_id', '=', realmId).limit(1).executeTakeFirst();
  return row !== undefined;
}

/** Every alert word of the realm's users, by user. */
export async function fetchRealmAlertWords(db: Tx, realmId: number): Promise<Map<number, string[]>> {
  const rows = await db
    .selectFrom('alert_words')
    .innerJoin('users', 'users.id', 'alert_words.user_id')
    .select(['alert_words.user_id', 'alert_words.word'])
    .where('users.realm_id', '=', realmId)
    .execute();
  const out = new Map<number, string[]>();
  for (const r of rows) {
    const list = out.get(r.user_id);
    if (list) list.push(r.word);
    else out.set(r.user_id, [r.word]);
  }
  return out;
}

/** Users who muted this user: their copies of its messages start read. */
export async function fetchMutingUserIds(db: Tx, mutedUserId: number): Promise<Set<number>> {
  const rows = await db.selectFrom('muted_users').select('user_id').where('muted_user_id', '=', mutedUserId).execute();
  return new Set(rows.map((r) => r.user_id));
}

/** Records a channel's first message once (no-op when it already has one). */
export async function setStreamFirstMessageIdIfNull(db: Tx, streamId: number, messageId: number): Promise<void> {
  await db.updateTable('streams').set({ first_message_id: messageId }).where('id', '=', streamId).where('first_message_id', 'is', null).execute();
}

export async function updateStreamFirstMessageId(db: Tx, streamId: number, messageId: number | null): Promise<void> {
  await db.updateTable('streams').set({ first_message_id: messageId }).where('id', '=', streamId).execute();
}

/** Settings JSON of some users (for per-user preferences such as following topics where mentioned). */
export async function fetchUserSettingsRows(db: Tx, userIds: readonly number[]): Promise<{ id: number; settings: string; timezone: string; is_bot: number }[]> {
  if (userIds.length === 0) return [];
  return db.selectFrom('users').select(['id', 'settings', 'timezone', 'is_bot']).where('id', 'in', [...userIds]).execute();
}

/** Active users of the realm whose full name is one of these (case-insensitive), for mentions. */
export async function fetchUsersByFullNames(db: Tx, realmId: number, names: readonly string[]): Promise<{ id: number; full_name: string; email: string; is_bot: number }[]> {
  if (names.length === 0) return [];
  return db
    .selectFrom('users')
    .select(['id', 'full_name', 'email', 'is_bot'])
    .where('realm_id', '=', realmId)
    .where('is_active', '=', 1)
    .where(sql`lower(full_name)`, 'in', names.map((n) => n.toLowerCase()))
    .orderBy('id')
    .execute();
}

/** Active users of the realm among these IDs, for `@**name|id**` mentions. */
export async function fetchActiveUsersByIds(db: Tx, realmId: number, ids: readonly number[]): Promise<{ id: number; full_name: string; email: string; is_bot: number }[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('users')
    .select(['id', 'full_name', 'email', 'is_bot'])
    .where('realm_id', '=', realmId)
    .where('is_active', '=', 1)
    .where('id', 'in', [...ids])
    .execute();
}

/** User groups of the realm named by mentions (case-insensitive), deactivated ones excluded. */
export async function fetchGroupsByNames(db: Tx, realmId: number, names: readonly string[]): Promise<{ id: number; name: string; permissions: string; is_system_group: number }[]> {
  if (names.length === 0) return [];
  return db
    .selectFrom('user_groups')
    .select(['id', 'name', 'permissions', 'is_system_group'])
    .where('realm_id', '=', realmId)
    .where('deactivated', '=', 0)
    .where('name_lc', 'in', names.map((n) => n.toLowerCase()))
    .execute();
}

/** Which of these channels the user has muted. */
export async function fetchMutedStreamIds(db: Tx, userId: number, streamIds: readonly number[]): Promise<Set<number>> {
  if (streamIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('subscriptions')
    .select('stream_id')
    .where('user_id', '=', userId)
    .where('stream_id', 'in', [...streamIds])
    .where('is_muted', '=', 1)
    .execute();
  return new Set(rows.map((r) => r.stream_id));
}

/**
 * Topics of a channel with their newest message ID: the whole channel, or only the messages
 * `onlyUserId` received (channels whose history is protected; there, each spelling of a
 * topic, which the caller merges). For the whole channel each topic comes once, spelled as
 * its newest message spells it: the newest ID of each topic is read from the (stream_id,
 * topic_lc, id) index alone, then one message per topic for its spelling, instead of every
 * message of the channel.
 */
export async function fetchTopicHistoryRows(db: Tx, streamId: number, onlyUserId: number | null): Promise<{ topic: string; max_id: number }[]> {
  if (onlyUserId === null) {
    const newest = db
      .selectFrom('messages')
      .select(['topic_lc', (eb) => eb.fn.max('id').as('max_id')])
      .where('stream_id', '=', streamId)
      .groupBy('topic_lc')
      .as('t');
    const rows = await db.selectFrom(newest).innerJoin('messages', 'messages.id', 't.max_id').select(['messages.topic', 't.max_id']).execute();
    return rows.map((r) => ({ topic: r.topic, max_id: Number(r.max_id) }));
  }
  const rows = await db
    .selectFrom('user_messages')
    .innerJoin('messages', 'messages.id', 'user_messages.message_id')
    .select(['messages.topic', (eb) => eb.fn.max('messages.id').as('max_id')])
    .where('user_messages.user_id', '=', onlyUserId)
    .where('messages.stream_id', '=', streamId)
    .groupBy('messages.topic')
    .execute();
  return rows.map((r) => ({ topic: r.topic, max_id: Number(r.max_id) }));
}

/** How many messages a topic has (by its lowercased name). */
export async function countTopicMessages(db: Tx, streamId: number, topicLc: string): Promise<number> {
  const r = await db
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('stream_id', '=', streamId)
    .where('topic_lc', '=', topicLc)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The newest `limit` messages of a topic the deleting user may see, newest first. */
export async function fetchTopicMessagesNewestFirst(
  db: Tx,
  streamId: number,
  topicLc: string,
  limit: number,
  onlyUserId: number | null,
): Promise<{ id: number; topic: string }[]> {
  if (onlyUserId === null) {
    return db
      .selectFrom('messages')
      .select(['id', 'topic'])
      .where('stream_id', '=', streamId)
      .where('topic_lc', '=', topicLc)
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  }
  return db
    .selectFrom('user_messages')
    .innerJoin('messages', 'messages.id', 'user_messages.message_id')
    .select(['messages.id', 'messages.topic'])
    .where('user_messages.user_id', '=', onlyUserId)
    .where('messages.stream_id', '=', streamId)
    .where('messages.topic_lc', '=', topicLc)
    .orderBy('messages.id', 'desc')
    .limit(limit)
    .execute();
}

/** Users with a user_messages row for any of these messages. */
export async function fetchUserIdsWithRows(db: Tx, messageIds: readonly number[]): Promise<number[]> {
  if (messageIds.length === 0) return [];
  const rows = await db.selectFrom('user_messages').select('user_id').distinct().where('message_id', 'in', [...messageIds]).execute();
  return rows.map((r) => r.user_id);
}

/** Deletes messages with their recipient rows, reactions, submessages and attachment links. */
export async function deleteMessagesByIds(db: Tx, messageIds: readonly number[]): Promise<void> {
  if (messageIds.length === 0) return;
  const ids = [...messageIds];
  await db.deleteFrom('reactions').where('message_id', 'in', ids).execute();
  await db.deleteFrom('submessages').where('message_id', 'in', ids).execute();
  await db.deleteFrom('attachment_messages').where('message_id', 'in', ids).execute();
  await db.deleteFrom('user_messages').where('message_id', 'in', ids).execute();
  await db.deleteFrom('messages').where('id', 'in', ids).execute();
}

/** The oldest remaining message of a channel, or null. */
export async function fetchFirstMessageId(db: Tx, streamId: number): Promise<number | null> {
  const row = await db.selectFrom('messages').select('id').where('stream_id', '=', streamId).orderBy('id').limit(1).executeTakeFirst();
  return row?.id ?? null;
}

/** Users with any visibility policy for a topic. */
export async function fetchUserIdsWithTopicPolicy(db: Tx, streamId: number, topicLc: string): Promise<number[]> {
  const rows = await db.selectFrom('user_topics').select('user_id').where('stream_id', '=', streamId).where('topic_lc', '=', topicLc).execute();
  return rows.map((r) => r.user_id);
}

/** Which of these users still received some message of the topic. */
export async function fetchUsersWithMessagesInTopic(db: Tx, userIds: readonly number[], streamId: number, topicLc: string): Promise<Set<number>> {
  if (userIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('user_messages')
    .innerJoin('messages', 'messages.id', 'user_messages.message_id')
    .select('user_messages.user_id')
    .distinct()
    .where('user_messages.user_id', 'in', [...userIds])
    .where('messages.stream_id', '=', streamId)
    .where('messages.topic_lc', '=', topicLc)
    .execute();
  return new Set(rows.map((r) => r.user_id));
}

/** Channels of the realm named in a message (exact names), with the sender's subscription if any. */
export async function fetchStreamsByNamesForMentions(
  db: Tx,
  realmId: number,
  names: readonly string[],
  subscriberId = 0,
): Promise<(Stream & { subscriber_id: number | null })[]> {
  if (names.length === 0) return [];
  return db
    .selectFrom('streams')
    .leftJoin('subscriptions', (j) =>
      j.onRef('subscriptions.stream_id', '=', 'streams.id').on('subscriptions.user_id', '=', subscriberId).on('subscriptions.active', '=', 1),
    )
    .selectAll('streams')
    .select('subscriptions.user_id as subscriber_id')
    .where('streams.realm_id', '=', realmId)
    .where('streams.deactivated', '=', 0)
    .where('streams.name', 'in', [...names])
    .execute();
}

export type MessageChanges = Partial<
  Pick<
    Message,
    | 'content'
    | 'rendered_content'
    | 'has_link'
    | 'has_image'
    | 'has_attachment'
    | 'last_edit_time'
    | 'last_moved_time'
    | 'edit_history'
    | 'topic'
    | 'topic_lc'
    | 'stream_id'
  >
>;

export async function updateMessageRow(db: Tx, messageId: number, changes: MessageChanges): Promise<void> {
  await db.updateTable('messages').set(changes).where('id', '=', messageId).execute();
}

/** The messages of a topic from `fromId` on (or all), ascending: what a topic edit moves. */
export async function fetchTopicMessagesForMove(
  db: Tx,
  streamId: number,
  topicLc: string,
  fromId: number,
  onlyUserId: number | null,
): Promise<Message[]> {
  if (onlyUserId === null) {
    return db
      .selectFrom('messages')
      .select(MESSAGE_COLUMNS)
      .where('stream_id', '=', streamId)
      .where('topic_lc', '=', topicLc)
      .where('id', '>=', fromId)
      .orderBy('id')
      .execute();
  }
  return db
    .selectFrom('messages')
    .innerJoin('user_messages', 'user_messages.message_id', 'messages.id')
    .select(MESSAGE_COLUMNS.map((c) => `messages.${c}` as const))
    .where('user_messages.user_id', '=', onlyUserId)
    .where('messages.stream_id', '=', streamId)
    .where('messages.topic_lc', '=', topicLc)
    .where('messages.id', '>=', fromId)
    .orderBy('messages.id')
    .execute();
}

/** Recipient rows of several messages, with their flags. */
export async function fetchRecipientRows(db: Tx, messageIds: readonly number[]): Promise<{ user_id: number; message_id: number; flags: number }[]> {
  if (messageIds.length === 0) return [];
  const rows = await db
    .selectFrom('user_messages')
    .select(['user_id', 'message_id', 'flags'])
    .where('message_id', 'in', [...messageIds])
    .orderBy('user_id')
    .execute();
  return rows.map((r) => ({ ...r, flags: Number(r.flags) }));
}

export async function setUserMessageFlagsRow(db: Tx, userId: number, messageId: number, flags: number): Promise<void> {
  await db.updateTable('user_messages').set({ flags }).where('user_id', '=', userId).where('message_id', '=', messageId).execute();
}

/** Removes these users' copies of these messages (when messages move out of their reach). */
export async function deleteUserMessagesFor(db: Tx, userIds: readonly number[], messageIds: readonly number[]): Promise<void> {
  if (userIds.length === 0 || messageIds.length === 0) return;
  await db.deleteFrom('user_messages').where('user_id', 'in', [...userIds]).where('message_id', 'in', [...messageIds]).execute();
}
