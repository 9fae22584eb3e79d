import type { Tx } from '../../db/index.js';
import type { Realm, User } from '../../db/tables.js';
import { fetchChannelIdsOfKind } from '../../db/repos/narrow.js';
import { fetchUserByEmail, fetchUsersByIds } from '../../db/repos/users.js';
import { accessMessage } from '../access/messages.js';
import { ChannelCaller, accessStreamForNarrow } from '../access/streams.js';
import { dmKeyFor, dmParticipantIds } from '../format/messages.js';
import { FLAG_BITS } from '../message_flags.js';
import { realmSettings } from '../realm_settings.js';
import { isGuest } from '../roles.js';
import { topicKey } from '../topics.js';
import { MENTION_MASK, type NarrowCondition, type ResolvedNarrow } from './conditions.js';
import { parseSearch } from './search.js';
import {
  badNarrow,
  badNarrowCombination,
  canonicalIsOperand,
  canonicalOperator,
  searchText,
  type Narrow,
  type NarrowOperand,
  type NarrowTerm,
} from './terms.js';

type Reader = Pick<User, 'id' | 'role'>;

const CONVERSATION_OPERATORS: ReadonlySet<string> = new Set(['channel', 'topic', 'dm']);

/** Zulip's can_narrow_define_conversation: channel and topic, or dm. */
function definesConversation(narrow: Narrow): boolean {
  const ops = new Set(narrow.map((t) => canonicalOperator(t.operator)));
  return ops.has('dm') || (ops.has('channel') && ops.has('topic'));
}

/**
 * Zulip's `with` operator: replaced by the conversation (channel and topic, or direct
 * message participants) the message is in now. An inaccessible message is ignored when
 * the rest of the narrow names a conversation; otherwise the narrow is invalid.
 */
async function expandWith(db: Tx, realm: Pick<Realm, 'id'>, reader: Reader, narrow: Narrow): Promise<Narrow> {
  const withTerms = narrow.filter((t) => t.operator === 'with');
  if (withTerms.length === 0) return narrow;
  if (withTerms.length > 1) throw badNarrowCombination("Duplicate 'with' operators.");
  const rest = narrow.filter((t) => t.operator !== 'with');
  const raw = String(withTerms[0]!.operand).trim();
  if (!/^[+-]?\d+$/.test(raw)) throw badNarrow("Invalid 'with' operator");
  let target;
  try {
    target = (await accessMessage(db, realm, reader, Number(raw))).message;
  } catch {
    if (definesConversation(rest)) return rest;
    throw badNarrow("Invalid 'with' operator");
  }
  const others = rest.filter((t) => !CONVERSATION_OPERATORS.has(canonicalOperator(t.operator)));
  const conversation: NarrowTerm[] =
    target.type === 'stream'
      ? [
          { operator: 'channel', operand: target.stream_id ?? 0, negated: false },
          { operator: 'topic', operand: target.topic, negated: false },
        ]
      : [{ operator: 'dm', operand: dmParticipantIds(target.dm_key), negated: false }];
  return [...conversation, ...others];
}

/** A user named by ID or email (deactivated users included, as in Zulip), or "me". */
async function resolveUserId(db: Tx, realmId: number, operand: NarrowOperand, reader: Reader): Promise<number> {
  if (operand === 'me') return reader.id;
  const user =
    typeof operand === 'number' ? (await fetchUsersByIds(db, realmId, [operand]))[0] : await fetchUserByEmail(db, realmId, String(operand));
  if (!user) throw badNarrow(`unknown user ${String(operand)}`);
  return user.id;
}

/** The dm_key of the conversation between the reader and the operand's users, or null if it names nobody. */
async function resolveDmKey(db: Tx, realmId: number, operand: NarrowOperand, reader: Reader): Promise<string | null> {
  let ids: number[];
  if (Array.isArray(operand)) {
    const users = await fetchUsersByIds(db, realmId, operand);
    if (users.length !== new Set(operand).size) throw badNarrow(`unknown user in ${JSON.stringify(operand)}`);
    ids = users.map((u) => u.id);
  } else {
    const emails = String(operand).split(',').map((e) => e.trim()).filter(Boolean);
    ids = [];
    for (const email of emails) {
      const u = await fetchUserByEmail(db, realmId, email);
      if (!u) throw badNarrow(`unknown user in ${String(operand)}`);
      ids.push(u.id);
    }
  }
  if (ids.length === 0) return null;
  return dmKeyFor([...ids, reader.id]);
}

const HAS_OPERANDS = new Set(['link', 'image', 'attachment', 'reaction'] as const);
type HasOperand = 'link' | 'image' | 'attachment' | 'reaction';

/**
 * Checks every term of `narrow` against the realm and turns it into conditions for the
 * reader, with Zulip's BAD_NARROW errors for unknown operators, operands, channels and
 * users.
 */
export async function resolveNarrow(db: Tx, realm: Realm, reader: User, input: Narrow): Promise<ResolvedNarrow> {
  const emptyTopicName = realmSettings(realm).empty_topic_display_name;
  const caller = new ChannelCaller(db, realm, reader);
  const narrow = await expandWith(db, realm, reader, input);
  const conditions: NarrowCondition[] = [];
  let channelNarrow = false;
  let dmNarrow = false;
  const markKind = (negated: boolean, kind: 'channel' | 'dm'): void => {
    if (negated) return;
    if (kind === 'channel') channelNarrow = true;
    else dmNarrow = true;
    if (channelNarrow && dmNarrow) throw badNarrow('No message can be both a channel message and direct message');
  };
  let includeHistory = false;
  let channelStreamId: number | null = null;

  const add = (c: NarrowCondition): void => {
    conditions.push(c);
  };

  for (const term of narrow) {
    const { operand, negated } = term;
    switch (canonicalOperator(term.operator)) {
      case 'channel': {
        markKind(negated, 'channel');
        // Zulip looks the channel up without an access check: conditions only remove
        // messages, and whether its history is readable decides the query's base.
        const found = await accessStreamForNarrow(caller, operand as string | number);
        if (!found) throw badNarrow(`unknown channel ${String(operand)}`);
        channelStreamId ??= found.stream.id;
        add({ kind: 'stream', streamIds: [found.stream.id], negated });
        if (!negated) includeHistory = found.historyAccess;
        break;
      }
      case 'channels': {
        markKind(negated, 'channel');
        const kind = String(operand);
        if (kind !== 'public' && kind !== 'web-public' && kind !== 'archived') throw badNarrow(`unknown channels operand ${kind}`);
        add({ kind: 'stream', streamIds: await fetchChannelIdsOfKind(db, realm.id, kind), negated });
        if (kind === 'public' && !negated && !isGuest(reader)) includeHistory = true;
        break;
      }
      case 'topic': {
        markKind(negated, 'channel');
        const topic = String(operand) === emptyTopicName ? '' : String(operand);
        add({ kind: 'topic', topicKey: topicKey(topic), negated });
        break;
      }
      case 'sender':
        add({ kind: 'sender', userId: await resolveUserId(db, realm.id, operand, reader), negated });
        break;
      case 'mentions':
        add({ kind: 'mentions', userId: await resolveUserId(db, realm.id, operand, reader), negated });
        break;
      case 'dm': {
        markKind(negated, 'dm');
        const dmKey = await resolveDmKey(db, realm.id, operand, reader);
        add(dmKey === null ? { kind: 'nothing', negated } : { kind: 'dm', dmKey, negated });
        break;
      }
      case 'dm-including':
      case 'group-pm-with': {
        markKind(negated, 'dm');
        const other = await resolveUserId(db, realm.id, operand, reader);
        const groupOnly = canonicalOperator(term.operator) === 'group-pm-with';
        // dm-including with oneself is every direct message (Zulip), like is:dm.
        add(other === reader.id && !groupOnly ? { kind: 'private', negated } : { kind: 'dm_including', userId: other, groupOnly, negated });
        break;
      }
      case 'is':
        resolveIs(String(operand), negated, add, markKind);
        break;
      case 'in': {
        const where = String(operand);
        if (where === 'home') add({ kind: 'unmuted', streamMutes: true, negated });
        else if (where !== 'all') throw badNarrow(`unknown 'in' operand ${where}`);
        break;
      }
      case 'has': {
        const what = String(operand);
        if (!HAS_OPERANDS.has(what as HasOperand)) throw badNarrow(`unknown 'has' operand ${what}`);
        add({ kind: 'has', what: what as HasOperand, negated });
        break;
      }
      case 'id': {
        const raw = String(operand);
        if (!/^\d+$/.test(raw) || Number(raw) > Number.MAX_SAFE_INTEGER) throw badNarrow('Invalid message ID');
        add({ kind: 'id', id: Number(raw), negated });
        break;
      }
      case 'near':
      case 'search':
        break;
      default:
        throw badNarrow(`unknown operator ${term.operator}`);
    }
  }
  // Narrowing on the reader's own flags rules out messages they never received (Zulip).
  if (narrow.some((t) => t.operator === 'is' && canonicalIsOperand(String(t.operand)) !== 'resolved')) includeHistory = false;
  const text = searchText(narrow);
  return { conditions, search: text === null ? null : parseSearch(text), includeHistory, channelStreamId };
}

function resolveIs(
  operand: string,
  negated: boolean,
  add: (c: NarrowCondition) => void,
  markKind: (negated: boolean, kind: 'channel' | 'dm') => void,
): void {
  switch (canonicalIsOperand(operand)) {
    case 'dm':
      // `-is:dm` means channel messages, so it conflicts with dm terms.
      markKind(false, negated ? 'channel' : 'dm');
      add({ kind: 'private', negated });
      return;
    case 'starred':
      add({ kind: 'flags_any', mask: FLAG_BITS.starred, negated });
      return;
    case 'mentioned':
      add({ kind: 'flags_any', mask: MENTION_MASK, negated });
      return;
    case 'alerted':
      add({ kind: 'flags_any', mask: FLAG_BITS.has_alert_word, negated });
      return;
    case 'unread':
      add({ kind: 'unread', negated });
      return;
    case 'resolved':
      add({ kind: 'resolved', negated });
      return;
    case 'followed':
      add({ kind: 'followed', negated });
      return;
    case 'muted':
      add({ kind: 'unmuted', streamMutes: true, negated: !negated });
      return;
    default:
      throw badNarrow(`unknown 'is' operand ${operand}`);
  }
}

/**
 * What Zulip's first_unread anchor skips: unread messages in muted topics and, unless the
 * narrow names a channel, in muted channels.
 */
export function firstUnreadMuting(narrow: ResolvedNarrow): NarrowCondition {
  return { kind: 'unmuted', streamMutes: narrow.channelStreamId === null, negated: false };
}
