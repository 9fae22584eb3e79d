import type { Database } from '../../db/index.js';
import type { Realm, User } from '../../db/tables.js';
import {
  fetchMatchingMessages,
  fetchNarrowByIds,
  fetchNarrowRange,
  findFirstSince,
  findFirstUnread,
  type NarrowReader,
  type NarrowRow,
} from '../../db/repos/narrow.js';
import { badRequest } from '../../errors.js';
import { formatMessages, type MessageDict } from '../format/messages.js';
import { FLAG_BITS } from '../message_flags.js';
import { realmSettings } from '../realm_settings.js';
import { NEWEST_ANCHOR_THRESHOLD, type Anchor } from './anchor.js';
import type { ResolvedNarrow } from './conditions.js';
import { firstUnreadMuting, resolveNarrow } from './resolve.js';
import { searchMatchFields } from './search.js';
import { LARGER_THAN_MAX_MESSAGE_ID, type Narrow } from './terms.js';

/** Zulip's MAX_MESSAGES_PER_FETCH. */
export const MAX_MESSAGES_PER_FETCH = 5000;

export interface FetchOptions {
  narrow: Narrow;
  /** null when fetching by `messageIds`. */
  anchor: Anchor | null;
  messageIds: number[] | null;
  includeAnchor: boolean;
  numBefore: number;
  numAfter: number;
  applyMarkdown: boolean;
  clientGravatar: boolean;
  allowEmptyTopicName: boolean;
}

export type FetchedMessage = MessageDict & { match_content?: string; match_subject?: string };

export interface FetchResult {
  messages: FetchedMessage[];
  anchor?: number;
  found_anchor: boolean;
  found_oldest: boolean;
  found_newest: boolean;
  history_limited: boolean;
}

interface Window {
  rows: NarrowRow[];
  foundAnchor: boolean;
  foundOldest: boolean;
  foundNewest: boolean;
}

/** Zulip's post_process_limited_query: trim the headroom rows and say which ends were reached. */
function limitRows(rows: NarrowRow[], anchor: number, numBefore: number, numAfter: number, toLeft: boolean, toRight: boolean): Window {
  let before: NarrowRow[];
  let at: NarrowRow[] = [];
  let after: NarrowRow[] = [];
  if (toRight) {
    before = rows;
  } else {
    before = rows.filter((r) => r.id < anchor);
    at = rows.filter((r) => r.id === anchor);
    after = rows.filter((r) => r.id > anchor);
  }
  if (numBefore) before = before.slice(-numBefore);
  if (numAfter) after = after.slice(0, numAfter);
  return {
    rows: [...before, ...at, ...after],
    foundAnchor: at.length === 1,
    foundOldest: toLeft || before.length < numBefore,
    foundNewest: toRight || after.length < numAfter,
  };
}

export type WindowOptions = Pick<FetchOptions, 'narrow' | 'anchor' | 'messageIds' | 'includeAnchor' | 'numBefore' | 'numAfter'>;

/** The rows of a narrow window, without message dicts. */
export interface NarrowWindow {
  narrow: ResolvedNarrow;
  /** Message rows with the reader's flag bits (null: historical), oldest first. */
  rows: NarrowRow[];
  /** The anchor used; undefined when fetching by message IDs. */
  anchor?: number;
  foundAnchor: boolean;
  foundOldest: boolean;
  foundNewest: boolean;
}

/**
 * The messages of a narrow around an anchor (or among given IDs) that the reader may see,
 * as rows: what GET /messages formats, and what POST /messages/flags/narrow needs without
 * formatting. Checks Zulip's limits on the range first.
 */
export async function fetchNarrowWindow(db: Database, realm: Realm, user: User, opts: WindowOptions): Promise<NarrowWindow> {
  const requested = opts.messageIds !== null ? opts.messageIds.length : opts.numBefore + opts.numAfter;
  if (requested > MAX_MESSAGES_PER_FETCH) throw badRequest(`Too many messages requested (maximum ${MAX_MESSAGES_PER_FETCH}).`);
  if (opts.numBefore > 0 && opts.numAfter > 0 && !opts.includeAnchor) {
    throw badRequest('The anchor can only be excluded at an end of the range');
  }
  const k = db.kysely;
  const reader: NarrowReader = { userId: user.id, dialect: db.dialect };
  const narrow = await resolveNarrow(k, realm, user, opts.narrow);
  if (opts.messageIds !== null) {
    const rows = await fetchNarrowByIds(k, reader, narrow, opts.messageIds);
    return { narrow, rows, foundAnchor: false, foundOldest: false, foundNewest: false };
  }
  const a = opts.anchor ?? { kind: 'id', id: LARGER_THAN_MAX_MESSAGE_ID };
  let anchor: number;
  if (a.kind === 'first_unread') anchor = (await findFirstUnread(k, reader, narrow, firstUnreadMuting(narrow))) ?? LARGER_THAN_MAX_MESSAGE_ID;
  else if (a.kind === 'date') anchor = (await findFirstSince(k, reader, narrow, a.since)) ?? LARGER_THAN_MAX_MESSAGE_ID;
  else anchor = a.id;
  const toLeft = anchor === 0;
  const toRight = anchor >= NEWEST_ANCHOR_THRESHOLD;
  const numAfter = toRight ? 0 : opts.numAfter;
  const rows = await fetchNarrowRange(k, reader, narrow, {
    anchor,
    numBefore: opts.numBefore,
    numAfter,
    includeAnchor: opts.includeAnchor,
    anchoredToLeft: toLeft,
    anchoredToRight: toRight,
  });
  return { narrow, anchor, ...limitRows(rows, anchor, opts.numBefore, numAfter, toLeft, toRight) };
}

/**
 * GET /messages: fetchNarrowWindow's rows as message dicts with the reader's flags and,
 * for searches, the highlighted match_content / match_subject. A constant number of queries.
 */
export async function fetchMessagesForNarrow(
  db: Database,
  realm: Realm,
  realmUrl: string,
  user: User,
  opts: FetchOptions,
): Promise<FetchResult> {
  const window = await fetchNarrowWindow(db, realm, user, opts);
  const { narrow, anchor } = window;
  const settings = realmSettings(realm);
  const flags = new Map<number, number>();
  for (const r of window.rows) if (r.um_flags !== null) flags.set(r.id, r.um_flags);
  const dicts = await formatMessages(
    db.kysely,
    realm,
    realmUrl,
    window.rows,
    {
      applyMarkdown: opts.applyMarkdown,
      clientGravatar: opts.clientGravatar,
      allowEmptyTopicName: opts.allowEmptyTopicName,
      emptyTopicDisplayName: settings.empty_topic_display_name,
      editHistoryVisibility: settings.message_edit_history_visibility_policy,
    },
    flags,
    // A message of a channel's shared history that the reader never received (Zulip).
    FLAG_BITS.read | FLAG_BITS.historical,
  );
  const messages: FetchedMessage[] = narrow.search
    ? dicts.map((d, i) => ({ ...d, ...searchMatchFields(window.rows[i]!.rendered_content, window.rows[i]!.topic, narrow.search) }))
    : dicts;
  const result: FetchResult = {
    messages,
    found_anchor: window.foundAnchor,
    found_oldest: window.foundOldest,
    found_newest: window.foundNewest,
    history_limited: false,
  };
  if (anchor !== undefined) result.anchor = anchor;
  return result;
}

/**
 * GET /messages/matches_narrow: which of `ids` the reader received and match the narrow,
 * keyed by ID, each with its rendered content and HTML-escaped topic (search matches
 * highlighted).
 */
export async function matchMessagesToNarrow(
  db: Database,
  realm: Realm,
  user: User,
  ids: readonly number[],
  narrowTerms: Narrow,
): Promise<Record<string, { match_content: string; match_subject: string }>> {
  const narrow = await resolveNarrow(db.kysely, realm, user, narrowTerms);
  const rows = await fetchMatchingMessages(db.kysely, { userId: user.id, dialect: db.dialect }, narrow, ids);
  const out: Record<string, { match_content: string; match_subject: string }> = {};
  for (const r of rows) out[String(r.id)] = searchMatchFields(r.rendered_content, r.topic, narrow.search);
  return out;
}
