import { Element } from './etree.js';
import { MAX_BLOCK_NESTING } from './limits.js';
import { GROUP_MENTIONS_SOURCE, MENTIONS_SOURCE } from './syntax.js';

// The block parser: Python-Markdown's BlockParser with the processors Zulip enables, in
// Zulip's priority order. The document is split into blocks at blank lines; each processor
// tests the first remaining block and consumes it (possibly pushing a remainder back).
// Lists use a 2-space indent ("sane lists": no mixing of ordered and bulleted items),
// headings need a space after the hashes, and quotes silence the mentions inside them.

interface BlockProcessor {
  test(parent: Element, block: string): boolean;
  /** Returns false to let the next processor try the block. */
  run(parent: Element, blocks: string[]): boolean | void;
}

function codeEscape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

const rstrip = (s: string): string => s.trimEnd();
const lstrip = (s: string): string => s.trimStart();

export class BlockParser {
  private readonly state: string[] = [];
  private depth = 0;
  private readonly processors: BlockProcessor[];

  constructor() {
    this.processors = [
      new EmptyBlock(),
      new ListIndent(this),
      new CodeBlock(),
      new HashHeader(this),
      new Table(),
      new HorizontalRule(this),
      new ListProcessor(this, 'ol'),
      new ListProcessor(this, 'ul'),
      new BlockQuote(this),
      new Paragraph(this),
    ];
  }

  parseDocument(lines: string[]): Element {
    const root = new Element('div');
    this.parseChunk(root, lines.join('\n'));
    return root;
  }

  parseChunk(parent: Element, text: string): void {
    this.parseBlocks(parent, text.split('\n\n'));
  }

  parseBlocks(parent: Element, blocks: string[]): void {
    this.depth++;
    try {
      while (blocks.length > 0) {
        for (const p of this.processors) {
          if (p.test(parent, blocks[0]!) && p.run(parent, blocks) !== false) break;
        }
      }
    } finally {
      this.depth--;
    }
  }

  /** Whether another level of nested block structure may be opened. */
  canNest(): boolean {
    return this.depth < MAX_BLOCK_NESTING;
  }

  setState(s: string): void {
    this.state.push(s);
  }

  resetState(): void {
    this.state.pop();
  }

  isState(s: string): boolean {
    return this.state[this.state.length - 1] === s;
  }
}

class EmptyBlock implements BlockProcessor {
  test(_parent: Element, block: string): boolean {
    return !block || block.startsWith('\n');
  }

  run(parent: Element, blocks: string[]): void {
    const block = blocks.shift()!;
    let filler = '\n\n';
    if (block) {
      filler = '\n';
      const rest = block.slice(1);
      if (rest) blocks.unshift(rest);
    }
    const sibling = parent.lastChild();
    if (sibling?.tag === 'pre' && sibling.children[0]?.tag === 'code') {
      const code = sibling.children[0];
      code.setText((code.text ?? '') + filler, true);
    }
  }
}

const ITEM_TYPES = new Set(['li']);
const LIST_TYPES = new Set(['ul', 'ol']);
const LIST_INDENT = 2;

class ListIndent implements BlockProcessor {
  private static readonly INDENT_RE = /^((?: {2})+)/;

  constructor(private readonly parser: BlockParser) {}

  test(parent: Element, block: string): boolean {
    if (!block.startsWith('  ') || this.parser.isState('detabbed') || !this.parser.canNest()) return false;
    const last = parent.lastChild();
    return ITEM_TYPES.has(parent.tag) || (last !== undefined && LIST_TYPES.has(last.tag));
  }

  run(parent: Element, blocks: string[]): void {
    let block = blocks.shift()!;
    const [level, sibling] = this.getLevel(parent, block);
    block = looseDetab(block, level);
    this.parser.setState('detabbed');
    if (ITEM_TYPES.has(parent.tag)) {
      const last = parent.lastChild();
      if (last && LIST_TYPES.has(last.tag)) this.parser.parseBlocks(last, [block]);
      else this.parser.parseBlocks(parent, [block]);
    } else if (ITEM_TYPES.has(sibling.tag)) {
      this.parser.parseBlocks(sibling, [block]);
    } else if (sibling.lastChild() && ITEM_TYPES.has(sibling.lastChild()!.tag)) {
      const li = sibling.lastChild()!;
      if (li.text) {
        // The item's text becomes a paragraph, placed before any nested list.
        const p = new Element('p');
        p.text = li.text;
        li.text = '';
        li.insert(0, p);
      }
      this.parser.parseChunk(li, block);
    } else {
      this.parser.parseBlocks(sibling.sub('li'), [block]);
    }
    this.parser.resetState();
  }

  private getLevel(parent: Element, block: string): [number, Element] {
    const m = ListIndent.INDENT_RE.exec(block);
    const indentLevel = m ? m[1]!.length / LIST_INDENT : 0;
    let level = this.parser.isState('list') ? 1 : 0;
    while (indentLevel > level) {
      const child = parent.lastChild();
      if (child && (LIST_TYPES.has(child.tag) || ITEM_TYPES.has(child.tag))) {
        if (LIST_TYPES.has(child.tag)) level++;
        parent = child;
      } else {
        break;
      }
    }
    return [level, parent];
  }
}

function looseDetab(text: string, level: number): string {
  const prefix = ' '.repeat(LIST_INDENT * level);
  return text
    .split('\n')
    .map((l) => (l.startsWith(prefix) ? l.slice(prefix.length) : l))
    .join('\n');
}

class CodeBlock implements BlockProcessor {
  test(_parent: Element, block: string): boolean {
    return block.startsWith('    ');
  }

  run(parent: Element, blocks: string[]): void {
    const sibling = parent.lastChild();
    let block = blocks.shift()!;
    let rest: string;
    [block, rest] = detab(block);
    if (sibling?.tag === 'pre' && sibling.children[0]?.tag === 'code') {
      // Blank lines do not end a code block: join with the previous one.
      const code = sibling.children[0];
      code.setText(`${code.text ?? ''}\n${codeEscape(rstrip(block))}\n`, true);
    } else {
      const code = parent.sub('pre').sub('code');
      code.setText(codeEscape(rstrip(block)) + '\n', true);
    }
    if (rest) blocks.unshift(rest);
  }
}

function detab(text: string): [string, string] {
  const lines = text.split('\n');
  const kept: string[] = [];
  for (const line of lines) {
    if (line.startsWith('    ')) kept.push(line.slice(4));
    else if (!line.trim()) kept.push('');
    else break;
  }
  return [kept.join('\n'), lines.slice(kept.length).join('\n')];
}

interface HeaderMatch {
  start: number;
  end: number;
  level: number;
  text: string;
}

/**
 * Python-Markdown's hash header regex, `(?:^|\n)(#{1,6})\s((?:\\.|[^\\])*?)#*(?:\n|$)`
 * with Zulip's required space, evaluated by hand: the regex backtracks quadratically on long
 * runs of "#".
 */
export function findHashHeader(block: string): HeaderMatch | null {
  const n = block.length;
  for (let lineStart = 0; lineStart < n; ) {
    const m = /^#{1,6}\s/.exec(block.slice(lineStart, lineStart + 7));
    if (m) {
      const level = m[0].length - 1;
      const contentStart = lineStart + m[0].length;
      let i = contentStart;
      while (i <= n) {
        let j = i;
        while (j < n && block[j] === '#') j++;
        if (j === n || block[j] === '\n') {
          const start = lineStart === 0 ? 0 : lineStart - 1;
          return { start, end: j < n ? j + 1 : j, level, text: block.slice(contentStart, i) };
        }
        // Every position inside a run of "#" fails the same way; skip the run.
        if (j > i) {
          i = j;
          continue;
        }
        if (block[i] === '\\') {
          if (i + 1 >= n || block[i + 1] === '\n') break;
          i += 2;
        } else {
          i += 1;
        }
      }
    }
    const nl = block.indexOf('\n', lineStart);
    if (nl < 0) break;
    lineStart = nl + 1;
  }
  return null;
}

class HashHeader implements BlockProcessor {
  constructor(private readonly parser: BlockParser) {}

  test(_parent: Element, block: string): boolean {
    return block.includes('#') && findHashHeader(block) !== null;
  }

  run(parent: Element, blocks: string[]): void {
    const block = blocks.shift()!;
    const m = findHashHeader(block)!;
    const before = block.slice(0, m.start);
    const after = block.slice(m.end);
    if (before) this.parser.parseBlocks(parent, [before]);
    parent.sub(`h${m.level}`).text = m.text.trim();
    if (after) blocks.unshift(after);
  }
}

const PIPE_LEFT = 1;
const PIPE_RIGHT = 2;

class Table implements BlockProcessor {
  private static readonly CODE_PIPES = /(?:(\\\\)|(\\`+)|(`+)|(\\\|)|(\|))/g;
  private static readonly END_BORDER = /(?<!\\)(?:\\\\)*\|$/;
  private border = 0;
  private separator: string[] = [];

  test(_parent: Element, block: string): boolean {
    const rows = block.split('\n').map((r) => stripSpaces(r));
    if (rows.length <= 1) return false;
    const header = rows[0]!;
    this.border = 0;
    if (header.startsWith('|')) this.border |= PIPE_LEFT;
    if (Table.END_BORDER.test(header)) this.border |= PIPE_RIGHT;
    const cells = this.splitRow(header);
    const count = cells.length;
    let ok = count > 1;
    // Each row of a single-column table needs at least one pipe.
    if (!ok && count === 1 && this.border) {
      for (let i = 1; i < rows.length; i++) {
        ok = rows[i]!.startsWith('|') || Table.END_BORDER.test(rows[i]!);
        if (!ok) break;
      }
    }
    if (ok) {
      const sep = this.splitRow(rows[1]!);
      ok = sep.length === count && /^[|:\- ]*$/.test(sep.join(''));
      if (ok) this.separator = sep;
    }
    return ok;
  }

  run(parent: Element, blocks: string[]): void {
    const lines = blocks.shift()!.split('\n');
    const header = stripSpaces(lines[0]!);
    const rows = lines.length < 3 ? [] : lines.slice(2);
    const align = this.separator.map((c) => {
      c = stripSpaces(c);
      if (c.startsWith(':') && c.endsWith(':')) return 'center';
      if (c.startsWith(':')) return 'left';
      if (c.endsWith(':')) return 'right';
      return null;
    });
    const table = parent.sub('table');
    this.buildRow(header, table.sub('thead'), align);
    const tbody = table.sub('tbody');
    if (rows.length === 0) {
      const tr = tbody.sub('tr');
      for (let i = 0; i < align.length; i++) tr.sub('td');
    } else {
      for (const row of rows) this.buildRow(stripSpaces(row), tbody, align);
    }
  }

  private buildRow(row: string, parent: Element, align: (string | null)[]): void {
    const tr = parent.sub('tr');
    const tag = parent.tag === 'thead' ? 'th' : 'td';
    const cells = this.splitRow(row);
    align.forEach((a, i) => {
      const c = tr.sub(tag);
      c.text = stripSpaces(cells[i] ?? '');
      if (a) c.set('style', `text-align: ${a};`);
    });
  }

  private splitRow(row: string): string[] {
    if (this.border) {
      if (row.startsWith('|')) row = row.slice(1);
      row = row.replace(Table.END_BORDER, '');
    }
    return this.split(row);
  }

  /** Split at pipes that are not escaped and not inside a backtick code span. */
  private split(row: string): string[] {
    const ticks: number[] = [];
    const tickSpans: [number, number, number][] = [];
    const pipes: number[] = [];
    for (const m of row.matchAll(Table.CODE_PIPES)) {
      if (m[2]) {
        ticks.push(m[2].length - 1);
        tickSpans.push([m.index + 1 - 1, m.index + m[2].length - 1, 1]);
      } else if (m[3]) {
        ticks.push(m[3].length);
        tickSpans.push([m.index, m.index + m[3].length - 1, 0]);
      } else if (m[5]) {
        pipes.push(m.index);
      }
    }
    const regions: [number, number][] = [];
    let h = 0;
    while (h < ticks.length) {
      const want = ticks[h]! - tickSpans[h]![2];
      const e = want === 0 ? -1 : ticks.slice(h + 1).indexOf(want);
      if (e < 0) {
        h++;
        continue;
      }
      regions.push([tickSpans[h]![0], tickSpans[h + e + 1]![1]]);
      h += e + 2;
    }
    const cuts = pipes.filter((p) => {
      for (const [start, end] of regions) {
        if (p < start) return true;
        if (p <= end) return false;
      }
      return true;
    });
    const out: string[] = [];
    let start = 0;
    for (const p of cuts) {
      out.push(row.slice(start, p));
      start = p + 1;
    }
    out.push(row.slice(start));
    return out;
  }
}

function stripSpaces(s: string): string {
  return s.replace(/^ +| +$/g, '');
}

class HorizontalRule implements BlockProcessor {
  // The lookahead and back-reference emulate an atomic group, avoiding exponential backtracking.
  private static readonly RE =
    /^[ ]{0,3}(?=(?<rule>(?:-+[ ]{0,2}){3,}|(?:_+[ ]{0,2}){3,}|(?:\*+[ ]{0,2}){3,}))\k<rule>[ ]*$/m;
  private match: RegExpExecArray | null = null;

  constructor(private readonly parser: BlockParser) {}

  test(_parent: Element, block: string): boolean {
    const m = HorizontalRule.RE.exec(block);
    if (m && (m.index + m[0].length === block.length || block[m.index + m[0].length] === '\n')) {
      this.match = m;
      return true;
    }
    return false;
  }

  run(parent: Element, blocks: string[]): void {
    const block = blocks.shift()!;
    const m = this.match!;
    const pre = block.slice(0, m.index).replace(/\n+$/, '');
    if (pre) this.parser.parseBlocks(parent, [pre]);
    parent.sub('hr');
    const post = block.slice(m.index + m[0].length).replace(/^\n+/, '');
    if (post) blocks.unshift(post);
  }
}

class ListProcessor implements BlockProcessor {
  private readonly re: RegExp;
  private readonly childRe: RegExp;
  private static readonly INDENT_RE = /^[ ]{2,3}((\d+\.)|[*+-])[ ]+.*/;
  private startsWith = '1';

  constructor(
    private readonly parser: BlockParser,
    private readonly tag: 'ol' | 'ul',
  ) {
    this.re = tag === 'ol' ? /^[ ]?\d+\.[ ]+(.*)/ : /^[ ]?[*+-][ ]+(.*)/;
    this.childRe = tag === 'ol' ? /^[ ]?((\d+\.))[ ]+(.*)/ : /^[ ]?(([*+-]))[ ]+(.*)/;
  }

  test(_parent: Element, block: string): boolean {
    return this.parser.canNest() && this.re.test(block);
  }

  run(parent: Element, blocks: string[]): void {
    const items = this.getItems(blocks.shift()!);
    const sibling = parent.lastChild();
    let list: Element;
    if (sibling?.tag === this.tag && sibling.lastChild()) {
      // A list item after a blank line: the list becomes "loose" (items wrap paragraphs).
      list = sibling;
      const lastItem = list.lastChild()!;
      if (lastItem.text) {
        const p = new Element('p');
        p.text = lastItem.text;
        lastItem.text = '';
        lastItem.insert(0, p);
      }
      const lch = lastItem.lastChild();
      if (lch?.tail) {
        const p = lastItem.sub('p');
        p.text = lstrip(lch.tail);
        lch.tail = '';
      }
      const li = list.sub('li');
      this.parser.setState('looselist');
      this.parser.parseBlocks(li, [items.shift()!]);
      this.parser.resetState();
    } else if (LIST_TYPES.has(parent.tag)) {
      list = parent;
    } else {
      list = parent.sub(this.tag);
      if (this.tag === 'ol' && this.startsWith !== '1') list.set('start', this.startsWith);
    }
    this.parser.setState('list');
    for (const item of items) {
      const last = list.lastChild();
      if (item.startsWith('  ') && last) this.parser.parseBlocks(last, [item]);
      else this.parser.parseBlocks(list.sub('li'), [item]);
    }
    this.parser.resetState();
  }

  private getItems(block: string): string[] {
    const items: string[] = [];
    for (const line of block.split('\n')) {
      const m = this.childRe.exec(line);
      if (m) {
        if (items.length === 0 && this.tag === 'ol') this.startsWith = /\d+/.exec(m[1]!)![0];
        items.push(m[3]!);
      } else if (ListProcessor.INDENT_RE.test(line) && items.length > 0) {
        if (items[items.length - 1]!.startsWith('  ')) items[items.length - 1] += '\n' + line;
        else items.push(line);
      } else if (items.length > 0) {
        items[items.length - 1] += '\n' + line;
      } else {
        items.push(line);
      }
    }
    return items;
  }
}

class BlockQuote implements BlockProcessor {
  // A line starting with ">", unless only empty quote lines follow.
  private static readonly RE = /(^|\n)(?!(?:[ ]{0,3}>\s*(?:$|\n))*(?:$|\n))[ ]{0,3}>[ ]?(.*)/;
  private static readonly MENTIONS = new RegExp(MENTIONS_SOURCE, 'gu');
  private static readonly GROUP_MENTIONS = new RegExp(GROUP_MENTIONS_SOURCE, 'gu');

  constructor(private readonly parser: BlockParser) {}

  test(_parent: Element, block: string): boolean {
    return block.includes('>') && this.parser.canNest() && BlockQuote.RE.test(block);
  }

  run(parent: Element, blocks: string[]): void {
    let block = blocks.shift()!;
    const m = BlockQuote.RE.exec(block);
    if (m) {
      this.parser.parseBlocks(parent, [block.slice(0, m.index)]);
      block = block
        .slice(m.index)
        .split('\n')
        .map((l) => this.clean(l))
        .join('\n');
    }
    // Unlike original Markdown (and like CommonMark), a blank line ends the quote.
    const quote = parent.sub('blockquote');
    this.parser.setState('blockquote');
    this.parser.parseChunk(quote, block);
    this.parser.resetState();
  }

  private clean(line: string): string {
    // Mentions inside quotes do not notify anyone.
    line = line.replace(BlockQuote.MENTIONS, (...args) => `@_**${groupsOf(args).match}**`);
    line = line.replace(BlockQuote.GROUP_MENTIONS, (...args) => `@_*${groupsOf(args).match}*`);
    if (line.trim() === '>') return '';
    const m = BlockQuote.RE.exec(line);
    return m && m.index === 0 ? m[2]! : line;
  }
}

function groupsOf(replaceArgs: unknown[]): Record<string, string> {
  return replaceArgs[replaceArgs.length - 1] as Record<string, string>;
}

class Paragraph implements BlockProcessor {
  constructor(private readonly parser: BlockParser) {}

  test(): boolean {
    return true;
  }

  run(parent: Element, blocks: string[]): void {
    const block = blocks.shift()!;
    if (!block.trim()) return;
    if (this.parser.isState('list')) {
      // In a tight list, text continues the item (or the tail of its last child).
      const sibling = parent.lastChild();
      if (sibling) sibling.tail = sibling.tail ? `${sibling.tail}\n${block}` : `\n${block}`;
      else parent.text = parent.text ? `${parent.text}\n${block}` : lstrip(block);
    } else {
      parent.sub('p').text = lstrip(block);
    }
  }
}
