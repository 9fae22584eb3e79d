import type { Message } from '../api/types';

/** One narrow term as the API takes it (`narrow` parameter of GET /messages). */
export interface Term {
  operator: string;
  operand: string | number | number[];
  negated?: boolean;
}

export type View =
  | { kind: 'inbox' }
  | { kind: 'recent' }
  | { kind: 'drafts' }
  | { kind: 'narrow'; terms: Term[] };

// Zulip's hash_util: encodeURIComponent, then `%` written as `.` (and `.`, `(`, `)` escaped first).
const HASH_REPLACEMENTS: Record<string, string> = { '%': '.', '(': '.28', ')': '.29', '.': '.2E' };

export function encodeHashComponent(s: string): string {
  return encodeURIComponent(s).replace(/[%().]/g, (m) => HASH_REPLACEMENTS[m]!);
}

export function decodeHashComponent(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\./g, '%'));
  } catch {
    return s;
  }
}

/** Zulip's slug for a channel or user: `<id>-<name>`, spaces as dashes; only the id counts. */
export const slug = (id: number, name: string) => `${id}-${name.replaceAll(' ', '-')}`;

const idOf = (operand: string): number => Number.parseInt(operand, 10);

export interface Names {
  channelName(id: number): string | undefined;
  userName(id: number): string | undefined;
}

export function viewToHash(view: View, names: Names): string {
  if (view.kind !== 'narrow') return `#${view.kind}`;
  if (view.terms.length === 0) return '#feed';
  const parts = ['#narrow'];
  for (const t of view.terms) {
    const op = (t.negated ? '-' : '') + t.operator;
    if (t.operator === 'channel' && typeof t.operand === 'number') parts.push(op, encodeHashComponent(slug(t.operand, names.channelName(t.operand) ?? 'unknown')));
    else if ((t.operator === 'dm' || t.operator === 'dm-including') && Array.isArray(t.operand)) {
      const ids = t.operand;
      const label = ids.length === 1 ? (names.userName(ids[0]!) ?? 'user') : ids.length > 2 ? 'group' : 'dm';
      parts.push(op, encodeHashComponent(`${ids.join(',')}-${label}`));
    } else if (t.operator === 'sender' && typeof t.operand === 'number') parts.push(op, encodeHashComponent(slug(t.operand, names.userName(t.operand) ?? 'user')));
    else parts.push(op, encodeHashComponent(String(t.operand)));
  }
  return parts.join('/');
}

/** Reads Zulip's hash addresses (including the older `stream` and `pm-with` spellings). */
export function hashToView(hash: string): View {
  const h = hash.replace(/^#/, '');
  if (h === '' || h === 'inbox') return { kind: 'inbox' };
  if (h === 'recent' || h === 'recent_topics') return { kind: 'recent' };
  if (h === 'drafts') return { kind: 'drafts' };
  if (h === 'feed' || h === 'all_messages') return { kind: 'narrow', terms: [] };
  const parts = h.split('/');
  if (parts[0] !== 'narrow') return { kind: 'inbox' };
  const terms: Term[] = [];
  for (let i = 1; i + 1 < parts.length; i += 2) {
    let operator = decodeHashComponent(parts[i]!);
    const raw = decodeHashComponent(parts[i + 1]!);
    const negated = operator.startsWith('-');
    if (negated) operator = operator.slice(1);
    if (operator === 'stream') operator = 'channel';
    if (operator === 'pm-with') operator = 'dm';
    if (operator === 'subject') operator = 'topic';
    let operand: Term['operand'] = raw;
    if ((operator === 'channel' || operator === 'sender' || operator === 'near' || operator === 'id' || operator === 'with') && /^\d+/.test(raw)) operand = idOf(raw);
    if ((operator === 'dm' || operator === 'dm-including') && /^\d+/.test(raw)) operand = raw.split('-')[0]!.split(',').map(idOf);
    terms.push(negated ? { operator, operand, negated } : { operator, operand });
  }
  return { kind: 'narrow', terms };
}

/** The channel and topic a narrow is about, for compose defaults and the topic list. */
export function narrowChannel(terms: Term[]): { channel?: number; topic?: string } {
  const c = terms.find((t) => t.operator === 'channel' && !t.negated);
  const t = terms.find((t) => t.operator === 'topic' && !t.negated);
  return { channel: typeof c?.operand === 'number' ? c.operand : undefined, topic: typeof t?.operand === 'string' ? t.operand : undefined };
}

export function narrowDm(terms: Term[]): number[] | undefined {
  const d = terms.find((t) => t.operator === 'dm' && !t.negated);
  return Array.isArray(d?.operand) ? d.operand : undefined;
}

/**
 * Whether a message that just arrived belongs in the narrow on screen. Only the operators
 * a message's own fields decide; for the rest (search, has:) it returns null: refetch.
 */
export function messageMatches(terms: Term[], m: Message, myId: number): boolean | null {
  for (const t of terms) {
    let ok: boolean | null;
    switch (t.operator) {
      case 'channel':
        ok = m.type === 'stream' && m.stream_id === t.operand;
        break;
      case 'topic':
        ok = m.type === 'stream' && m.subject.toLowerCase() === String(t.operand).toLowerCase();
        break;
      case 'dm': {
        if (m.type !== 'private' || !Array.isArray(t.operand) || !Array.isArray(m.display_recipient)) {
          ok = false;
          break;
        }
        const want = new Set([...t.operand, myId]);
        const have = new Set(m.display_recipient.map((r) => r.id));
        ok = want.size === have.size && [...want].every((id) => have.has(id));
        break;
      }
      case 'sender':
        ok = m.sender_id === t.operand;
        break;
      case 'is':
        if (t.operand === 'dm' || t.operand === 'private') ok = m.type === 'private';
        else if (t.operand === 'starred') ok = m.flags.includes('starred');
        else if (t.operand === 'mentioned') ok = m.flags.includes('mentioned') || m.flags.includes('wildcard_mentioned');
        else if (t.operand === 'unread') ok = !m.flags.includes('read');
        else ok = null;
        break;
      case 'in':
        ok = t.operand === 'home' || t.operand === 'all' ? true : null;
        break;
      default:
        ok = null;
    }
    if (ok === null) return null;
    if (ok === !!t.negated) return false;
  }
  return true;
}

/** Zulip marks messages read only where seeing them means having read them. */
export function narrowMarksRead(terms: Term[]): boolean {
  return !terms.some((t) => t.operator === 'search' || (t.operator === 'is' && t.operand === 'unread'));
}

/** Zulip's search syntax: `channel:general topic:"a b" is:starred some words`. */
export function parseSearch(query: string, resolve: { channelId(name: string): number | undefined; userId(emailOrName: string): number | undefined }): Term[] {
  const terms: Term[] = [];
  const words: string[] = [];
  const re = /(-?)([a-z-]+):("([^"]*)"|\S+)|"([^"]*)"|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(query))) {
    if (m[2]) {
      let operator = m[2];
      const negated = m[1] === '-';
      const raw = m[4] ?? m[3]!;
      if (operator === 'stream') operator = 'channel';
      if (operator === 'pm-with') operator = 'dm';
      if (operator === 'subject') operator = 'topic';
      let operand: Term['operand'] = raw;
      if (operator === 'channel') operand = resolve.channelId(raw) ?? raw;
      else if (operator === 'sender' || operator === 'dm') {
        const ids = raw.split(',').map((x) => resolve.userId(x.trim()));
        if (ids.every((x) => x !== undefined)) operand = operator === 'sender' ? ids[0]! : (ids as number[]);
      } else if (operator === 'near' || operator === 'id') operand = Number(raw);
      terms.push(negated ? { operator, operand, negated } : { operator, operand });
    } else words.push(m[5] ?? m[6]!);
  }
  if (words.length) terms.push({ operator: 'search', operand: words.join(' ') });
  return terms;
}

export function termsToSearch(terms: Term[], names: Names): string {
  return terms
    .map((t) => {
      const neg = t.negated ? '-' : '';
      if (t.operator === 'search') return String(t.operand);
      let v: string;
      if (t.operator === 'channel' && typeof t.operand === 'number') v = names.channelName(t.operand) ?? String(t.operand);
      else if (Array.isArray(t.operand)) v = t.operand.map((id) => names.userName(id) ?? id).join(',');
      else if (t.operator === 'sender' && typeof t.operand === 'number') v = names.userName(t.operand) ?? String(t.operand);
      else v = String(t.operand);
      return `${neg}${t.operator}:${/\s/.test(v) ? `"${v}"` : v}`;
    })
    .join(' ');
}
