import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Dialect, Tx } from '../index.js';
import type { Message } from '../tables.js';
import { searchCondition, wordsDriver, type WordsDriver } from './search.js';
import { MESSAGE_COLUMNS, type ReactionRow, type SubmessageRow } from './messages.js';
import type { NarrowCondition, ResolvedNarrow } from '../../lib/narrow/conditions.js';
import { FLAG_BITS } from '../../lib/message_flags.js';
import { RESOLVED_TOPIC_PREFIX } from '../../lib/narrow/terms.js';
import { VISIBILITY_FOLLOWED, VISIBILITY_MUTED, VISIBILITY_UNMUTED } from '../../lib/topics.js';

/**
 * Narrow -> SQL. Every query has one of two bases (Zulip's get_base_query_for_search):
 *  - the reader's own rows: user_messages um JOIN messages m, um.user_id = reader. This
 *    is the access control: a user_messages row means the reader received the message.
 *  - history: messages m LEFT JOIN the reader's row, used only when the narrow pins a
 *    channel whose history the reader may read (ResolvedNarrow.includeHistory); the
 *    channel condition then bounds the query.
 * Conditions only ever remove rows. Flag masks are spelled as literals, never parameters,
 * so SQLite and PostgreSQL can match the partial indexes on user_messages.
 */

export interface NarrowReader {
  userId: number;
  dialect: Dialect;
}

/**
 * A message row with the reader's flag bits (null when they have no row: historical) and its
 * reactions, oldest first.
 */
export type NarrowRow = Message & { um_flags: number | null; reactions: ReactionRow[]; submessages: SubmessageRow[] };

function flagTest(mask: number, set: boolean): RawBuilder<SqlBool> {
  return set ? sql<SqlBool>`(um.flags & ${sql.lit(mask)}) <> 0` : sql<SqlBool>`(um.flags & ${sql.lit(mask)}) = 0`;
}

const userTopicExists = (reader: NarrowReader, policies: number[]): RawBuilder<SqlBool> =>
  sql<SqlBool>`EXISTS (SELECT 1 FROM user_topics ut WHERE ut.user_id = ${reader.userId} AND ut.stream_id = m.stream_id AND ut.topic_lc = m.topic_lc AND ut.visibility_policy IN (${sql.join(policies.map((p) => sql.lit(p)))}))`;

function positiveCondition(c: NarrowCondition, reader: NarrowReader): RawBuilder<SqlBool> {
  switch (c.kind) {
    case 'stream':
      if (c.streamIds.length === 0) return sql<SqlBool>`1 = 0`;
      if (c.streamIds.length === 1) return sql<SqlBool>`m.stream_id = ${c.streamIds[0]}`;
      return sql<SqlBool>`m.stream_id IN (${sql.join(c.streamIds)})`;
    case 'topic':
      return sql<SqlBool>`(m.topic_lc = ${c.topicKey} AND m.type = 'stream')`;
    case 'dm':
      return sql<SqlBool>`m.dm_key = ${c.dmKey}`;
    case 'dm_including': {
      const member = sql<SqlBool>`(',' || m.dm_key || ',') LIKE ${`%,${c.userId},%`}`;
      return c.groupOnly ? sql<SqlBool>`(${member} AND m.dm_key LIKE '%,%,%')` : member;
    }
    case 'private':
      return flagTest(FLAG_BITS.is_private, true);
    case 'sender':
      return sql<SqlBool>`m.sender_id = ${c.userId}`;
    case 'flags_any':
      return flagTest(c.mask, true);
    case 'unread':
      return flagTest(FLAG_BITS.read, false);
    case 'resolved':
      return sql<SqlBool>`m.topic LIKE ${`${RESOLVED_TOPIC_PREFIX}%`}`;
    case 'followed':
      return userTopicExists(reader, [VISIBILITY_FOLLOWED]);
    case 'unmuted': {
      const notMutedTopic = sql<SqlBool>`NOT ${userTopicExists(reader, [VISIBILITY_MUTED])}`;
      if (!c.streamMutes) return notMutedTopic;
      const mutedChannel = sql<SqlBool>`m.stream_id IN (SELECT s.stream_id FROM subscriptions s WHERE s.user_id = ${reader.userId} AND s.active = 1 AND s.is_muted = 1)`;
      return sql<SqlBool>`(${notMutedTopic} AND (m.stream_id IS NULL OR NOT ${mutedChannel} OR ${userTopicExists(reader, [VISIBILITY_UNMUTED, VISIBILITY_FOLLOWED])}))`;
    }
    case 'id':
      return sql<SqlBool>`m.id = ${c.id}`;
    case 'has':
      if (c.what === 'reaction') return sql<SqlBool>`EXISTS (SELECT 1 FROM reactions r WHERE r.message_id = m.id)`;
      return sql<SqlBool>`${sql.ref(`m.has_${c.what}`)} = 1`;
    case 'mentions':
      return sql<SqlBool>`m.rendered_content LIKE ${`%class="user-mention" data-user-id="${c.userId}"%`}`;
    case 'nothing':
      return sql<SqlBool>`1 = 0`;
  }
}

/** A negated condition must also keep rows where the condition is NULL (e.g. -channel keeps DMs). */
function conditionSql(c: NarrowCondition, reader: NarrowReader): RawBuilder<SqlBool> {
  const positive = positiveCondition(c, reader);
  return c.negated ? sql<SqlBool>`(${positive}) IS NOT TRUE` : positive;
}

type Base = 'user' | 'history';

/**
 * How one narrow query runs: its base (see above), the column it is ordered and bounded
 * by, which decides the index that drives it, and for searches whether the index of the
 * search's words drives (`words`).
 */
interface Plan {
  base: Base;
  id: RawBuilder<number>;
  words: WordsDriver | null;
}

/**
 * The reader's rows in message order (primary key (user_id, message_id), or a partial
 * index for is:starred and the like) suit most narrows. A condition with its own index on
 * messages (a direct-message conversation, a sender, one channel, an ID) drives from that
 * index instead, looking up the reader's row per message; in history mode the channel
 * indexes (stream_id[, topic_lc], id) give the order. A search without a topic, conversation
 * or ID walks its words' matches newest first.
 */
function planFor(reader: NarrowReader, narrow: ResolvedNarrow, base: Base): Plan {
  const selective = (kinds: NarrowCondition['kind'][]): boolean =>
    narrow.conditions.some((c) => !c.negated && (kinds.includes(c.kind) || (c.kind === 'stream' && c.streamIds.length === 1 && kinds.includes('stream'))));
  if (narrow.search && !selective(['topic', 'dm', 'id'])) {
    const words = wordsDriver(reader.dialect, narrow.search);
    if (words) return { base, id: words.id, words };
  }
  if (base === 'history' || selective(['dm', 'sender', 'id', 'stream'])) return { base, id: sql<number>`m.id`, words: null };
  return { base, id: sql<number>`um.message_id`, words: null };
}

interface NarrowSelect {
  narrow: ResolvedNarrow;
  /** Conditions beyond the narrow's own (first_unread adds unread and muting). */
  conditions?: NarrowCondition[];
  /** Extra SQL conditions, e.g. an ID range. */
  extra?: RawBuilder<SqlBool>[];
}

function fromClause(reader: NarrowReader, plan: Plan): RawBuilder<unknown> {
  // CROSS JOIN fixes SQLite's join order: the search's matches are the outer loop.
  if (plan.words) {
    return plan.base === 'user'
      ? sql`FROM ${plan.words.from} CROSS JOIN user_messages um CROSS JOIN messages m`
      : sql`FROM ${plan.words.from} CROSS JOIN messages m LEFT JOIN user_messages um ON um.user_id = ${reader.userId} AND um.message_id = m.id`;
  }
  return plan.base === 'user'
    ? sql`FROM user_messages um JOIN messages m ON m.id = um.message_id`
    : sql`FROM messages m LEFT JOIN user_messages um ON um.user_id = ${reader.userId} AND um.message_id = m.id`;
}

function whereClause(reader: NarrowReader, plan: Plan, q: NarrowSelect): RawBuilder<unknown> {
  const parts: RawBuilder<SqlBool>[] = [];
  if (plan.words) parts.push(plan.words.condition, sql<SqlBool>`m.id = ${plan.id}`);
  if (plan.base === 'user') parts.push(sql<SqlBool>`um.user_id = ${reader.userId}`);
  if (plan.words && plan.base === 'user') parts.push(sql<SqlBool>`um.message_id = ${plan.id}`);
  for (const c of [...q.narrow.conditions, ...(q.conditions ?? [])]) parts.push(conditionSql(c, reader));
  if (q.narrow.search && !plan.words) parts.push(searchCondition(reader.dialect, q.narrow.search));
  parts.push(...(q.extra ?? []));
  return sql`WHERE ${sql.join(parts, sql` AND `)}`;
}

const messageColumns = sql.raw(MESSAGE_COLUMNS.map((c) => `m.${c}`).join(', '));

/**
 * Each row's reactions as a JSON array of [emoji_name, emoji_code, reaction_type, user_id],
 * oldest first (null or [] when none): read with the rows, so formatting them costs no
 * second query (a round trip on PostgreSQL).
 */
function reactionsColumn(dialect: Dialect): RawBuilder<string | null> {
  return dialect === 'postgres'
    ? sql<string | null>`(SELECT json_agg(json_build_array(r.emoji_name, r.emoji_code, r.reaction_type, r.user_id) ORDER BY r.id)::text FROM reactions r WHERE r.message_id = m.id)`
    : sql<string | null>`(SELECT json_group_array(json_array(r.emoji_name, r.emoji_code, r.reaction_type, r.user_id) ORDER BY r.id) FROM reactions r WHERE r.message_id = m.id)`;
}

/** Each row's submessages as a JSON array of [id, sender_id, msg_type, content], oldest first: read with the rows, as reactions. */
function submessagesColumn(dialect: Dialect): RawBuilder<string | null> {
  return dialect === 'postgres'
    ? sql<string | null>`(SELECT json_agg(json_build_array(s.id, s.sender_id, s.msg_type, s.content) ORDER BY s.id)::text FROM submessages s WHERE s.message_id = m.id)`
    : sql<string | null>`(SELECT json_group_array(json_array(s.id, s.sender_id, s.msg_type, s.content) ORDER BY s.id) FROM submessages s WHERE s.message_id = m.id)`;
}

function parseSubmessages(messageId: number, json: string | null): SubmessageRow[] {
  if (json === null || json === '[]') return [];
  return (JSON.parse(json) as [number, number, string, string][]).map(([id, sender_id, msg_type, content]) => ({ id: Number(id), message_id: messageId, sender_id: Number(sender_id), msg_type, content }));
}

function parseReactions(messageId: number, json: string | null): ReactionRow[] {
  if (json === null || json === '[]') return [];
  return (JSON.parse(json) as [string, string, string, number][]).map(([emoji_name, emoji_code, reaction_type, user_id]) => ({
    message_id: messageId,
    user_id: Number(user_id),
    emoji_name,
    emoji_code,
    reaction_type,
  }));
}

async function selectRows(
  db: Tx,
  reader: NarrowReader,
  plan: Plan,
  q: NarrowSelect,
  order: 'ASC' | 'DESC',
  limit: number | null,
): Promise<NarrowRow[]> {
  const limitSql = limit === null ? sql`` : sql`LIMIT ${sql.lit(limit)}`;
  const { rows } = await sql<Message & { um_flags: number | null; reactions: string | null; submessages: string | null }>`SELECT ${messageColumns}, um.flags AS um_flags, ${reactionsColumn(reader.dialect)} AS reactions, ${submessagesColumn(reader.dialect)} AS submessages ${fromClause(reader, plan)} ${whereClause(reader, plan, q)} ORDER BY ${plan.id} ${sql.raw(order)} ${limitSql}`.execute(db);
  return rows.map((r) => ({ ...r, um_flags: r.um_flags === null ? null : Number(r.um_flags), reactions: parseReactions(r.id, r.reactions), submessages: parseSubmessages(r.id, r.submessages) }));
}

const baseOf = (narrow: ResolvedNarrow): Base => (narrow.includeHistory ? 'history' : 'user');

export interface RangeQuery {
  anchor: number;
  numBefore: number;
  numAfter: number;
  includeAnchor: boolean;
  anchoredToLeft: boolean;
  anchoredToRight: boolean;
}

/**
 * Zulip's limit_query_to_range: up to numBefore rows below the anchor and numAfter above
 * it, plus the anchor row itself, with one row of headroom on a side so the caller can
 * tell whether it reached the end. Rows come back in ascending ID order.
 */
export async function fetchNarrowRange(db: Tx, reader: NarrowReader, narrow: ResolvedNarrow, r: RangeQuery): Promise<NarrowRow[]> {
  const plan = planFor(reader, narrow, baseOf(narrow));
  const id = plan.id;
  const q = (extra: RawBuilder<SqlBool>[]): NarrowSelect => ({ narrow, extra });
  const needBefore = !r.anchoredToLeft && r.numBefore > 0;
  const needAfter = !r.anchoredToRight && r.numAfter > 0;
  const include = r.includeAnchor ? 1 : 0;
  let before: NarrowRow[] = [];
  let after: NarrowRow[] = [];
  if (needBefore && needAfter) {
    [before, after] = await Promise.all([
      selectRows(db, reader, plan, q([sql<SqlBool>`${id} <= ${r.anchor - 1}`]), 'DESC', r.numBefore),
      selectRows(db, reader, plan, q([sql<SqlBool>`${id} >= ${r.anchor}`]), 'ASC', r.numAfter + 1),
    ]);
  } else if (needBefore) {
    const bound = r.anchoredToRight ? [] : [sql<SqlBool>`${id} <= ${r.anchor - (1 - include)}`];
    before = await selectRows(db, reader, plan, q(bound), 'DESC', r.numBefore + (r.anchoredToRight ? 0 : include));
  } else if (needAfter) {
    const bound = r.anchoredToLeft ? [] : [sql<SqlBool>`${id} >= ${r.anchor + (1 - include)}`];
    after = await selectRows(db, reader, plan, q(bound), 'ASC', r.numAfter + include);
  } else {
    // Nothing on either side: at most the anchor itself (e.g. a message ID lookup).
    after = await selectRows(db, reader, plan, q([sql<SqlBool>`${id} = ${r.anchor}`]), 'ASC', null);
  }
  return [...before.reverse(), ...after];
}

/** The narrow's messages among `ids` (GET /messages with message_ids), ascending. */
export async function fetchNarrowByIds(db: Tx, reader: NarrowReader, narrow: ResolvedNarrow, ids: readonly number[]): Promise<NarrowRow[]> {
  if (ids.length === 0) return [];
  const plan = planFor(reader, narrow, baseOf(narrow));
  return selectRows(db, reader, plan, { narrow, extra: [sql<SqlBool>`${plan.id} IN (${sql.join([...ids])})`] }, 'ASC', null);
}

/**
 * Zulip's find_first_unread_anchor: the oldest unread message of the narrow among the
 * reader's rows, skipping muted conversations (`muting`), or null.
 */
export async function findFirstUnread(db: Tx, reader: NarrowReader, narrow: ResolvedNarrow, muting: NarrowCondition): Promise<number | null> {
  // The reader's unread rows are few: walk the partial index user_messages_unread.
  const plan: Plan = { base: 'user', id: sql<number>`um.message_id`, words: null };
  const { rows } = await sql<{ id: number }>`SELECT m.id ${fromClause(reader, plan)} ${whereClause(reader, plan, {
    narrow,
    conditions: [{ kind: 'unread', negated: false }, muting],
  })} ORDER BY ${plan.id} ASC LIMIT 1`.execute(db);
  return rows[0] ? Number(rows[0].id) : null;
}

/** The oldest message of the narrow sent at or after `since` (Unix seconds), for anchor=date. */
export async function findFirstSince(db: Tx, reader: NarrowReader, narrow: ResolvedNarrow, since: number): Promise<number | null> {
  const plan = planFor(reader, narrow, baseOf(narrow));
  const { rows } = await sql<{ id: number }>`SELECT m.id ${fromClause(reader, plan)} ${whereClause(reader, plan, {
    narrow,
    extra: [sql<SqlBool>`m.date_sent >= ${since}`],
  })} ORDER BY ${plan.id} ASC LIMIT 1`.execute(db);
  return rows[0] ? Number(rows[0].id) : null;
}

export interface MatchRow {
  id: number;
  topic: string;
  rendered_content: string;
}

/**
 * GET /messages/matches_narrow: which of `ids` match, among messages the reader actually
 * received (Zulip checks only user_messages rows here, never shared history).
 */
export async function fetchMatchingMessages(db: Tx, reader: NarrowReader, narrow: ResolvedNarrow, ids: readonly number[]): Promise<MatchRow[]> {
  if (ids.length === 0) return [];
  // Few IDs: look them up directly rather than walking search matches.
  const plan: Plan = { base: 'user', id: sql<number>`um.message_id`, words: null };
  const { rows } = await sql<MatchRow>`SELECT m.id, m.topic, m.rendered_content ${fromClause(reader, plan)} ${whereClause(reader, plan, {
    narrow,
    extra: [sql<SqlBool>`um.message_id IN (${sql.join([...ids])})`],
  })} ORDER BY um.message_id`.execute(db);
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

/**
 * Channels for `channels:`: public (Zulip's get_public_streams_queryset: not invite-only,
 * history shared), web-public, or archived.
 */
export async function fetchChannelIdsOfKind(db: Tx, realmId: number, kind: 'public' | 'web-public' | 'archived'): Promise<number[]> {
  let q = db.selectFrom('streams').select('id').where('realm_id', '=', realmId);
  if (kind === 'public') q = q.where('invite_only', '=', 0).where('history_public_to_subscribers', '=', 1);
  else if (kind === 'web-public') q = q.where('is_web_public', '=', 1);
  else q = q.where('deactivated', '=', 1);
  const rows = await q.orderBy('id').execute();
  return rows.map((r) => r.id);
}
