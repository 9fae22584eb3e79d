import type { Element } from './etree.js';

// Python-Markdown's HTML serializer: attributes in lexical order, void elements without a
// closing slash, and "&" left alone when it already starts an entity.

const VOID_TAGS = new Set([
  'area', 'base', 'basefont', 'br', 'col', 'frame', 'hr', 'img', 'input', 'isindex', 'link',
  'meta', 'param',
]);

const BARE_AMP = /&(?!(?:#[0-9]+|#x[0-9a-f]+|[0-9a-z]+);)/gi;

export function escapeText(text: string): string {
  if (text.includes('&')) text = text.replace(BARE_AMP, '&amp;');
  if (text.includes('<')) text = text.replaceAll('<', '&lt;');
  if (text.includes('>')) text = text.replaceAll('>', '&gt;');
  return text;
}

export function escapeAttribute(text: string): string {
  // Raw-HTML placeholders are restored after serialization; one that reached an attribute
  // (e.g. math inside a link target) must not be, or its markup would break out of the quotes.
  text = escapeText(text.replace(/[\u0002\u0003]/g, ''));
  if (text.includes('"')) text = text.replaceAll('"', '&quot;');
  return text;
}

/** Full HTML escaping, for text that becomes raw HTML without passing through the serializer. */
export { escapeHtml } from '../html.js';

export function serialize(el: Element): string {
  const out: string[] = [];
  write(el, out);
  return out.join('');
}

function write(el: Element, out: string[]): void {
  out.push('<', el.tag);
  if (el.hasAttributes) {
    const names = [...el.attrib.keys()].sort();
    for (const k of names) {
      const v = escapeAttribute(el.attrib.get(k)!);
      // Python-Markdown writes an attribute whose value equals its name as a bare boolean.
      if (k === v) out.push(' ', v);
      else out.push(' ', k, '="', v, '"');
    }
  }
  out.push('>');
  if (el.text) out.push(escapeText(el.text));
  for (const c of el.children) write(c, out);
  if (!VOID_TAGS.has(el.tag)) out.push('</', el.tag, '>');
  if (el.tail) out.push(escapeText(el.tail));
}
