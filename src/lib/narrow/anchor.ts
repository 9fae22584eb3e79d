import { JsonableError, badRequest } from '../../errors.js';
import { LARGER_THAN_MAX_MESSAGE_ID } from './terms.js';

/**
 * Where GET /messages starts: a message ID (0 = oldest, LARGER_THAN_MAX_MESSAGE_ID =
 * newest), the oldest unread message, or the first message on or after a time.
 */
export type Anchor = { kind: 'id'; id: number } | { kind: 'first_unread' } | { kind: 'date'; since: number };

/**
 * Anchors at or above this are past any message ID: clients use 10000000000 and
 * 10000000000000000 to mean "newest" (zulip-terminal, zulip-mobile).
 */
export const NEWEST_ANCHOR_THRESHOLD = 10_000_000_000;

/** Parses an ISO 8601 date or date-time (UTC when no zone is given) to Unix seconds. */
function parseAnchorDate(raw: string): number {
  const text = /^\d{4}-\d{2}-\d{2}$/.test(raw) ? `${raw}T00:00:00Z` : /[zZ]|[+-]\d{2}:?\d{2}$/.test(raw) ? raw : `${raw}Z`;
  const ms = /^\d{4}-\d{2}-\d{2}/.test(raw) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) throw badRequest('Invalid anchor_date');
  return Math.floor(ms / 1000);
}

/**
 * Zulip's parse_anchor_value: `use_first_unread_anchor` (the pre-3.0 way) wins; then
 * "oldest", "newest", "first_unread", "date" (with anchor_date), or an integer, negative
 * ones meaning 0 and huge ones the newest sentinel.
 */
export function parseAnchor(raw: string | undefined, useFirstUnread: boolean, anchorDate: string | undefined): Anchor {
  if (useFirstUnread) return { kind: 'first_unread' };
  if (raw === undefined) throw new JsonableError("Missing 'anchor' argument.", 'BAD_REQUEST', 400);
  switch (raw) {
    case 'oldest':
      return { kind: 'id', id: 0 };
    case 'newest':
      return { kind: 'id', id: LARGER_THAN_MAX_MESSAGE_ID };
    case 'first_unread':
      return { kind: 'first_unread' };
    case 'date':
      if (anchorDate === undefined) throw new JsonableError("Missing 'anchor_date' argument", 'REQUEST_VARIABLE_MISSING', 400, { var_name: 'anchor_date' });
      return { kind: 'date', since: parseAnchorDate(anchorDate) };
  }
  // Python's int(): optional sign, digits, surrounding whitespace.
  if (!/^\s*[+-]?\d+\s*$/.test(raw)) throw badRequest('Invalid anchor');
  const n = Number(raw.trim());
  if (n < 0) return { kind: 'id', id: 0 };
  return { kind: 'id', id: Math.min(n, LARGER_THAN_MAX_MESSAGE_ID) };
}
