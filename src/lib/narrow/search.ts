import { stemmer } from 'stemmer';
import { escapeHtml } from '../html.js';

/**
 * Full-text search terms. Zulip (PostgreSQL `english` text search) ignores English stop
 * words and matches stemmed words in the topic or content; a quoted phrase must also
 * appear as is. SQLite's FTS5 has no stop words, so we drop the same words ourselves
 * to give the same answers on both databases.
 */
export interface SearchQuery {
  /** The search text as the client sent it (every search term, space-joined). */
  text: string;
  /** Lower-cased, diacritic-free words that are not stop words, in query order, unique. */
  words: string[];
  /** Quoted phrases, without their quotes. */
  phrases: string[];
  /** Porter stems of `words`: a word in a message is a match when its stem is one of these. */
  stems: ReadonlySet<string>;
}

/** PostgreSQL's english.stop (the Snowball list). */
const STOP_WORDS: ReadonlySet<string> = new Set(
  `i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
  it its itself they them their theirs themselves what which who whom this that these those am is are was were be
  been being have has had having do does did doing a an the and but if or because as until while of at by for with
  about against between into through during before after above below to from up down in out on off over under again
  further then once here there when where why how all any both each few more most other some such no nor not only
  own same so than too very s t can will just don should now`.split(/\s+/),
);

const WORD = /[\p{L}\p{N}\p{M}]+/gu;

export function normalizeWord(word: string): string {
  return word.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
}

export function parseSearch(text: string): SearchQuery {
  const words: string[] = [];
  for (const m of text.matchAll(WORD)) {
    const w = normalizeWord(m[0]);
    if (w && !STOP_WORDS.has(w) && !words.includes(w)) words.push(w);
  }
  const phrases: string[] = [];
  for (const m of text.matchAll(/"[^"]+"|\S+/g)) {
    const t = m[0];
    if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) phrases.push(t.slice(1, -1));
  }
  return { text, words, phrases, stems: new Set(words.map((w) => stemmer(w))) };
}

/**
 * The FTS5 MATCH expression requiring every word (each quoted, so no word is read as FTS5
 * syntax), or null when no word is left: such a search matches nothing, as in PostgreSQL.
 */
export function fts5Query(q: SearchQuery): string | null {
  if (q.words.length === 0) return null;
  return q.words.map((w) => `"${w}"`).join(' ');
}

const HTML_TOKEN = /<[^>]*>|&#?\w+;|[\p{L}\p{N}\p{M}]+/gu;

/**
 * Wraps each word of `html` whose stem is searched for in `<span class="highlight">`,
 * leaving tags, attributes and character references alone (Zulip highlights what
 * PostgreSQL's ts_headline reports, which likewise skips markup).
 */
export function highlightHtml(html: string, stems: ReadonlySet<string>): string {
  if (stems.size === 0) return html;
  return html.replace(HTML_TOKEN, (token) => {
    if (token.startsWith('<') || token.startsWith('&')) return token;
    return stems.has(stemmer(normalizeWord(token))) ? `<span class="highlight">${token}</span>` : token;
  });
}

/**
 * Zulip's match_content / match_subject: the rendered content and the HTML-escaped topic,
 * with search matches highlighted when the narrow searched.
 */
export function searchMatchFields(
  renderedContent: string,
  topic: string,
  search: SearchQuery | null,
): { match_content: string; match_subject: string } {
  const stems = search?.stems ?? new Set<string>();
  return { match_content: highlightHtml(renderedContent, stems), match_subject: highlightHtml(escapeHtml(topic), stems) };
}
