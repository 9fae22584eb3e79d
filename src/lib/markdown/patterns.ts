import { EMOTICON_CONVERSIONS, ZULIP_EXTRA_EMOJI, emojiCodeToName, emojiNameToCode, unicodeEmojiToCode } from './emoji.js';
import { Element } from './etree.js';
import type { InlineNode, InlinePattern, MatchPattern, ResumePolicy, SpanPattern } from './inline.js';
import { compileLinkifierPattern, expandUriTemplate, type Linkifier } from './linkifiers.js';
import { inlineUploadImage, rewriteLocalLink, sanitizeUrl, uploadPathId, urlToA, webLinkRegex } from './links.js';
import { ETX, STX, type HtmlStash } from './preprocess.js';
import {
  CHANNEL_SOURCE,
  CHANNEL_TOPIC_MESSAGE_SOURCE,
  CHANNEL_TOPIC_SOURCE,
  GROUP_MENTIONS_SOURCE,
  MENTIONS_SOURCE,
  MENTION_ID_RE,
  STREAM_WILDCARDS,
  TOPIC_WILDCARDS,
} from './syntax.js';
import { renderTex } from './tex.js';
import { timestampToIso } from './timestamp.js';
import { encodeChannel, hashUtilEncode } from './url.js';
import type { UploadPreview } from '../thumbnail.js';

// Zulip's inline patterns, in Zulip's priority order. Elements that carry final text mark it
// atomic so no later pattern rewrites it.

export interface MentionUser {
  id: number;
  fullName: string;
  isActive: boolean;
}

export interface MentionGroup {
  id: number;
  name: string;
  deactivated: boolean;
}

export interface RealmEmoji {
  id: string;
  sourceUrl: string;
  deactivated: boolean;
}

export interface Lookups {
  realmUrl: string;
  userById(id: number): MentionUser | undefined;
  userByName(name: string): MentionUser | undefined;
  groupByName(name: string): MentionGroup | undefined;
  channelIdByName(name: string): number | undefined;
  realmEmoji(name: string): RealmEmoji | undefined;
  linkifiers: readonly Linkifier[];
  translateEmoticons: boolean;
}

export interface Mentions {
  userIds: Set<number>;
  silentUserIds: Set<number>;
  groupIds: Set<number>;
  streamWildcard: boolean;
  topicWildcard: boolean;
}

export interface PatternEnv {
  lookups: Lookups;
  stash: HtmlStash;
  mentions: Mentions;
  unescape(text: string): string;
  /** Uploaded images by path id (MarkdownContext.uploadPreviews). */
  uploads?: ReadonlyMap<string, UploadPreview>;
  /** Path ids of the uploaded images shown with the image syntax, in order. */
  inlineImages: string[];
}

type Check = (data: string) => boolean;

function span(re: RegExp, mayMatch: Check | undefined, handle: SpanPattern['handle'], resume: ResumePolicy = 'restart'): SpanPattern {
  return { kind: 'span', re, handle, resume, mayMatch };
}

function match(re: RegExp, mayMatch: Check | undefined, handle: MatchPattern['handle'], resume: ResumePolicy = 'restart'): MatchPattern {
  return { kind: 'match', re, handle, resume, mayMatch };
}

const has =
  (...needles: string[]): Check =>
  (data) =>
    needles.some((n) => data.includes(n));
const NON_ASCII = /[^\u0000-\u007f]/;

function atomicEl(tag: string, attrib: Record<string, string>, text: string): Element {
  const el = new Element(tag, attrib);
  el.setText(text, true);
  return el;
}

function codeEscape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

export function makeEmoji(code: string, display: string): Element {
  const title = display.slice(1, -1).replaceAll('_', ' ');
  return atomicEl('span', { class: `emoji emoji-${code}`, title, role: 'img', 'aria-label': title }, display);
}

function makeRealmEmoji(src: string, display: string): Element {
  return new Element('img', {
    src,
    class: 'emoji',
    alt: display,
    title: display.slice(1, -1).replaceAll('_', ' '),
  });
}

const W = '[\\p{L}\\p{N}_]';
const ESCAPED_BACKSLASH = `${STX}92${ETX}`;
const TERMINALS = String.raw`,.;?!()\[\] "'\n\t`;
const EMOTICON_SOURCE =
  `(?<![^${TERMINALS}])(?<emoticon>` +
  Object.keys(EMOTICON_CONVERSIONS)
    .map((e) => e.replace(/[()|]/g, '\\$&'))
    .join('|') +
  `)(?![^${TERMINALS}])`;
// Unicode TR51's possible-emoji pattern: flags, keycaps, modifiers, tag sequences, ZWJ chains.
const EMOJI_ELEMENT = String.raw`(?:\p{RI}\p{RI}|\p{Emoji}(?:\p{Emoji_Modifier}|\uFE0F\u20E3?|[\u{E0020}-\u{E007E}]+\u{E007F})?)`;
const POSSIBLE_EMOJI = `${EMOJI_ELEMENT}(?:\\u200D${EMOJI_ELEMENT})*`;
const TEXT_PRESENTATION = /^\P{Emoji_Presentation}\u20E3?$/u;

// Compiled once; the inline processor resets lastIndex before every use.
const RE = {
  backtick: /(?:(?<!\\)((?:\\{2})+)(?=`+)|(?<!\\)(`+)(.+?)(?<!`)\2(?!`))/gsu,
  strongEm: /(\*\*\*)(?!\s+)([^*^\n]+)(?<!\s)\*\*\*/gu,
  mention: new RegExp(MENTIONS_SOURCE, 'gu'),
  tex: /(?<![\p{L}\p{N}_])(?<!\$)\$\$(?<body>[^\n_$](?:\\\$|[^$\n])*)\$\$(?!\$)(?![\p{L}\p{N}_])/gu,
  channelTopicMessage: new RegExp(CHANNEL_TOPIC_MESSAGE_SOURCE, 'gu'),
  channelTopic: new RegExp(CHANNEL_TOPIC_SOURCE, 'gu'),
  channel: new RegExp(CHANNEL_SOURCE, 'gu'),
  timestamp: /<time:(?<time>[^>]*?)>/gu,
  groupMention: new RegExp(GROUP_MENTIONS_SOURCE, 'gu'),
  image: /!\[/gu,
  link: /(?<!!)\[/gu,
  autolink: webLinkRegex('gu'),
  entity: /(&(?:#[0-9]+|#x[0-9a-fA-F]+|[a-zA-Z0-9]+);)/gu,
  strong: /(\*\*)([^\n]+?)\1/gu,
  emphasis: /(\*)(?!\s+)([^*^\n]+)(?<!\s)\*/gu,
  del: /(?<!~)(~~)([^~\n]+?)(~~)(?!~)/gu,
  notStrong: /((^|\s)(\*|_)(\s|$))/gu,
  emoji: new RegExp(`(?<syntax>:(?:${W}|[\\-+])+:)`, 'gu'),
  emoticon: new RegExp(EMOTICON_SOURCE, 'gu'),
  newline: /\n/gu,
  unicodeEmoji: new RegExp(POSSIBLE_EMOJI, 'gu'),
};

export function buildPatterns(env: PatternEnv): InlinePattern[] {
  const { lookups, mentions } = env;
  const patterns: InlinePattern[] = [
    span(RE.backtick, has('`'), (m) => {
      const end = m.index + m[0].length;
      // Unlike upstream Python-Markdown, Zulip keeps leading/trailing spaces in code spans.
      if (m[3]) return { node: atomicEl('code', {}, codeEscape(m[3])), start: m.index, end };
      return { node: m[1]!.replaceAll('\\\\', ESCAPED_BACKSLASH), start: m.index, end };
    }),
    match(RE.strongEm, has('***'), (m) => {
      const strong = new Element('strong');
      strong.sub('em').text = m[2]!;
      return strong;
    }, 'line'),
    span(RE.mention, has('@'), (m) => userMention(m, lookups, mentions)),
    match(RE.tex, has('$$'), (m) => {
      const body = m.groups!.body!;
      const html = renderTex(body, false);
      if (html !== null) return env.stash.store(html);
      return atomicEl('span', { class: 'tex-error' }, `$$${body}$$`);
    }, 'line'),
    span(RE.channelTopicMessage, has('#**'), (m) => {
      const { stream_name: name, topic_name: topic, message_id: messageId } = m.groups as Record<string, string>;
      const id = lookups.channelIdByName(name!);
      if (id === undefined) return null;
      const href = `/#narrow/channel/${encodeChannel(id, name!)}/topic/${hashUtilEncode(topic!)}/near/${messageId}`;
      return { node: atomicEl('a', { class: 'message-link', href }, `#${name} > ${topic} @ 💬`), start: m.index, end: m.index + m[0].length };
    }),
    span(RE.channelTopic, has('#**'), (m) => {
      const { stream_name: name, topic_name: topic } = m.groups as Record<string, string>;
      const id = lookups.channelIdByName(name!);
      if (id === undefined) return null;
      const href = `/#narrow/channel/${encodeChannel(id, name!)}/topic/${hashUtilEncode(topic!)}`;
      const el = atomicEl('a', { class: 'stream-topic', 'data-stream-id': String(id), href }, `#${name} > ${topic}`);
      return { node: el, start: m.index, end: m.index + m[0].length };
    }),
    span(RE.channel, has('#**'), (m) => {
      const name = m.groups!.stream_name!;
      const id = lookups.channelIdByName(name);
      if (id === undefined) return null;
      const href = `/#narrow/channel/${encodeChannel(id, name)}`;
      return { node: atomicEl('a', { class: 'stream', 'data-stream-id': String(id), href }, `#${name}`), start: m.index, end: m.index + m[0].length };
    }),
    match(RE.timestamp, has('<time:'), (m) => {
      const input = m.groups!.time!;
      const iso = timestampToIso(input);
      if (iso === null) return atomicEl('span', { class: 'timestamp-error' }, `Invalid time format: ${input}`);
      return atomicEl('time', { datetime: iso }, input);
    }),
    span(RE.groupMention, has('@'), (m) => groupMention(m, lookups, mentions)),
    span(RE.link, has('['), (m, data) => link(m, data, env)),
    // After links, as Python-Markdown orders them; before autolinks, which would take the URL.
    span(RE.image, has('!['), (m, data) => image(m, data, env)),
    match(RE.autolink, has('.', ':'), (m) => urlToA(lookups.realmUrl, m.groups!.url!)),
    ...lookups.linkifiers.flatMap((l) => linkifierPattern(l, lookups)),
    span(RE.entity, has('&'), (m) => ({ node: env.stash.store(m[1]!), start: m.index, end: m.index + m[0].length }), 'batch'),
    match(RE.strong, has('**'), (m) => textEl('strong', m[2]!), 'line'),
    match(RE.emphasis, has('*'), (m) => textEl('em', m[2]!), 'line'),
    match(RE.del, has('~~'), (m) => textEl('del', m[2]!), 'line'),
    span(RE.notStrong, has('*', '_'), (m) => ({ node: m[1]!, start: m.index, end: m.index + m[0].length }), 'batch'),
    match(RE.emoji, has(':'), (m) => emoji(m.groups!.syntax!, lookups), 'batch'),
    match(RE.emoticon, () => lookups.translateEmoticons, (m) => {
      if (!lookups.translateEmoticons) return null;
      const translated = EMOTICON_CONVERSIONS[m.groups!.emoticon!]!;
      const code = emojiNameToCode(translated.slice(1, -1));
      return code === undefined ? null : makeEmoji(code, translated);
    }, 'after'),
    span(RE.newline, has('\n'), (m) => ({ node: new Element('br'), start: m.index, end: m.index + 1 }), 'batch'),
    span(RE.unicodeEmoji, (data) => NON_ASCII.test(data), (m) => {
      // Characters that are text by default (digits, arrows, ©) stay text unless qualified.
      if (TEXT_PRESENTATION.test(m[0])) return null;
      const code = unicodeEmojiToCode(m[0]);
      if (code === undefined) return null;
      return { node: makeEmoji(code, `:${emojiCodeToName(code)!}:`), start: m.index, end: m.index + m[0].length };
    }, 'batch'),
  ];
  return patterns;
}

function textEl(tag: string, text: string): Element {
  const el = new Element(tag);
  el.text = text;
  return el;
}

function userMention(m: RegExpExecArray, lookups: Lookups, mentions: Mentions): ReturnType<SpanPattern['handle']> {
  let name = m.groups!.match!;
  let silent = m.groups!.silent === '_';
  const topicWildcard = TOPIC_WILDCARDS.has(name);
  const streamWildcard = STREAM_WILDCARDS.has(name);
  let user: MentionUser | undefined;
  const idSyntax = MENTION_ID_RE.exec(name);
  if (idSyntax) {
    const fullName = idSyntax.groups!.full_name;
    user = lookups.userById(Number(idSyntax.groups!.user_id));
    // @**name|id** must name the user with that id exactly.
    if (fullName && user && user.fullName !== fullName) return null;
  } else {
    user = lookups.userByName(name);
  }
  let userId: string | undefined;
  if (streamWildcard) {
    if (!silent) mentions.streamWildcard = true;
    userId = '*';
  } else if (topicWildcard) {
    if (!silent) mentions.topicWildcard = true;
  } else if (user) {
    // Deactivated users are shown but not notified.
    if (!user.isActive) silent = true;
    if (!silent) mentions.userIds.add(user.id);
    else if (user.isActive) mentions.silentUserIds.add(user.id);
    name = user.fullName;
    userId = String(user.id);
  } else {
    return null;
  }
  let cls = topicWildcard ? 'topic-mention' : streamWildcard ? 'user-mention channel-wildcard-mention' : 'user-mention';
  if (silent) cls += ' silent';
  const el = new Element('span');
  if (userId !== undefined) el.set('data-user-id', userId);
  el.set('class', cls);
  el.setText(silent ? name : `@${name}`, true);
  return { node: el, start: m.index, end: m.index + m[0].length };
}

function groupMention(m: RegExpExecArray, lookups: Lookups, mentions: Mentions): ReturnType<SpanPattern['handle']> {
  const group = lookups.groupByName(m.groups!.match!);
  if (!group) return null;
  // Deactivated groups are shown but not notified.
  const silent = m.groups!.silent === '_' || group.deactivated;
  if (!silent) mentions.groupIds.add(group.id);
  const el = atomicEl(
    'span',
    { class: silent ? 'user-group-mention silent' : 'user-group-mention', 'data-user-group-id': String(group.id) },
    silent ? group.name : `@${group.name}`,
  );
  return { node: el, start: m.index, end: m.index + m[0].length };
}

function emoji(syntax: string, lookups: Lookups): InlineNode {
  const name = syntax.slice(1, -1);
  const realm = lookups.realmEmoji(name);
  if (realm && !realm.deactivated) return makeRealmEmoji(realm.sourceUrl, syntax);
  if (name === ZULIP_EXTRA_EMOJI.name) return makeRealmEmoji(ZULIP_EXTRA_EMOJI.url, syntax);
  const code = emojiNameToCode(name);
  // Unknown names stay literal text, hidden from later patterns.
  return code === undefined ? syntax : makeEmoji(code, syntax);
}

function linkifierPattern(l: Linkifier, lookups: Lookups): SpanPattern[] {
  const re = compileLinkifierPattern(l.pattern);
  if (!re) return [];
  return [
    span(re, undefined, (m) => {
      const groups = m.groups!;
      const actual = groups.linkifier_actual_match!;
      const a = urlToA(lookups.realmUrl, expandUriTemplate(l.url_template, groups), actual);
      if (typeof a === 'string') return null;
      const start = m.index + groups.linkifier_before_match!.length;
      return { node: a, start, end: start + actual.length };
    }),
  ];
}

// [text](url) and [text](<url> "title"): bracket and parenthesis matching as Python-Markdown.
function link(m: RegExpExecArray, data: string, env: PatternEnv): ReturnType<SpanPattern['handle']> {
  const [text, afterText, textOk] = getLinkText(data, m.index + m[0].length);
  if (!textOk) return null;
  const target = getLinkTarget(data, afterText, env);
  if (!target) return null;
  const href = sanitizeUrl(env.unescape(target.href.trim()));
  if (href === null) return null;
  const el = new Element('a');
  el.set('href', rewriteLocalLink(env.lookups.realmUrl, href));
  if (target.title !== null) el.set('title', target.title);
  // An empty link text shows the URL; link text is not processed further (Zulip).
  el.setText(!text || !text.trim() ? el.get('href')! : text, true);
  return { node: el, start: m.index, end: target.end };
}

/**
 * ![alt](url "title"), parsed as a link is. Only uploaded images are shown in place (Zulip
 * feature levels 437 and 467); any other target becomes a plain link, its text the alt text.
 */
function image(m: RegExpExecArray, data: string, env: PatternEnv): ReturnType<SpanPattern['handle']> {
  const [text, afterText, textOk] = getLinkText(data, m.index + m[0].length);
  if (!textOk) return null;
  const target = getLinkTarget(data, afterText, env);
  if (!target) return null;
  const src = sanitizeUrl(env.unescape(target.href.trim()));
  if (src === null) return null;
  const alt = env.unescape(text);
  const pathId = uploadPathId(env.lookups.realmUrl, src);
  const upload = pathId === null ? undefined : env.uploads?.get(pathId);
  if (pathId !== null && upload !== undefined) {
    env.inlineImages.push(pathId);
    return { node: inlineUploadImage(pathId, upload, alt, target.title), start: m.index, end: target.end };
  }
  const a = new Element('a');
  a.set('href', rewriteLocalLink(env.lookups.realmUrl, src));
  if (target.title !== null) a.set('title', target.title);
  a.setText(alt.trim() ? alt : a.get('href')!, true);
  return { node: a, start: m.index, end: target.end };
}

// Link syntax is parsed by scanning for the closing "]" and ")". A scan that runs far is
// answered from bracket and parenthesis matching computed once per text, so unclosed brackets
// cost linear time in total instead of a scan to the end for each.
const SHORT_SCAN = 256;

interface Matching {
  data: string;
  closeBracket: Int32Array;
  closeParen: Int32Array;
  lastQuote: number;
}

let matching: Matching | undefined;

function matchingFor(data: string): Matching {
  if (matching?.data === data) return matching;
  const closeBracket = new Int32Array(data.length).fill(-1);
  const closeParen = new Int32Array(data.length).fill(-1);
  const brackets: number[] = [];
  const parens: number[] = [];
  let lastQuote = -1;
  for (let i = 0; i < data.length; i++) {
    const c = data[i];
    if (c === '[') brackets.push(i);
    else if (c === ']' && brackets.length > 0) closeBracket[brackets.pop()!] = i;
    else if (c === '(') parens.push(i);
    else if (c === ')' && parens.length > 0) closeParen[parens.pop()!] = i;
    else if (c === "'" || c === '"') lastQuote = i;
  }
  matching = { data, closeBracket, closeParen, lastQuote };
  return matching;
}

function getLinkText(data: string, index: number): [string, number, boolean] {
  let depth = 1;
  const limit = Math.min(data.length, index + SHORT_SCAN);
  for (let pos = index; pos < limit; pos++) {
    const c = data[pos];
    if (c === ']') depth--;
    else if (c === '[') depth++;
    if (depth === 0) return [data.slice(index, pos), pos + 1, true];
  }
  if (limit === data.length) return [data.slice(index), data.length, false];
  // Depth counting from the "[" at index - 1 ends exactly at its matching "]".
  const close = matchingFor(data).closeBracket[index - 1] ?? -1;
  if (close < 0) return [data.slice(index), data.length, false];
  return [data.slice(index, close), close + 1, true];
}

const LINK_TARGET_RE = /\(\s*(?:(<[^<>]*>)\s*(?:('[^']*'|"[^"]*")\s*)?\))?/suy;

function dequote(s: string): string {
  if ((s.startsWith('"') && s.endsWith('"')) || (s.startsWith("'") && s.endsWith("'"))) return s.slice(1, -1);
  return s;
}

function getLinkTarget(data: string, index: number, env: PatternEnv): { href: string; title: string | null; end: number } | null {
  LINK_TARGET_RE.lastIndex = index;
  const m = LINK_TARGET_RE.exec(data);
  if (!m) return null;
  let href: string;
  let title: string | null = null;
  let end: number;
  if (m[1]) {
    href = m[1].slice(1, -1).trim();
    if (m[2]) title = m[2].slice(1, -1);
    end = m.index + m[0].length;
  } else {
    // Track nested parentheses; a quoted title may follow the URL.
    let brackets = 1;
    let backtrack = 1;
    const start = m.index + m[0].length;
    let pos = start;
    let lastBracket = -1;
    let quote: string | null = null;
    let startQuote = -1;
    let exitQuote = -1;
    let ignoreMatches = false;
    let altQuote: string | null = null;
    let startAltQuote = -1;
    let exitAltQuote = -1;
    let last = '';
    href = '';
    for (let i = pos; i < data.length; i++) {
      if (i - start > SHORT_SCAN && !quote) {
        // No title so far: without quotes ahead, the target ends at the matching ")".
        const table = matchingFor(data);
        if (table.lastQuote < i) {
          const close = table.closeParen[m.index] ?? -1;
          if (close < 0) return null;
          return { href: env.unescape(data.slice(start, close)).trim(), title: null, end: close + 1 };
        }
      }
      const c = data[i]!;
      if (c === '(') {
        if (!ignoreMatches) brackets++;
        else if (backtrack > 0) backtrack--;
      } else if (c === ')') {
        if ((exitQuote !== -1 && quote === last) || (exitAltQuote !== -1 && altQuote === last)) brackets = 0;
        else if (!ignoreMatches) brackets--;
        else if (backtrack > 0) {
          backtrack--;
          if (backtrack === 0) lastBracket = pos + 1;
        }
      } else if (c === "'" || c === '"') {
        if (!quote) {
          ignoreMatches = true;
          backtrack = brackets;
          brackets = 1;
          startQuote = pos + 1;
          quote = c;
        } else if (c !== quote && !altQuote) {
          startAltQuote = pos + 1;
          altQuote = c;
        } else if (c === quote) {
          exitQuote = pos + 1;
        } else if (altQuote && c === altQuote) {
          exitAltQuote = pos + 1;
        }
      }
      pos++;
      if (brackets === 0) {
        if (exitQuote >= 0 && quote === last) {
          href = data.slice(start, startQuote - 1);
          title = data.slice(startQuote, exitQuote - 1);
        } else if (exitAltQuote >= 0 && altQuote === last) {
          href = data.slice(start, startAltQuote - 1);
          title = data.slice(startAltQuote, exitAltQuote - 1);
        } else {
          href = data.slice(start, pos - 1);
        }
        break;
      }
      if (c !== ' ') last = c;
    }
    if (brackets !== 0 && backtrack === 0) {
      href = data.slice(start, lastBracket - 1);
      pos = lastBracket;
      brackets = 0;
    }
    if (brackets !== 0) return null;
    end = pos;
  }
  if (title !== null) title = dequote(env.unescape(title.trim())).replace(/\s/g, ' ');
  return { href: env.unescape(href).trim(), title, end };
}
