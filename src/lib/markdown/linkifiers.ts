import { webLinkRegex } from './links.js';
import { urlsplit, urlunsplit } from './url.js';

// Realm linkifiers: a pattern (Python/RE2 syntax, as Zulip stores it) and an RFC 6570 URL
// template whose variables are the pattern's named groups.

export interface Linkifier {
  pattern: string;
  url_template: string;
}

const BEFORE = 'linkifier_before_match';
const ACTUAL = 'linkifier_actual_match';
const AFTER = 'linkifier_after_match';

/** Python/RE2 regex syntax -> JavaScript (unicode mode); null if it cannot be expressed. */
function toJsSource(pattern: string): { source: string; flags: string } | null {
  let flags = '';
  let src = pattern;
  const inline = /^\(\?([imsU]+)\)/.exec(src);
  if (inline) {
    if (inline[1]!.includes('U')) return null;
    flags = [...new Set(inline[1]!)].join('');
    src = src.slice(inline[0].length);
  }
  let out = '';
  let inClass = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (c === '\\') {
      const n = src[i + 1];
      if (n === undefined) return null;
      i++;
      if (n === 'p' || n === 'P') {
        // RE2 allows \pL; JavaScript needs braces.
        if (src[i + 1] === '{') {
          const close = src.indexOf('}', i);
          if (close < 0) return null;
          out += '\\' + n + src.slice(i + 1, close + 1);
          i = close;
        } else if (src[i + 1] !== undefined) {
          out += `\\${n}{${src[i + 1]}}`;
          i++;
        }
      } else if (n === 'A') {
        out += '^';
      } else if (n === 'z' || n === 'Z') {
        out += '$';
      } else if (/[A-Za-z0-9]/.test(n) || '^$\\.*+?()[]{}|/'.includes(n) || (inClass && n === '-')) {
        out += '\\' + n;
      } else {
        // Escaped punctuation that needs no escape (and is an error in unicode mode).
        out += n;
      }
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      out += c;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      if (src[i + 1] === '^') out += src[++i];
      if (src[i + 1] === ']') out += '\\' + src[++i];
      continue;
    }
    if (c === '(' && src.startsWith('(?P<', i)) {
      out += '(?<';
      i += 3;
      continue;
    }
    if (c === '(' && src.startsWith('(?P=', i)) {
      const close = src.indexOf(')', i);
      if (close < 0) return null;
      out += `\\k<${src.slice(i + 4, close)}>`;
      i = close;
      continue;
    }
    out += c;
  }
  return { source: out, flags };
}

const compiled = new Map<string, RegExp | null>();

/**
 * The linkifier's pattern wrapped as Zulip does: it must start at the beginning, after
 * whitespace or an opening delimiter, and must not be followed by a letter or digit.
 * Returns null for a pattern JavaScript cannot run. Compiled patterns are cached.
 */
export function compileLinkifierPattern(pattern: string): RegExp | null {
  const cached = compiled.get(pattern);
  if (cached !== undefined) return cached;
  let re: RegExp | null = null;
  const js = toJsSource(pattern);
  if (js) {
    try {
      re = new RegExp(
        `(?<${BEFORE}>^|\\s|\\u0085|\\p{Z}|['"(,:<])(?<${ACTUAL}>${js.source})(?<${AFTER}>$|[^\\p{L}\\p{N}])`,
        'gu' + js.flags,
      );
    } catch {
      re = null;
    }
  }
  if (compiled.size >= 1000) compiled.clear();
  compiled.set(pattern, re);
  return re;
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;
const RESERVED = /[:/?#[\]@!$&'()*+,;=]/;

function pctEncode(value: string, allowReserved: boolean): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (UNRESERVED.test(c) || (allowReserved && RESERVED.test(c))) {
      out += c;
    } else if (allowReserved && c === '%' && /^[0-9A-Fa-f]{2}$/.test(value.slice(i + 1, i + 3))) {
      out += value.slice(i, i + 3);
      i += 2;
    } else {
      const cp = value.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      for (const b of Buffer.from(ch, 'utf8')) out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
      i += ch.length - 1;
    }
  }
  return out;
}

const OPERATORS: Record<string, { first: string; sep: string; named: boolean; ifEmpty: string; reserved: boolean }> = {
  '': { first: '', sep: ',', named: false, ifEmpty: '', reserved: false },
  '+': { first: '', sep: ',', named: false, ifEmpty: '', reserved: true },
  '#': { first: '#', sep: ',', named: false, ifEmpty: '', reserved: true },
  '.': { first: '.', sep: '.', named: false, ifEmpty: '', reserved: false },
  '/': { first: '/', sep: '/', named: false, ifEmpty: '', reserved: false },
  ';': { first: ';', sep: ';', named: true, ifEmpty: '', reserved: false },
  '?': { first: '?', sep: '&', named: true, ifEmpty: '=', reserved: false },
  '&': { first: '&', sep: '&', named: true, ifEmpty: '=', reserved: false },
};

/** RFC 6570 expansion with string values (undefined values are skipped). */
export function expandUriTemplate(template: string, vars: Readonly<Record<string, string | undefined>>): string {
  return template.replace(/\{([^{}]*)\}/g, (whole, expr: string) => {
    const opChar = /^[+#./;?&]/.test(expr) ? expr[0]! : '';
    const op = OPERATORS[opChar];
    if (!op) return whole;
    const parts: string[] = [];
    for (const spec of expr.slice(opChar.length).split(',')) {
      const m = /^([A-Za-z0-9_.%]+)(?::(\d+)|\*)?$/.exec(spec.trim());
      if (!m) return whole;
      let value = Object.hasOwn(vars, m[1]!) ? vars[m[1]!] : undefined;
      if (value === undefined) continue;
      if (m[2] !== undefined) value = [...value].slice(0, Number(m[2])).join('');
      const encoded = pctEncode(value, op.reserved);
      if (op.named) parts.push(encoded === '' ? m[1]! + op.ifEmpty : `${m[1]}=${encoded}`);
      else parts.push(encoded);
    }
    return parts.length === 0 ? '' : op.first + parts.join(op.sep);
  });
}

export interface LinkifierMatch {
  url: string;
  text: string;
  /** Start of the match, including the delimiter before it. */
  index: number;
  /** Offsets of the linked text itself. */
  start: number;
  end: number;
}

/** Each non-overlapping match of one linkifier in `text`. */
export function* linkifierMatches(re: RegExp, template: string, text: string): Generator<LinkifierMatch> {
  let pos = 0;
  while (pos < text.length) {
    re.lastIndex = pos;
    const m = re.exec(text);
    if (!m) return;
    const groups = m.groups!;
    const before = groups[BEFORE]!;
    const actual = groups[ACTUAL]!;
    const after = groups[AFTER]!;
    const start = m.index + before.length;
    yield { url: expandUriTemplate(template, groups), text: actual, index: m.index, start, end: start + actual.length };
    // The delimiter after a match may start the next one.
    pos = Math.max(m.index + m[0].length - after.length, pos + 1);
  }
}

export interface TopicLink {
  url: string;
  text: string;
}

/**
 * Zulip's topic_links: linkifier matches (earlier linkifiers win overlaps) and bare URLs in a
 * topic name, in order of appearance.
 */
export function topicLinks(topic: string, linkifiers: readonly Linkifier[]): TopicLink[] {
  interface Candidate {
    url: string;
    text: string;
    index: number;
    precedence: number;
  }
  const matches: Candidate[] = [];
  linkifiers.forEach((l, precedence) => {
    const re = compileLinkifierPattern(l.pattern);
    if (!re) return;
    for (const m of linkifierMatches(re, l.url_template, topic)) {
      matches.push({ url: m.url, text: m.text, index: m.index, precedence });
    }
  });
  matches.sort((a, b) => a.precedence - b.precedence || a.index - b.index);

  const urlRe = webLinkRegex('u');
  let pos = 0;
  while (pos < topic.length) {
    const split = /[ !;),'"]/.exec(topic.slice(pos));
    const end = split ? pos + split.index : topic.length;
    const m = urlRe.exec(topic.slice(pos, end));
    if (m) {
      const actual = m.groups!.url!;
      let parts = urlsplit(actual);
      let url = actual;
      if (!parts.scheme) {
        if (!parts.netloc) {
          const i = (parts.path + '/').indexOf('/');
          parts = { ...parts, netloc: parts.path.slice(0, i), path: parts.path.slice(i) };
        }
        url = urlunsplit({ ...parts, scheme: 'https' });
      }
      matches.push({ url, text: actual, index: pos, precedence: Number.MAX_SAFE_INTEGER });
    }
    pos = end + 1;
  }

  const overlaps = (a: Candidate, b: Candidate): boolean =>
    (b.index <= a.index && a.index < b.index + b.text.length) || (a.index <= b.index && b.index < a.index + a.text.length);
  const applied: Candidate[] = [];
  for (const m of matches) {
    if (applied.every((old) => !overlaps(old, m))) applied.push(m);
  }
  applied.sort((a, b) => a.index - b.index);
  return applied.map(({ url, text }) => ({ url, text }));
}
