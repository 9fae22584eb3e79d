import { createHash } from 'node:crypto';
import type { Tx } from '../../db/index.js';
import type { Message, Realm } from '../../db/tables.js';
import { fetchReactions, fetchSubmessages, type MessageUserRow, type ReactionRow, type SubmessageRow } from '../../db/repos/messages.js';
import { fetchRealmStreams } from '../../db/repos/streams.js';
import { fetchRealmUsers } from '../../db/repos/users.js';
import { fetchLinkifiersCached } from '../../db/cached.js';
import { avatarUrl, avatarUrlOmittable } from '../avatar.js';
import { flagsList } from '../message_flags.js';
import { topicLinks, type Linkifier } from '../markdown/index.js';

export interface DisplayRecipientUser {
  id: number;
  email: string;
  full_name: string;
  is_mirror_dummy: boolean;
}

export interface EditHistoryEntry {
  user_id: number | null;
  timestamp: number;
  prev_content?: string;
  prev_rendered_content?: string;
  prev_topic?: string;
  topic?: string;
  prev_stream?: number;
  stream?: number;
}

/** A message as GET /messages and `message` events carry it (zulip.yaml MessagesBase). */
export interface MessageDict {
  id: number;
  sender_id: number;
  sender_full_name: string;
  sender_email: string;
  sender_realm_str: string;
  avatar_url: string | null;
  client: string;
  content: string;
  content_type: 'text/html' | 'text/x-markdown';
  display_recipient: string | DisplayRecipientUser[];
  recipient_id: number;
  stream_id?: number;
  subject: string;
  topic_links: { text: string; url: string }[];
  submessages: SubmessageDict[];
  timestamp: number;
  type: 'stream' | 'private';
  is_me_message: boolean;
  reactions: { emoji_name: string; emoji_code: string; reaction_type: string; user_id: number }[];
  flags?: string[];
  last_edit_timestamp?: number;
  last_moved_timestamp?: number;
  edit_history?: EditHistoryEntry[];
}

/** A message dict's submessage (zulip.yaml's MessagesBase.submessages). */
export interface SubmessageDict {
  msg_type: string;
  content: string;
  message_id: number;
  sender_id: number;
  id: number;
}

export interface MessageDictOptions {
  /** Rendered HTML (true) or the raw Markdown source (false). */
  applyMarkdown: boolean;
  /** Omit avatar_url (null) where the client can compute the Gravatar URL itself. */
  clientGravatar: boolean;
  /**
   * Whether the client understands the empty topic (client capability `empty_topic_name`,
   * or `allow_empty_topic_name` on fetches). When false, "" is shown as `emptyTopicDisplayName`.
   */
  allowEmptyTopicName: boolean;
  emptyTopicDisplayName: string;
  /** Realm setting message_edit_history_visibility_policy: which edit_history entries to show. */
  editHistoryVisibility?: 'all' | 'moves' | 'none';
}

/** Everything besides the rows that formatting needs, loaded in a few batched queries. */
export interface MessageRelations {
  realm: Pick<Realm, 'string_id'>;
  realmUrl: string;
  users: Map<number, MessageUserRow>;
  streamNames: Map<number, string>;
  reactions: ReadonlyMap<number, readonly ReactionRow[]>;
  submessages: ReadonlyMap<number, readonly SubmessageRow[]>;
  /** The realm's linkifiers, for topic_links. */
  linkifiers: readonly Linkifier[];
}

/**
 * recipient_id scheme (Zulip has a Recipient table; we derive the ID instead, stably):
 * a channel's recipient_id is 2 * stream_id (even); a direct-message conversation's is odd,
 * 2 * h + 1 where h is the first 48 bits of SHA-1 over the conversation's dm_key (sorted
 * participant IDs), so both directions of a 1:1 conversation share it, as in Zulip 10+.
 */
export function recipientIdFor(row: Pick<Message, 'type' | 'stream_id' | 'dm_key'>): number {
  if (row.type === 'stream') return 2 * (row.stream_id ?? 0);
  const h = createHash('sha1').update(row.dm_key ?? '').digest();
  return 2 * h.readUIntBE(0, 6) + 1;
}

export function dmParticipantIds(dmKey: string | null): number[] {
  if (!dmKey) return [];
  return dmKey.split(',').map(Number);
}

/** The sorted dm_key for a set of participants (sender included). */
export function dmKeyFor(userIds: Iterable<number>): string {
  return [...new Set(userIds)].sort((a, b) => a - b).join(',');
}

/** Whether a sender's real email is visible to everyone: only then may clients compute Gravatar URLs. */
export function senderEmailIsPublic(u: Pick<MessageUserRow, 'email' | 'delivery_email'>): boolean {
  return u.email.toLowerCase() === u.delivery_email.toLowerCase();
}

/** Zulip's rule (Message.is_status_message): the source starts with "/me ". */
export function isMeMessage(content: string): boolean {
  return content.startsWith('/me ');
}

function parseEditHistory(text: string | null, visibility: 'all' | 'moves' | 'none'): EditHistoryEntry[] | undefined {
  if (!text || visibility === 'none') return undefined;
  let entries: EditHistoryEntry[];
  try {
    entries = JSON.parse(text) as EditHistoryEntry[];
  } catch {
    return undefined;
  }
  if (visibility === 'moves') {
    entries = entries
      .filter((e) => e.prev_topic !== undefined || e.prev_stream !== undefined)
      .map(({ prev_content: _c, prev_rendered_content: _r, ...rest }) => rest);
  }
  return entries.length ? entries : undefined;
}

/** Pure: builds one message dict from its row and preloaded relations. */
export function formatMessage(row: Message, rel: MessageRelations, opts: MessageDictOptions, flags?: number): MessageDict {
  const sender = rel.users.get(row.sender_id);
  const isStream = row.type === 'stream';
  let displayRecipient: MessageDict['display_recipient'];
  if (isStream) {
    displayRecipient = rel.streamNames.get(row.stream_id ?? 0) ?? '';
  } else {
    displayRecipient = dmParticipantIds(row.dm_key).map((id) => {
      const u = rel.users.get(id);
      return { id, email: u?.email ?? '', full_name: u?.full_name ?? '', is_mirror_dummy: false };
    });
  }
  let topic = isStream ? row.topic : '';
  if (isStream && topic === '' && !opts.allowEmptyTopicName) topic = opts.emptyTopicDisplayName;
  let avatar: string | null = sender ? avatarUrl(rel.realmUrl, sender) : null;
  if (sender && opts.clientGravatar && avatarUrlOmittable(sender, senderEmailIsPublic(sender))) avatar = null;

  const dict: MessageDict = {
    id: row.id,
    sender_id: row.sender_id,
    sender_full_name: sender?.full_name ?? '',
    sender_email: sender?.email ?? '',
    sender_realm_str: rel.realm.string_id,
    avatar_url: avatar,
    client: row.sending_client,
    content: opts.applyMarkdown ? row.rendered_content : row.content,
    content_type: opts.applyMarkdown ? 'text/html' : 'text/x-markdown',
    display_recipient: displayRecipient,
    recipient_id: recipientIdFor(row),
    subject: topic,
    topic_links: isStream && rel.linkifiers.length ? topicLinks(row.topic, rel.linkifiers) : [],
    submessages: (rel.submessages.get(row.id) ?? []).map((x) => ({ msg_type: x.msg_type, content: x.content, message_id: x.message_id, sender_id: x.sender_id, id: x.id })),
    timestamp: row.date_sent,
    type: isStream ? 'stream' : 'private',
    is_me_message: isMeMessage(row.content),
    reactions: (rel.reactions.get(row.id) ?? []).map((r) => ({
      emoji_name: r.emoji_name,
      emoji_code: r.emoji_code,
      reaction_type: r.reaction_type,
      user_id: r.user_id,
    })),
  };
  if (isStream) dict.stream_id = row.stream_id ?? 0;
  if (flags !== undefined) dict.flags = flagsList(flags);
  if (row.last_edit_time !== null) dict.last_edit_timestamp = row.last_edit_time;
  if (row.last_moved_time !== null) dict.last_moved_timestamp = row.last_moved_time;
  const history = parseEditHistory(row.edit_history, opts.editHistoryVisibility ?? 'all');
  if (history) dict.edit_history = history;
  return dict;
}

/** The row with `id` among `rows` sorted by ID. */
function findById<T extends { id: number }>(rows: readonly T[], id: number): T | undefined {
  let lo = 0;
  let hi = rows.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const midId = rows[mid]!.id;
    if (midId === id) return rows[mid];
    if (midId < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

/** A message row, with its reactions and submessages when the query that read it brought them along. */
export type MessageRow = Message & { reactions?: readonly ReactionRow[]; submessages?: readonly SubmessageRow[] };

/**
 * Loads what formatting `rows` needs: the realm's users, channels and linkifiers from the
 * read cache (db/cache.ts; inside a transaction they are read whole), and unless every row
 * carries its reactions and submessages, those in one query each, however many messages there are.
 */
export async function fetchMessageRelations(
  db: Tx,
  realm: Pick<Realm, 'id' | 'string_id'>,
  realmUrl: string,
  rows: readonly MessageRow[],
): Promise<MessageRelations> {
  const userIds = new Set<number>();
  const streamIds = new Set<number>();
  for (const r of rows) {
    userIds.add(r.sender_id);
    if (r.type === 'stream') streamIds.add(r.stream_id ?? 0);
    else for (const id of dmParticipantIds(r.dm_key)) userIds.add(id);
  }
  const preloaded = rows.every((r) => r.reactions !== undefined && r.submessages !== undefined);
  const [realmUsers, channels, reactionRows, submessageRows, linkifiers] = await Promise.all([
    userIds.size ? fetchRealmUsers(db, realm.id) : [],
    streamIds.size ? fetchRealmStreams(db, realm.id, true) : [],
    preloaded ? [] : fetchReactions(db, rows.map((r) => r.id)),
    preloaded ? [] : fetchSubmessages(db, rows.map((r) => r.id)),
    streamIds.size ? fetchLinkifiersCached(db, realm.id) : [],
  ]);
  const users = new Map<number, MessageUserRow>();
  for (const id of userIds) {
    const u = findById(realmUsers, id);
    if (u) users.set(id, u);
  }
  const streamNames = new Map<number, string>();
  for (const id of streamIds) {
    const c = findById(channels, id);
    if (c) streamNames.set(id, c.name);
  }
  if (preloaded) {
    return { realm, realmUrl, users, streamNames, reactions: new Map(rows.map((r) => [r.id, r.reactions!])), submessages: new Map(rows.map((r) => [r.id, r.submessages!])), linkifiers };
  }
  return { realm, realmUrl, users, streamNames, reactions: byMessage(reactionRows), submessages: byMessage(submessageRows), linkifiers };
}

function byMessage<T extends { message_id: number }>(rows: readonly T[]): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const r of rows) {
    const list = out.get(r.message_id);
    if (list) list.push(r);
    else out.set(r.message_id, [r]);
  }
  return out;
}

/**
 * Message dicts for rows (in the given order). `flags` maps message ID to the caller's
 * user_messages flag bits; messages without an entry get `flags` only if `defaultFlags` is given
 * (e.g. 0 plus `historical` for readable channel messages the caller never received).
 */
export async function formatMessages(
  db: Tx,
  realm: Pick<Realm, 'id' | 'string_id'>,
  realmUrl: string,
  rows: readonly MessageRow[],
  opts: MessageDictOptions,
  flags?: ReadonlyMap<number, number>,
  defaultFlags?: number,
): Promise<MessageDict[]> {
  const rel = await fetchMessageRelations(db, realm, realmUrl, rows);
  return rows.map((r) => formatMessage(r, rel, opts, flags ? (flags.get(r.id) ?? defaultFlags) : defaultFlags));
}
