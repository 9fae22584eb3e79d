import { BlockParser } from './blocks.js';
import { Element } from './etree.js';
import { highlightCode } from './highlight.js';
import { InlineProcessor } from './inline.js';
import { MAX_MARKDOWN_INPUT } from './limits.js';
import type { Linkifier } from './linkifiers.js';
import { processLinks, type LinkScan } from './links.js';
import type { UploadPreview } from '../thumbnail.js';
import { buildPatterns, type Lookups, type MentionGroup, type MentionUser, type Mentions, type RealmEmoji } from './patterns.js';
import { ETX, FencedBlocks, HtmlStash, STX, normalizeWhitespace, separateHangingLists } from './preprocess.js';
import { escapeHtml, escapeText, serialize } from './serialize.js';
import { CHANNEL_SOURCE, CHANNEL_TOPIC_SOURCE, GROUP_MENTIONS_SOURCE, MENTIONS_SOURCE, MENTION_ID_RE, STREAM_WILDCARDS, TOPIC_WILDCARDS } from './syntax.js';

// Zulip-flavoured Markdown -> Zulip's exact HTML (the `rendered_content` of messages, channel
// descriptions, profile fields...). A pure function: everything it needs from the database is
// passed in the context. The pipeline is Python-Markdown's, configured as Zulip configures it:
// line preprocessors, block parser, inline patterns, tree processors, serializer.
//
// Why not markdown-it: Zulip's syntax is Python-Markdown's, not CommonMark. Its blocks are
// split at blank lines, lists nest by two spaces, emphasis is regex-based and line-bound, and
// the order of inline patterns decides which construct wins; Zulip's own fixtures exercise all
// of these, and a CommonMark parser would need every rule replaced to reproduce them.
//
// Cost: regexes are compiled once per process; per call the work is linear in the input
// except for the bounded re-scans described in inline.ts and the limits in limits.ts.

export { emojiCodeToName, emojiCodeToNames, emojiNameToCode, serverEmojiData, unicodeEmojiToCode, ZULIP_EXTRA_EMOJI } from './emoji.js';
export { compileLinkifierPattern, expandUriTemplate, topicLinks, type Linkifier, type TopicLink } from './linkifiers.js';
export { MAX_BLOCK_NESTING, MAX_INLINE_NESTING, MAX_MARKDOWN_INPUT } from './limits.js';
export type { MentionGroup, MentionUser } from './patterns.js';

export interface RealmEmojiEntry extends RealmEmoji {
  name: string;
}

export interface MarkdownContext {
  /** The realm's base URL without a trailing slash, e.g. "https://chat.example.com". */
  realmUrl: string;
  /**
   * Users that may be mentioned: at least those named in the content (see `mentionCandidates`),
   * excluding users the sender cannot see. By full name (case-insensitively) or by id.
   */
  users?: readonly MentionUser[];
  /** User groups that may be mentioned, matched by exact name. */
  groups?: readonly MentionGroup[];
  /** Channels that `#**name**` may link to (those the sender can access), by exact name. */
  channels?: readonly { id: number; name: string }[];
  /** Custom emoji; deactivated ones are not rendered. */
  realmEmoji?: readonly RealmEmojiEntry[];
  /** Realm linkifiers, in precedence order. */
  linkifiers?: readonly Linkifier[];
  /** The sender's translate_emoticons setting (":)" -> :smile:). */
  translateEmoticons?: boolean;
  /** The realm's default_code_block_language for fences without a language. */
  defaultCodeBlockLanguage?: string | null;
  /** The realm's inline_image_preview setting (default true). */
  inlineImagePreview?: boolean;
  /** Alert words by user id; matched case-insensitively on word boundaries. */
  alertWords?: ReadonlyMap<number, readonly string[]>;
  /**
   * Uploaded images by path id (Zulip's user_upload_previews), when rendering a message: a link
   * to an upload gets a preview, and the image syntax `![alt](url)` shows it in place, only if
   * it is here, as a loading spinner (which the caller rewrites into the thumbnail where one
   * exists, lib/thumbnail.ts). Without it, upload links are previewed by their extension
   * through /thumbnail, and the image syntax makes a plain link.
   */
  uploadPreviews?: ReadonlyMap<string, UploadPreview>;
}

export interface RenderResult {
  html: string;
  /** Users notified by a mention (not silent, not in a quote, active). */
  mentionedUserIds: number[];
  /** Users mentioned silently (`@_**name**`, or inside a quote). */
  silentMentionedUserIds: number[];
  /** Groups notified by a mention. */
  mentionedGroupIds: number[];
  /** `@**all**`/`@**everyone**`/`@**channel**`/`@**stream**` (stream) and `@**topic**` (topic). */
  wildcards: { stream: boolean; topic: boolean };
  hasLink: boolean;
  hasImage: boolean;
  /** Whether the content links to uploaded files (candidates in `attachmentPathIds`). */
  hasAttachment: boolean;
  /** Path ids (after /user_uploads/) of linked uploads, to be checked against the database. */
  attachmentPathIds: string[];
  isMeMessage: boolean;
  /** Users one of whose alert words occurs in the content. */
  alertWordUserIds: number[];
}

const BLOCK_LEVEL = new Set([
  'address', 'article', 'aside', 'blockquote', 'details', 'div', 'dl', 'fieldset', 'figcaption',
  'figure', 'footer', 'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hgroup', 'hr', 'main',
  'menu', 'nav', 'ol', 'p', 'pre', 'section', 'table', 'ul', 'canvas', 'colgroup', 'dd', 'body',
  'dt', 'group', 'html', 'iframe', 'li', 'legend', 'math', 'map', 'noscript', 'output', 'object',
  'option', 'progress', 'script', 'style', 'summary', 'tbody', 'td', 'textarea', 'tfoot', 'th',
  'thead', 'tr', 'video',
]);

/**
 * Render message Markdown to Zulip's HTML. Never throws: on an internal failure the content
 * is returned as escaped paragraphs. Inputs over MAX_MARKDOWN_INPUT characters are not parsed.
 */
export function renderMarkdown(content: string, ctx: MarkdownContext): RenderResult {
  try {
    if (content.length > MAX_MARKDOWN_INPUT) return plainResult(content, ctx);
    if (isPlainText(content, ctx)) return result(`<p>${content}</p>`, content, ctx, emptyMentions(), NO_LINKS);
    return render(content, ctx);
  } catch {
    return plainResult(content, ctx);
  }
}

function emptyMentions(): Mentions {
  return { userIds: new Set(), silentUserIds: new Set(), groupIds: new Set(), streamWildcard: false, topicWildcard: false };
}

const NO_LINKS: LinkScan = { hasLink: false, hasImage: false, attachmentPathIds: [] };

function result(html: string, content: string, ctx: MarkdownContext, mentions: Mentions, links: LinkScan): RenderResult {
  const sorted = (s: Set<number>): number[] => [...s].sort((a, b) => a - b);
  return {
    html,
    mentionedUserIds: sorted(mentions.userIds),
    silentMentionedUserIds: sorted(new Set([...mentions.silentUserIds].filter((id) => !mentions.userIds.has(id)))),
    mentionedGroupIds: sorted(mentions.groupIds),
    wildcards: { stream: mentions.streamWildcard, topic: mentions.topicWildcard },
    hasLink: links.hasLink,
    hasImage: links.hasImage,
    hasAttachment: links.attachmentPathIds.length > 0,
    attachmentPathIds: links.attachmentPathIds,
    isMeMessage: content.startsWith('/me '),
    alertWordUserIds: ctx.alertWords ? alertWordUsers(content, ctx.alertWords) : [],
  };
}

function plainResult(content: string, ctx: MarkdownContext): RenderResult {
  const html = content.trim()
    ? content
        .trim()
        .split(/\n{2,}/)
        .map((p) => `<p>${escapeHtml(p).replaceAll('\n', '<br>\n')}</p>`)
        .join('\n')
    : '';
  return result(html, content, ctx, emptyMentions(), NO_LINKS);
}

function lookupsFor(ctx: MarkdownContext): Lookups {
  // Indexes are built on first use: most messages mention nobody.
  let usersById: Map<number, MentionUser> | undefined;
  let usersByName: Map<string, MentionUser> | undefined;
  let groups: Map<string, MentionGroup> | undefined;
  let channels: Map<string, number> | undefined;
  let emoji: Map<string, RealmEmojiEntry> | undefined;
  return {
    realmUrl: ctx.realmUrl.replace(/\/+$/, ''),
    userById(id) {
      usersById ??= new Map((ctx.users ?? []).map((u) => [u.id, u]));
      return usersById.get(id);
    },
    userByName(name) {
      if (!usersByName) {
        usersByName = new Map();
        // With duplicate names, prefer an active user, then the lowest id.
        const ordered = [...(ctx.users ?? [])].sort((a, b) => Number(a.isActive) - Number(b.isActive) || b.id - a.id);
        for (const u of ordered) usersByName.set(u.fullName.toLowerCase(), u);
      }
      return usersByName.get(name.toLowerCase());
    },
    groupByName(name) {
      groups ??= new Map((ctx.groups ?? []).map((g) => [g.name, g]));
      return groups.get(name);
    },
    channelIdByName(name) {
      channels ??= new Map((ctx.channels ?? []).map((c) => [c.name, c.id]));
      return channels.get(name);
    },
    realmEmoji(name) {
      emoji ??= new Map((ctx.realmEmoji ?? []).map((e) => [e.name, e]));
      return emoji.get(name);
    },
    linkifiers: ctx.linkifiers ?? [],
    translateEmoticons: ctx.translateEmoticons ?? false,
  };
}

/**
 * One line of words no rule of the pipeline changes: letters and digits in single-spaced runs,
 * with , ? ! ' " and a period right after a letter ending a word (no list item, link or domain
 * name). No emoji (some pictographs are letters, like U+2139), and no linkifiers to try.
 * test/lib/markdown_features.test.ts checks it against the whole pipeline.
 */
const PLAIN_TEXT = /^(?:[\p{L}\p{Nd},?!'"]|(?<=\p{L})\.(?= |$))+(?: (?:[\p{L}\p{Nd},?!'"]|(?<=\p{L})\.(?= |$))+)*$/u;
const PICTOGRAPH = /\p{Extended_Pictographic}/u;

/** Whether `content` renders as itself in one paragraph (renderMarkdown's fast path). */
export function isPlainText(content: string, ctx: MarkdownContext): boolean {
  return !ctx.linkifiers?.length && PLAIN_TEXT.test(content) && !PICTOGRAPH.test(content);
}

/** The whole pipeline, without renderMarkdown's fast path (tests compare the two). */
export function renderThroughPipeline(content: string, ctx: MarkdownContext): RenderResult {
  return render(content, ctx);
}

function render(content: string, ctx: MarkdownContext): RenderResult {
  const mentions = emptyMentions();
  if (!content.trim()) return result('', content, ctx, mentions, NO_LINKS);
  const stash = new HtmlStash();
  let lines = separateHangingLists(content.split('\n'));
  lines = normalizeWhitespace(lines);
  lines = new FencedBlocks({ stash, defaultLanguage: ctx.defaultCodeBlockLanguage ?? undefined }).run(lines);
  const root = new BlockParser().parseDocument(lines);
  highlightIndentedCode(root, stash);

  const lookups = lookupsFor(ctx);
  let processor: InlineProcessor | undefined;
  const inlineImages: string[] = [];
  const patterns = buildPatterns({ lookups, stash, mentions, unescape: (t) => processor!.unescape(t), uploads: ctx.uploadPreviews, inlineImages });
  processor = new InlineProcessor(patterns);
  processor.run(root);
  prettify(root);
  unescapeTree(root);
  const links = processLinks(root, lookups.realmUrl, ctx.inlineImagePreview ?? true, ctx.uploadPreviews);
  if (inlineImages.length > 0) {
    links.hasImage = true;
    links.attachmentPathIds = [...new Set([...links.attachmentPathIds, ...inlineImages])];
  }

  let html = (root.text ? escapeText(root.text) : '') + root.children.map(serialize).join('');
  html = restoreRawHtml(html.trim(), stash).trim();
  return result(html, content, ctx, mentions, links);
}

const SHEBANG_HEADER = /^(?:::+|(#!))((?:\/[\p{L}\p{N}_]+)*[/ ])?([\p{L}\p{N}_#.+-]*)/u;

/** Indented code blocks, highlighted like Python-Markdown's codehilite extension does. */
function highlightIndentedCode(root: Element, stash: HtmlStash): void {
  for (const pre of [...root.iter('pre')]) {
    const code = pre.children[0];
    if (pre.children.length !== 1 || code?.tag !== 'code' || code.text === null) continue;
    const text = code.text.replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
    let lines = text.replace(/^\n+|\n+$/g, '').split('\n');
    let lang: string | undefined;
    // A first line like "#!python" or ":::python" picks the language and is removed.
    const m = SHEBANG_HEADER.exec(lines[0]!);
    if (m) {
      lang = m[3]!.toLowerCase();
      if (!m[2]) lines = lines.slice(1);
    }
    const placeholder = stash.store(highlightCode(lines.join('\n').replace(/^\n+|\n+$/g, ''), lang));
    pre.tag = 'p';
    pre.children = [];
    pre.setText(placeholder);
  }
}

function prettify(root: Element): void {
  const walk = (el: Element): void => {
    if (BLOCK_LEVEL.has(el.tag) && el.tag !== 'code' && el.tag !== 'pre') {
      if ((!el.text || !el.text.trim()) && el.children.length > 0 && BLOCK_LEVEL.has(el.children[0]!.tag)) {
        el.setText('\n');
      }
      for (const c of el.children) if (BLOCK_LEVEL.has(c.tag)) walk(c);
    }
    if (!el.tail || !el.tail.trim()) el.setTail('\n');
  };
  walk(root);
  for (const br of root.iter('br')) {
    if (!br.tail || !br.tail.trim()) br.setTail('\n');
    else br.setTail('\n' + br.tail);
  }
  for (const pre of root.iter('pre')) {
    const code = pre.children[0];
    if (code?.tag === 'code' && code.children.length === 0 && code.text !== null) {
      code.setText(code.text.trimEnd() + '\n', true);
    }
  }
}

const ESCAPED_CHAR = new RegExp(`${STX}(\\d+)${ETX}`, 'g');

function unescapeTree(root: Element): void {
  const un = (s: string): string => (s.includes(STX) ? s.replace(ESCAPED_CHAR, (_, n: string) => String.fromCodePoint(Number(n))) : s);
  for (const el of root.iter()) {
    if (el.text && el.tag !== 'code') el.text = un(el.text);
    if (el.tail) el.tail = un(el.tail);
    if (el.hasAttributes) for (const [k, v] of el.attrib) el.attrib.set(k, un(v));
  }
}

const STASH_RE = new RegExp(`<p>${STX}wzxhzdk:([0-9]+)${ETX}</p>|${STX}wzxhzdk:([0-9]+)${ETX}`, 'g');

function restoreRawHtml(html: string, stash: HtmlStash): string {
  if (stash.blocks.length === 0) return html;
  return html.replace(STASH_RE, (whole, wrappedKey: string | undefined, key: string | undefined) => {
    const raw = stash.blocks[Number(wrappedKey ?? key)];
    if (raw === undefined) return whole;
    // A block-level fragment replaces its placeholder paragraph; inline HTML stays inside it.
    return wrappedKey === undefined || isBlockLevelHtml(raw) ? raw : `<p>${raw}</p>`;
  });
}

function isBlockLevelHtml(html: string): boolean {
  const m = /^<\/?([^ >]+)/.exec(html);
  if (!m) return false;
  const tag = m[1]!;
  return '!?@%'.includes(tag[0]!) || BLOCK_LEVEL.has(tag.toLowerCase().replace(/\/+$/, ''));
}

/**
 * What the content might refer to, so callers can load just those users, groups and channels
 * before rendering. Over-approximates (ignores code spans and quotes).
 */
export function mentionCandidates(content: string): {
  userNames: string[];
  userIds: number[];
  groupNames: string[];
  channelNames: string[];
  wildcards: { stream: boolean; topic: boolean };
} {
  const userNames = new Set<string>();
  const userIds = new Set<number>();
  const wildcards = { stream: false, topic: false };
  for (const m of content.matchAll(new RegExp(MENTIONS_SOURCE, 'gu'))) {
    const text = m.groups!.match!;
    if (STREAM_WILDCARDS.has(text)) {
      wildcards.stream = true;
      continue;
    }
    if (TOPIC_WILDCARDS.has(text)) {
      wildcards.topic = true;
      continue;
    }
    const idSyntax = MENTION_ID_RE.exec(text);
    if (idSyntax) userIds.add(Number(idSyntax.groups!.user_id));
    else userNames.add(text);
  }
  const groupNames = new Set([...content.matchAll(new RegExp(GROUP_MENTIONS_SOURCE, 'gu'))].map((m) => m.groups!.match!));
  const channelNames = new Set([
    ...[...content.matchAll(new RegExp(CHANNEL_SOURCE, 'gu'))].map((m) => m.groups!.stream_name!),
    ...[...content.matchAll(new RegExp(CHANNEL_TOPIC_SOURCE, 'gu'))].map((m) => m.groups!.stream_name!),
  ]);
  return { userNames: [...userNames], userIds: [...userIds], groupNames: [...groupNames], channelNames: [...channelNames], wildcards };
}

const ALERT_BEFORE = new Set([' ', '\n', '(', '"', '.', ',', "'", ';', '[', '*', '`', '>']);
// Zulip's list has '",' (two characters) where '"' was meant, so a double quote after a word
// does not count as a boundary.
const ALERT_AFTER = new Set([' ', '\n', ')', '?', ':', '.', ',', "'", ';', ']', '!', '*', '`']);

function alertWordUsers(content: string, alertWords: ReadonlyMap<number, readonly string[]>): number[] {
  const text = content.toLowerCase();
  const found = new Set<number>();
  const seen = new Map<string, boolean>();
  const occurs = (word: string): boolean => {
    let i = text.indexOf(word);
    while (i >= 0) {
      const end = i + word.length;
      // As in Zulip, a match starting at index 0 or 1 always has a valid start.
      if ((i <= 1 || ALERT_BEFORE.has(text[i - 1]!)) && (end >= text.length || ALERT_AFTER.has(text[end]!))) return true;
      i = text.indexOf(word, i + 1);
    }
    return false;
  };
  for (const [userId, words] of alertWords) {
    for (const w of words) {
      const word = w.toLowerCase();
      if (!word) continue;
      let hit = seen.get(word);
      if (hit === undefined) {
        hit = occurs(word);
        seen.set(word, hit);
      }
      if (hit) {
        found.add(userId);
        break;
      }
    }
  }
  return [...found].sort((a, b) => a - b);
}
