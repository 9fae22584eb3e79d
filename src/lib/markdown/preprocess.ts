import { canonicalLanguageName, highlightCode } from './highlight.js';
import { MAX_BLOCK_NESTING } from './limits.js';
import { escapeHtml } from './serialize.js';
import { renderTex } from './tex.js';

// Line preprocessors, in Zulip's order: hanging lists, whitespace normalization, fenced blocks.

export const STX = '\u0002';
export const ETX = '\u0003';

/** Raw HTML kept out of the Markdown pipeline and restored after serialization. */
export class HtmlStash {
  readonly blocks: string[] = [];

  store(html: string): string {
    this.blocks.push(html);
    return `${STX}wzxhzdk:${this.blocks.length - 1}${ETX}`;
  }
}

// ~~~ or ``` fences, an optional language (".py" and "{python}" forms too) and a header (spoilers).
export const FENCE_RE =
  /^(?<fence>~{3,}|`{3,})[ ]*(?:\{?\.?(?<lang>[a-zA-Z0-9_+,\-./#]+)[ ]*(?<header>[^ ~`][^~`]*)?\}?)?$/;

const LIST_ITEM_RE = /^[ ]*([*+-]|\d\.)[ ]+(.*)/;

/**
 * Insert a blank line between a paragraph and a list that follows it without one (and between
 * lists of different kinds), outside code fences, so such "hanging" lists still parse as lists.
 */
export function separateHangingLists(lines: string[]): string[] {
  const out = lines.slice();
  let inserts = 0;
  const openFences: { fence: string; isCode: boolean }[] = [];
  let inCodeFence = false;
  for (let i = 0; i < lines.length - 1; i++) {
    const line = lines[i]!;
    const m = FENCE_RE.exec(line);
    if (m) {
      const fence = m.groups!.fence!;
      const lang = m.groups!.lang;
      const last = openFences[openFences.length - 1];
      if (!lang && last !== undefined && last.fence === fence) openFences.pop();
      else openFences.push({ fence, isCode: lang !== 'quote' && lang !== 'quoted' });
      inCodeFence = openFences.some((f) => f.isCode);
    }
    const li1 = LIST_ITEM_RE.exec(line);
    const li2 = LIST_ITEM_RE.exec(lines[i + 1]!);
    if (
      !inCodeFence &&
      line &&
      ((li2 && !li1) || (li1 && li2 && (li1[1]!.length === 1) !== (li2[1]!.length === 1)))
    ) {
      out.splice(i + inserts + 1, 0, '');
      inserts++;
    }
  }
  return out;
}

function expandTabs(line: string): string {
  if (!line.includes('\t')) return line;
  let out = '';
  for (const ch of line) {
    if (ch === '\t') out += ' '.repeat(4 - (out.length % 4));
    else out += ch;
  }
  return out;
}

/** Python-Markdown's NormalizeWhitespace: line endings, tabs, whitespace-only lines. */
export function normalizeWhitespace(lines: string[]): string[] {
  let source = lines.join('\n').replaceAll(STX, '').replaceAll(ETX, '');
  source = source.replaceAll('\r\n', '\n').replaceAll('\r', '\n') + '\n\n';
  source = source.split('\n').map(expandTabs).join('\n');
  source = source.replace(/(?<=\n) +\n/g, '\n');
  return source.split('\n');
}

function rstrip(s: string): string {
  return s.trimEnd();
}

interface FenceContext {
  stash: HtmlStash;
  defaultLanguage: string | undefined;
}

abstract class Handler {
  lines: string[] = [];

  constructor(
    protected readonly proc: FencedBlocks,
    protected readonly output: string[],
    protected readonly fence: string | undefined,
    private readonly processContents: boolean,
  ) {}

  handleLine(line: string): void {
    if (rstrip(line) === this.fence) this.done();
    else this.lines.push(rstrip(line));
  }

  done(): void {
    if (this.lines.length > 0) {
      let text = this.formatText(this.lines.join('\n'));
      // Code stays opaque; quote and spoiler contents are Markdown to be parsed further.
      if (!this.processContents) text = this.proc.stash.store(text);
      this.output.push('', ...text.split('\n'), '');
    }
    this.proc.pop();
  }

  protected abstract formatText(text: string): string;
}

class OuterHandler extends Handler {
  constructor(proc: FencedBlocks, output: string[]) {
    super(proc, output, undefined, false);
  }

  override handleLine(line: string): void {
    this.proc.checkForNewFence(this.output, line, this.proc.defaultLanguage);
  }

  protected formatText(text: string): string {
    return text;
  }
}

class CodeHandler extends Handler {
  constructor(proc: FencedBlocks, output: string[], fence: string, private readonly lang: string | undefined) {
    super(proc, output, fence, false);
  }

  protected formatText(text: string): string {
    return formatCode(this.lang, text);
  }
}

class QuoteHandler extends Handler {
  constructor(proc: FencedBlocks, output: string[], fence: string, private readonly defaultLanguage: string | undefined) {
    super(proc, output, fence, true);
  }

  override handleLine(line: string): void {
    if (rstrip(line) === this.fence) this.done();
    else this.proc.checkForNewFence(this.lines, line, this.defaultLanguage);
  }

  protected formatText(text: string): string {
    return text
      .split('\n')
      .map((l) => '> ' + l)
      .join('\n');
  }
}

class SpoilerHandler extends Handler {
  constructor(proc: FencedBlocks, output: string[], fence: string, private readonly header: string | undefined) {
    super(proc, output, fence, true);
  }

  override handleLine(line: string): void {
    if (rstrip(line) === this.fence) this.done();
    else this.proc.checkForNewFence(this.lines, line, undefined);
  }

  protected formatText(text: string): string {
    const stash = this.proc.stash;
    const parts = [stash.store('<div class="spoiler-block"><div class="spoiler-header">')];
    if (this.header !== undefined) parts.push(this.header);
    parts.push(stash.store('</div><div class="spoiler-content" aria-hidden="true">'), text, stash.store('</div></div>'));
    return parts.join('\n\n');
  }
}

class TexHandler extends Handler {
  constructor(proc: FencedBlocks, output: string[], fence: string) {
    super(proc, output, fence, false);
  }

  protected formatText(text: string): string {
    return text
      .split('\n\n')
      .map((p) => renderTex(p, true) ?? `<span class="tex-error">${escapeHtml(p)}</span>`)
      .join('\n\n');
  }
}

const SHEBANG_RE = /^(?:::+|(#!))((?:\/[\p{L}\p{N}_]+)*[/ ])?([\p{L}\p{N}_#.+-]*)/u;

/**
 * The HTML of a fenced code block. Without a language, a "#!lang" or ":::lang" first line
 * selects the highlighter (and stays in the code), as in Zulip.
 */
export function formatCode(lang: string | undefined, text: string): string {
  let lexerLang = lang;
  if (!lang) {
    const m = SHEBANG_RE.exec(text.replace(/^\n+/, '').split('\n', 1)[0]!);
    if (m) lexerLang = m[3]!.toLowerCase();
  }
  let html = highlightCode(text, lexerLang);
  if (lang) {
    // Zulip adds the attribute by re-serializing with lxml, which leaves quotes unescaped.
    html = html.replaceAll('&quot;', '"').replaceAll('&#39;', "'");
    const name = canonicalLanguageName(lang) ?? lang;
    html = html.replace('<div class="codehilite">', `<div class="codehilite" data-code-language="${escapeHtml(name)}">`);
  }
  return html;
}

/** Zulip's fenced block preprocessor: code, math, quote and spoiler fences, nestable. */
export class FencedBlocks implements FenceContext {
  readonly stash: HtmlStash;
  readonly defaultLanguage: string | undefined;
  private handlers: Handler[] = [];

  constructor(ctx: FenceContext) {
    this.stash = ctx.stash;
    this.defaultLanguage = ctx.defaultLanguage;
  }

  pop(): void {
    this.handlers.pop();
  }

  checkForNewFence(output: string[], line: string, defaultLanguage: string | undefined): void {
    const m = this.handlers.length <= MAX_BLOCK_NESTING ? FENCE_RE.exec(line) : null;
    if (!m) {
      output.push(line);
      return;
    }
    const fence = m.groups!.fence!;
    let lang = m.groups!.lang || defaultLanguage;
    const header = m.groups!.header;
    lang = lang?.toLowerCase();
    if (lang === 'quote' || lang === 'quoted') this.handlers.push(new QuoteHandler(this, output, fence, defaultLanguage));
    else if (lang === 'math') this.handlers.push(new TexHandler(this, output, fence));
    else if (lang === 'spoiler') this.handlers.push(new SpoilerHandler(this, output, fence, header));
    else this.handlers.push(new CodeHandler(this, output, fence, lang));
  }

  run(lines: string[]): string[] {
    const output: string[] = [];
    this.handlers = [new OuterHandler(this, output)];
    for (const line of lines) this.handlers[this.handlers.length - 1]!.handleLine(line);
    while (this.handlers.length > 0) this.handlers[this.handlers.length - 1]!.done();
    if (output.length > 2 && output[output.length - 2] !== '') output.push('');
    return output;
  }
}
