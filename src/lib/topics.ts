import { badRequest } from '../errors.js';
import { MAX_TOPIC_LENGTH } from '../version.js';

/** Topic visibility policies (POST /user_topics, user_topic events). */
export const VISIBILITY_INHERIT = 0;
export const VISIBILITY_MUTED = 1;
export const VISIBILITY_UNMUTED = 2;
export const VISIBILITY_FOLLOWED = 3;
export const VISIBILITY_POLICIES = [VISIBILITY_INHERIT, VISIBILITY_MUTED, VISIBILITY_UNMUTED, VISIBILITY_FOLLOWED] as const;

/** The topic legacy clients send for "no topic"; read as the empty topic since feature level 370. */
export const LEGACY_NO_TOPIC = '(no topic)';

/** Length in Unicode code points, as Python (and Zulip's limits) count it. */
export function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Zulip's truncate_content: over `max` code points, keep max - len(suffix) and append the suffix. */
export function truncateCodePoints(s: string, max: number, suffix: string): string {
  if (s.length <= max || codePointLength(s) <= max) return s;
  return Array.from(s).slice(0, max - codePointLength(suffix)).join('') + suffix;
}

/** Zulip's truncate_topic: 60 code points, ending in "..." when cut. */
export const truncateTopic = (topic: string): string => truncateCodePoints(topic, MAX_TOPIC_LENGTH, '...');

/** Unicode noncharacters: U+FDD0..U+FDEF and the last two code points of every plane. */
function isNonCharacter(cp: number): boolean {
  return (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) === 0xfffe;
}

const CONTROL_OR_SURROGATE = /[\p{Cc}\p{Cs}]/u;

/** Zulip's check_string_is_printable: the 1-based position of the first unprintable character, or null. */
export function firstUnprintablePosition(s: string): number | null {
  let pos = 0;
  for (const ch of s) {
    pos++;
    if (CONTROL_OR_SURROGATE.test(ch) || isNonCharacter(ch.codePointAt(0)!)) return pos;
  }
  return null;
}

/** The string without the characters firstUnprintablePosition refuses (Zulip's is_character_printable filter). */
export function removeUnprintable(s: string): string {
  let out = '';
  for (const ch of s) if (!CONTROL_OR_SURROGATE.test(ch) && !isNonCharacter(ch.codePointAt(0)!)) out += ch;
  return out;
}

/**
 * A topic as clients send it, read the way Zulip does for sending: surrounding whitespace
 * removed, "(no topic)" and the realm's empty-topic display name meaning the empty topic,
 * unprintable characters rejected, and anything over 60 code points truncated.
 */
export function normalizeSendTopic(raw: string, emptyTopicDisplayName: string): string {
  const topic = mapEmptyTopicAliases(raw.trim(), emptyTopicDisplayName);
  checkTopicPrintable(topic);
  return truncateTopic(topic);
}

/** "(no topic)" and the realm's display name for the empty topic both stand for "". */
export function mapEmptyTopicAliases(topic: string, emptyTopicDisplayName: string): string {
  return topic === LEGACY_NO_TOPIC || topic === emptyTopicDisplayName ? '' : topic;
}

export function checkTopicPrintable(topic: string): void {
  const pos = firstUnprintablePosition(topic);
  if (pos !== null) throw badRequest(`Invalid character in topic, at position ${pos}!`);
}

/** The case-insensitive key topics are compared by (Zulip's subject__iexact). */
export const topicKey = (topic: string): string => topic.toLowerCase();

/** The topic as shown to clients without the empty_topic_name capability. */
export function displayTopic(topic: string, allowEmptyTopicName: boolean, emptyTopicDisplayName: string): string {
  return topic === '' && !allowEmptyTopicName ? emptyTopicDisplayName : topic;
}
