import { JsonableError } from '../../errors.js';
import type { MessageDict } from '../format/messages.js';
import { RESOLVED_TOPIC_PREFIX, canonicalIsOperand, canonicalOperator, type Narrow, type NarrowTerm } from './terms.js';

/** The operators Zulip accepts in an event queue's narrow (POST /register `narrow`). */
const EVENT_NARROW_OPERATORS: ReadonlySet<string> = new Set(['channel', 'stream', 'topic', 'sender', 'is']);

/**
 * Zulip's check_narrow_for_events: POST /register rejects any other operator with
 * "Operator X not supported." (BAD_REQUEST).
 */
export function checkEventNarrow(narrow: Narrow): void {
  for (const term of narrow) {
    if (!EVENT_NARROW_OPERATORS.has(term.operator)) {
      throw new JsonableError(`Operator ${term.operator} not supported.`, 'BAD_REQUEST', 400);
    }
  }
}

export interface InMemoryMatchOptions {
  /** The reader: a participant of every `dm` conversation implicitly, and `sender:me`. */
  readerId?: number;
  /** The realm's display name of the empty topic: it and "" name the same topic. */
  emptyTopicDisplayName?: string;
}

const MENTION_FLAGS = ['mentioned', 'stream_wildcard_mentioned', 'topic_wildcard_mentioned', 'wildcard_mentioned'];

const lower = (s: string): string => s.toLowerCase();

function participants(message: MessageDict): { id: number; email: string }[] {
  return Array.isArray(message.display_recipient) ? message.display_recipient.map((u) => ({ id: u.id, email: lower(u.email) })) : [];
}

/** Whether the conversation's participants are exactly the operand's users, plus the reader. */
function isDmConversation(message: MessageDict, operand: NarrowTerm['operand'], readerId: number | undefined): boolean {
  if (message.type !== 'private' || typeof operand === 'number') return false;
  const people = participants(message);
  const wanted = new Set<string>(
    Array.isArray(operand) ? operand.map(String) : operand.split(',').map((e) => lower(e.trim())).filter(Boolean),
  );
  const reader = people.find((u) => u.id === readerId);
  if (reader) wanted.add(Array.isArray(operand) ? String(reader.id) : reader.email);
  const keys = people.map((u) => (Array.isArray(operand) ? String(u.id) : u.email));
  return wanted.size === keys.length && keys.every((k) => wanted.has(k));
}

/** true/false when the term decides; undefined when it cannot filter in memory (no filtering). */
function termMatches(message: MessageDict, flags: readonly string[], term: NarrowTerm, opts: InMemoryMatchOptions): boolean | undefined {
  const operand = term.operand;
  const isStream = message.type === 'stream';
  const emptyName = opts.emptyTopicDisplayName;
  const topicKey = (t: string): string => lower(emptyName !== undefined && t === emptyName ? '' : t);
  switch (canonicalOperator(term.operator)) {
    case 'channel':
      if (!isStream) return false;
      if (typeof operand === 'number') return message.stream_id === operand;
      return typeof message.display_recipient === 'string' && lower(String(operand)) === lower(message.display_recipient);
    case 'topic':
      return isStream && topicKey(String(operand)) === topicKey(message.subject);
    case 'sender':
      if (typeof operand === 'number') return message.sender_id === operand;
      if (operand === 'me' && opts.readerId !== undefined) return message.sender_id === opts.readerId;
      return lower(String(operand)) === lower(message.sender_email);
    case 'dm':
      return isDmConversation(message, operand, opts.readerId);
    case 'dm-including':
    case 'group-pm-with': {
      if (isStream) return false;
      const people = participants(message);
      if (term.operator.startsWith('group') && people.length < 3) return false;
      return people.some((u) => (typeof operand === 'number' ? u.id === operand : u.email === lower(String(operand))));
    }
    case 'id':
      return String(message.id) === String(operand);
    case 'is':
      switch (canonicalIsOperand(String(operand))) {
        case 'dm':
          return !isStream;
        case 'starred':
          return flags.includes('starred');
        case 'unread':
          return !flags.includes('read');
        case 'mentioned':
          return MENTION_FLAGS.some((f) => flags.includes(f));
        case 'alerted':
          return flags.includes('has_alert_word');
        case 'resolved':
          return isStream && message.subject.startsWith(RESOLVED_TOPIC_PREFIX);
        default:
          // is:followed / is:muted depend on the reader's topic settings, which an event does not carry.
          return undefined;
      }
    default:
      // search, near, has, in, with, channels: Zulip does no filtering on these for event queues.
      return undefined;
  }
}

/**
 * Whether one message (a formatted message dict, as in a `message` event) with the
 * reader's flags belongs to `narrow`: Zulip's build_narrow_predicate, for narrowed event
 * queues. Terms that would need the database (search, has:, in:, is:followed, ...) do not
 * filter, as in Zulip.
 */
export function messageMatchesNarrowInMemory(
  message: MessageDict,
  flags: readonly string[],
  narrow: Narrow,
  opts: InMemoryMatchOptions = {},
): boolean {
  return narrow.every((term) => {
    const matched = termMatches(message, flags, term, opts);
    return matched === undefined || matched !== term.negated;
  });
}
