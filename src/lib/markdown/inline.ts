import { Element, isBlank } from './etree.js';
import { MAX_INLINE_NESTING } from './limits.js';
import { ETX, STX } from './preprocess.js';

// Python-Markdown's inline processor. Each text run is matched against the patterns in
// priority order; a match is replaced by a placeholder for the element (or text) it produced,
// and the pattern is retried from the start of the run, so later matches can enclose earlier
// ones. Placeholders are expanded into the tree at the end.

export type InlineNode = Element | string;

/**
 * Where the search resumes after a replacement. Python-Markdown always restarts at the start
 * of the text, which is quadratic in the number of matches. The cheaper policies give the same
 * result for the patterns that declare them:
 * - "after": matches cannot span a placeholder or start inside one, so continue after it;
 * - "batch": as "after", and matches do not depend on the character before them either, so all
 *   matches are replaced in one pass over the text;
 * - "line": matches never cross a newline, so restart at the start of the replacement's line.
 * "restart" patterns restart at the start for the first RESTART_LIMIT replacements in a text run,
 * then continue after the placeholder, which only differs from Zulip on pathological input.
 */
export type ResumePolicy = 'after' | 'batch' | 'line' | 'restart';

/** A "new style" pattern: may reject a match (null) and choose the replaced span. */
export interface SpanPattern {
  kind: 'span';
  re: RegExp;
  resume: ResumePolicy;
  /** A cheap necessary condition for any match in the text (skips the regex when false). */
  mayMatch?: (data: string) => boolean;
  handle(m: RegExpExecArray, data: string): { node: InlineNode | null; start: number; end: number } | null;
}

/** An "old style" pattern: the whole match is replaced; null stops the pattern for this text. */
export interface MatchPattern {
  kind: 'match';
  re: RegExp;
  resume: ResumePolicy;
  mayMatch?: (data: string) => boolean;
  handle(m: RegExpExecArray): InlineNode | null;
}

export type InlinePattern = SpanPattern | MatchPattern;

const RESTART_LIMIT = 32;

const PLACEHOLDER_PREFIX = `${STX}klzzwxh:`;
const PLACEHOLDER_RE = new RegExp(`${STX}klzzwxh:([0-9]+)${ETX}`, 'g');

function placeholder(id: number): string {
  return `${PLACEHOLDER_PREFIX}${String(id).padStart(4, '0')}${ETX}`;
}

export class InlineProcessor {
  private stashed: InlineNode[] = [];
  private depths: number[] = [];

  constructor(private readonly patterns: readonly InlinePattern[]) {
    for (const p of patterns) {
      if (!p.re.global) throw new Error('inline patterns need the g flag');
    }
  }

  run(root: Element): void {
    this.stashed = [];
    this.depths = [];
    const stack: Element[] = [root];
    while (stack.length > 0) {
      const curr = stack.pop()!;
      const insertQueue: [Element, Element[]][] = [];
      // Children inserted during the loop (from tails) are visited too, as in Python.
      for (let i = 0; i < curr.children.length; i++) {
        const child = curr.children[i]!;
        if (child.text && !child.textAtomic) {
          const text = child.text;
          child.setText(null);
          const lst = this.processPlaceholders(this.handleInline(text, false, 0), false, child, true);
          stack.push(...lst);
          insertQueue.push([child, lst]);
        }
        if (child.tail) {
          const atomic = child.tailAtomic;
          const tail = this.handleInline(child.tail, atomic, 0);
          const dummy = new Element('d');
          child.setTail(null);
          const tailResult = this.processPlaceholders(tail, atomic, dummy, false);
          if (dummy.tail) child.setTail(dummy.tail, dummy.tailAtomic);
          curr.children.splice(i + 1, 0, ...tailResult);
        }
        if (child.children.length > 0) stack.push(child);
      }
      for (const [el, lst] of insertQueue) {
        lst.forEach((n, i) => el.insert(i, n));
      }
    }
  }

  /** Replace placeholders with the text they stand for (Python-Markdown's Pattern.unescape). */
  unescape(text: string): string {
    if (!text.includes(PLACEHOLDER_PREFIX)) return text;
    return text.replace(PLACEHOLDER_RE, (whole, id: string) => {
      const node = this.stashed[Number(id)];
      if (node === undefined) return whole;
      return typeof node === 'string' ? node : node.textContent();
    });
  }

  private handleInline(data: string, atomic: boolean, patternIndex: number): string {
    if (atomic) return data;
    let startIndex = 0;
    let replacements = 0;
    while (patternIndex < this.patterns.length) {
      const pattern = this.patterns[patternIndex]!;
      const [next, matched, index, replaced] = this.applyPattern(pattern, data, patternIndex, startIndex, replacements);
      data = next;
      startIndex = index;
      if (replaced) replacements++;
      if (!matched) {
        patternIndex++;
        replacements = 0;
      }
    }
    return data;
  }

  /** Returns [data, matched, where to search next, whether something was replaced]. */
  private applyPattern(
    pattern: InlinePattern,
    data: string,
    patternIndex: number,
    startIndex: number,
    replacements: number,
  ): [string, boolean, number, boolean] {
    if (pattern.mayMatch && !pattern.mayMatch(data)) return [data, false, 0, false];
    if (pattern.resume === 'batch') return this.applyAll(pattern, data, patternIndex, startIndex);
    const re = pattern.re;
    re.lastIndex = startIndex;
    for (;;) {
      const m = re.exec(data);
      if (!m) return [data, false, 0, false];
      if (m[0].length === 0) re.lastIndex++;
      let node: InlineNode;
      let start: number;
      let end: number;
      if (pattern.kind === 'span') {
        const r = pattern.handle(m, data);
        if (r === null) continue;
        if (r.node === null) return [data, true, r.end, false];
        node = r.node;
        start = r.start;
        end = r.end;
      } else {
        const n = pattern.handle(m);
        // A rejected old-style match ends the pattern for this text, as in Python-Markdown.
        if (n === null) return [data, true, data.length, false];
        node = n;
        start = m.index;
        end = m.index + m[0].length;
      }
      const id = this.stash(node, patternIndex);
      if (id === null) {
        if (pattern.kind === 'span') continue;
        return [data, true, data.length, false];
      }
      const ph = placeholder(id);
      const next = data.slice(0, start) + ph + data.slice(end);
      const after = start + ph.length;
      let resume: number;
      if (pattern.resume === 'after' || replacements >= RESTART_LIMIT) resume = after;
      else if (pattern.resume === 'line') resume = start === 0 ? 0 : next.lastIndexOf('\n', start - 1) + 1;
      else resume = 0;
      return [next, true, resume, true];
    }
  }

  /** Replace every match in one left-to-right pass ("batch" patterns). */
  private applyAll(
    pattern: InlinePattern,
    data: string,
    patternIndex: number,
    startIndex: number,
  ): [string, boolean, number, boolean] {
    const re = pattern.re;
    const pieces: string[] = [];
    let last = 0;
    re.lastIndex = startIndex;
    for (;;) {
      const m = re.exec(data);
      if (!m) break;
      if (m[0].length === 0) re.lastIndex++;
      let node: InlineNode;
      let start = m.index;
      let end = m.index + m[0].length;
      if (pattern.kind === 'span') {
        const r = pattern.handle(m, data);
        if (r === null) continue;
        if (r.node === null) {
          re.lastIndex = Math.max(re.lastIndex, r.end);
          continue;
        }
        node = r.node;
        start = r.start;
        end = r.end;
      } else {
        const n = pattern.handle(m);
        if (n === null) break;
        node = n;
      }
      const id = this.stash(node, patternIndex);
      if (id === null) {
        if (pattern.kind === 'span') continue;
        break;
      }
      pieces.push(data.slice(last, start), placeholder(id));
      last = end;
      re.lastIndex = Math.max(re.lastIndex, end);
    }
    if (pieces.length === 0) return [data, false, 0, false];
    pieces.push(data.slice(last));
    return [pieces.join(''), false, 0, true];
  }

  /**
   * Process a new node's own text with the later patterns, then stash it. Returns null (and
   * stashes nothing) when the node would nest deeper than MAX_INLINE_NESTING.
   */
  private stash(node: InlineNode, patternIndex: number): number | null {
    let depth = 0;
    if (typeof node !== 'string') {
      if (!node.textAtomic) {
        for (const child of [node, ...node.children]) {
          if (child.text) child.setText(this.handleInline(child.text, child.textAtomic, patternIndex + 1), child.textAtomic);
          if (child.tail) child.setTail(this.handleInline(child.tail, child.tailAtomic, patternIndex), child.tailAtomic);
        }
      }
      depth = 1 + this.nestedDepth(node);
      if (depth > MAX_INLINE_NESTING) return null;
    }
    this.stashed.push(node);
    this.depths.push(depth);
    return this.stashed.length - 1;
  }

  private nestedDepth(node: Element): number {
    let max = 0;
    const scan = (s: string | null): void => {
      if (!s || !s.includes(PLACEHOLDER_PREFIX)) return;
      for (const m of s.matchAll(PLACEHOLDER_RE)) max = Math.max(max, this.depths[Number(m[1])] ?? 0);
    };
    for (const child of [node, ...node.children]) {
      scan(child.text);
      scan(child.tail);
    }
    return max;
  }

  private processPlaceholders(data: string | null, atomic: boolean, parent: Element, isText: boolean): Element[] {
    const result: Element[] = [];
    const linkText = (text: string, textAtomic: boolean): void => {
      if (!text) return;
      const last = result[result.length - 1];
      if (last) {
        if (last.tail) last.setTail(last.tail + text);
        else last.setTail(text, textAtomic);
      } else if (!isText) {
        if (parent.tail) parent.setTail(parent.tail + text);
        else parent.setTail(text, textAtomic);
      } else if (parent.text) {
        parent.setText(parent.text + text);
      } else {
        parent.setText(text, textAtomic);
      }
    };
    let start = 0;
    while (data) {
      const index = data.indexOf(PLACEHOLDER_PREFIX, start);
      if (index === -1) {
        linkText(data.slice(start), atomic);
        break;
      }
      PLACEHOLDER_RE.lastIndex = index;
      const ph = PLACEHOLDER_RE.exec(data);
      const id = ph ? Number(ph[1]) : -1;
      const phEnd = ph ? ph.index + ph[0].length : index + 1;
      const node = ph ? this.stashed[id] : undefined;
      if (node === undefined) {
        const end = index + PLACEHOLDER_PREFIX.length;
        linkText(data.slice(start, end), false);
        start = end;
        continue;
      }
      if (index > 0) linkText(data.slice(start, index), false);
      if (typeof node === 'string') {
        linkText(node, false);
        start = phEnd;
        continue;
      }
      for (const child of [node, ...node.children]) {
        if (child.tail && !isBlank(child.tail)) this.processElementText(node, child, false);
        if (child.text && !isBlank(child.text)) this.processElementText(child, child, true);
      }
      start = phEnd;
      result.push(node);
    }
    return result;
  }

  private processElementText(node: Element, subnode: Element, isText: boolean): void {
    let text: string | null;
    let atomic: boolean;
    if (isText) {
      text = subnode.text;
      atomic = subnode.textAtomic;
      subnode.setText(null);
    } else {
      text = subnode.tail;
      atomic = subnode.tailAtomic;
      subnode.setTail(null);
    }
    const childResult = this.processPlaceholders(text, atomic, subnode, isText);
    const pos = !isText && node !== subnode ? node.children.indexOf(subnode) + 1 : 0;
    node.children.splice(pos, 0, ...childResult);
  }
}
