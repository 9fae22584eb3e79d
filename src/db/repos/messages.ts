import type { Insertable } from 'kysely';
import type { Tx } from '../index.js';
import type { Message, MessageTable } from '../tables.js';

export type NewMessage = Insertable<MessageTable>;

export interface ReactionRow {
  message_id: number;
  user_id: number;
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
}

export async function insertMessage(db: Tx, row: NewMessage): Promise<Message> {
  return db.insertInto('messages').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function fetchMessageById(db: Tx, realmId: number, id: number): Promise<Message | undefined> {
  return db.selectFrom('messages').selectAll().where('realm_id', '=', realmId).where('id', '=', id).executeTakeFirst();
}

/** Rows in ascending ID order; IDs of other realms or missing messages are skipped. */
export async function fetchMessagesByIds(db: Tx, realmId: number, ids: readonly number[]): Promise<Message[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('messages')
    .selectAll()
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

/** Channel names by ID, for display_recipient. */
export async function fetchStreamNames(db: Tx, streamIds: readonly number[]): Promise<Map<number, string>> {
  if (streamIds.length === 0) return new Map();
  const rows = await db.selectFrom('streams').select(['id', 'name']).where('id', 'in', [...streamIds]).execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}

export interface MessageUserRow {
  id: number;
  realm_id: number;
  email: string;
  delivery_email: string;
  full_name: string;
  avatar_source: string;
  avatar_version: number;
}

/** The user fields message dicts need (senders and direct-message participants). */
export async function fetchMessageUsers(db: Tx, userIds: readonly number[]): Promise<Map<number, MessageUserRow>> {
  if (userIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('users')
    .select(['id', 'realm_id', 'email', 'delivery_email', 'full_name', 'avatar_source', 'avatar_version'])
    .where('id', 'in', [...userIds])
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
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
