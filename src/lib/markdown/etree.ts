// A minimal ElementTree: the renderer reproduces Python-Markdown's processing model (Zulip's
// Markdown engine), whose behaviour depends on ElementTree's text/tail representation.
//
// "Atomic" text is text that inline patterns must not process again (Python-Markdown's
// AtomicString). As in Python, only direct assignment keeps the flag; concatenation drops it.

export class Element {
  tag: string;
  // Created on first use: most elements (paragraphs, emphasis, line breaks) have no attributes.
  private attributes: Map<string, string> | undefined;
  text: string | null = null;
  textAtomic = false;
  tail: string | null = null;
  tailAtomic = false;
  children: Element[] = [];

  constructor(tag: string, attrib?: Record<string, string>) {
    this.tag = tag;
    if (attrib) this.attributes = new Map(Object.entries(attrib));
  }

  get attrib(): Map<string, string> {
    this.attributes ??= new Map();
    return this.attributes;
  }

  get hasAttributes(): boolean {
    return this.attributes !== undefined && this.attributes.size > 0;
  }

  get(name: string): string | undefined {
    return this.attributes?.get(name);
  }

  set(name: string, value: string): void {
    this.attrib.set(name, value);
  }

  setText(text: string | null, atomic = false): void {
    this.text = text;
    this.textAtomic = atomic && text !== null;
  }

  setTail(tail: string | null, atomic = false): void {
    this.tail = tail;
    this.tailAtomic = atomic && tail !== null;
  }

  append(child: Element): Element {
    this.children.push(child);
    return child;
  }

  insert(index: number, child: Element): void {
    this.children.splice(Math.max(0, Math.min(index, this.children.length)), 0, child);
  }

  remove(child: Element): void {
    const i = this.children.indexOf(child);
    if (i >= 0) this.children.splice(i, 1);
  }

  sub(tag: string, attrib?: Record<string, string>): Element {
    return this.append(new Element(tag, attrib));
  }

  lastChild(): Element | undefined {
    return this.children[this.children.length - 1];
  }

  /** Depth-first, pre-order walk of this element and its descendants (ElementTree's iter). */
  *iter(tag?: string): Generator<Element> {
    const stack: Element[] = [this];
    while (stack.length > 0) {
      const el = stack.pop()!;
      if (tag === undefined || el.tag === tag) yield el;
      for (let i = el.children.length - 1; i >= 0; i--) stack.push(el.children[i]!);
    }
  }

  /** All text content, in document order (ElementTree's itertext). */
  textContent(): string {
    let out = '';
    const walk = (el: Element): void => {
      if (el.text) out += el.text;
      for (const c of el.children) {
        walk(c);
        if (c.tail) out += c.tail;
      }
    };
    walk(this);
    return out;
  }
}

/** Python's str.strip() emptiness test (whitespace-only or empty). */
export function isBlank(s: string | null): boolean {
  return s === null || s.trim() === '';
}
