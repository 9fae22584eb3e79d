import { JsonableError, badRequest } from '../../errors.js';

/**
 * A narrow is a list of terms, each restricting the messages it matches
 * (https://zulip.com/api/construct-narrow). Clients send each term either as an object
 * {operator, operand, negated?} or as a legacy [operator, operand] pair of strings.
 */
export type NarrowOperand = string | number | number[];

export interface NarrowTerm {
  operator: string;
  operand: NarrowOperand;
  negated: boolean;
}

export type Narrow = NarrowTerm[];

/** Zulip marks a topic resolved by prefixing its name with a check mark and a space. */
export const RESOLVED_TOPIC_PREFIX = '\u2714 ';

/** The largest message ID Zulip clients use to mean "the newest message". */
export const LARGER_THAN_MAX_MESSAGE_ID = 10_000_000_000_000_000;

export const CHANNEL_OPERATORS: ReadonlySet<string> = new Set(['channel', 'stream']);
export const CHANNELS_OPERATORS: ReadonlySet<string> = new Set(['channels', 'streams']);

/** Operators whose operand may be an integer ID as well as a string. */
const ID_OPERATORS: ReadonlySet<string> = new Set([
  'channel', 'stream', 'id', 'sender', 'group-pm-with', 'dm-including', 'dm-with', 'with', 'mentions',
]);
/** Operators whose operand may be a list of user IDs as well as a string of emails. */
const IDS_OPERATORS: ReadonlySet<string> = new Set(['dm', 'pm-with']);

/** Zulip's BadNarrowOperatorError: code BAD_NARROW, with the description also as `desc`. */
export function badNarrow(desc: string): JsonableError {
  return new JsonableError(`Invalid narrow operator: ${desc}`, 'BAD_NARROW', 400, { desc });
}

/** Zulip's InvalidOperatorCombinationError. */
export function badNarrowCombination(desc: string): JsonableError {
  return new JsonableError(`Invalid narrow operator combination: ${desc}`, 'BAD_NARROW', 400, { desc });
}

function elementError(name: string, index: number, reason: string): JsonableError {
  return badRequest(`Invalid ${name}[${index}]: Value error, ${reason}`);
}

function checkOperand(operator: string, operand: unknown): NarrowOperand {
  if (ID_OPERATORS.has(operator)) {
    if (typeof operand === 'string' || (typeof operand === 'number' && Number.isInteger(operand))) return operand;
    throw badRequest('operand is not a string or integer');
  }
  if (IDS_OPERATORS.has(operator)) {
    if (typeof operand === 'string') return operand;
    if (!Array.isArray(operand)) throw badRequest('operand is not a string or an integer list');
    operand.forEach((v, i) => {
      if (typeof v !== 'number' || !Number.isInteger(v)) throw badRequest(`operand[${i}] is not an integer`);
    });
    return operand as number[];
  }
  if (typeof operand !== 'string') throw badRequest('operand is not a string');
  if (operator === 'search' && operand.trim() === '') throw badRequest('operand cannot be blank.');
  // Each word becomes a full-text term; PostgreSQL's parser runs out of stack near 50,000.
  if (operator === 'search' && operand.length > MAX_SEARCH_OPERAND_LENGTH) {
    throw badRequest(`operand is too long (limit: ${MAX_SEARCH_OPERAND_LENGTH} characters)`);
  }
  return operand;
}

/**
 * Terms one narrow may have. Every term becomes SQL (and search terms full-text queries), so
 * the bound keeps one request's work small; real clients send a handful.
 */
export const MAX_NARROW_TERMS = 100;

/** Characters of one search operand (a search box's text, far longer than anyone types). */
export const MAX_SEARCH_OPERAND_LENGTH = 10_000;

/**
 * Validates the shape of a decoded narrow (Zulip's NarrowParameter), with Zulip's
 * messages. Operators and operands are only checked for type here; whether they name
 * something that exists is decided when the narrow is resolved.
 */
export function parseNarrow(value: unknown, name = 'narrow'): Narrow {
  if (!Array.isArray(value)) throw badRequest(`${name} is not a list`);
  if (value.length > MAX_NARROW_TERMS) throw badRequest(`${name} has too many terms (limit: ${MAX_NARROW_TERMS})`);
  return value.map((elem: unknown, index): NarrowTerm => {
    if (Array.isArray(elem)) {
      if (elem.length !== 2 || elem.some((x) => typeof x !== 'string')) throw elementError(name, index, 'element is not a string pair');
      return { operator: elem[0] as string, operand: checkOperand(elem[0] as string, elem[1]), negated: false };
    }
    if (elem === null || typeof elem !== 'object') throw elementError(name, index, 'dict or list required');
    const obj = elem as Record<string, unknown>;
    if (obj.operand === undefined || obj.operand === null) throw elementError(name, index, 'operand is missing');
    if (obj.operator === undefined || obj.operator === null) throw elementError(name, index, 'operator is missing');
    if (typeof obj.operator !== 'string') throw badRequest('operator is not a string');
    const negated = obj.negated ?? false;
    if (typeof negated !== 'boolean') throw badRequest('negated is not a boolean');
    return { operator: obj.operator, operand: checkOperand(obj.operator, obj.operand), negated };
  });
}

/** Decodes the JSON text of a `narrow` parameter (for p.custom). */
export function decodeNarrowParam(raw: string, name: string): Narrow {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw badRequest(`Argument "${name}" is not valid JSON.`);
  }
  return parseNarrow(value, name);
}

/** The canonical name of an operator that has legacy aliases; other names are returned unchanged. */
export function canonicalOperator(operator: string): string {
  switch (operator) {
    case 'stream':
      return 'channel';
    case 'streams':
      return 'channels';
    case 'subject':
      return 'topic';
    case 'pm-with':
    case 'pm_with':
      return 'dm';
    case 'dm-with':
      return 'dm-including';
    case 'group_pm_with':
      return 'group-pm-with';
    default:
      return operator;
  }
}

/** `is:private` is the legacy spelling of `is:dm`. */
export function canonicalIsOperand(operand: string): string {
  return operand === 'private' ? 'dm' : operand;
}

/** Whether the narrow has a (combined) full-text search. Zulip ignores `negated` on search terms. */
export function searchText(narrow: Narrow): string | null {
  const parts = narrow.filter((t) => t.operator === 'search').map((t) => String(t.operand));
  return parts.length ? parts.join(' ') : null;
}
