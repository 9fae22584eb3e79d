import type TurndownService from 'turndown';
import { lazyRequire } from '../lazy.js';

const Turndown = lazyRequire<typeof TurndownService>('turndown');

/** Pure helpers turning a parsed email into a message, after Zulip's email_mirror.py. */

/** Zulip's strip_from_subject: "Re:", "Fwd:", "AW:" and bracketed forms removed. */
export function stripFromSubject(subject: string): string {
  return subject.replace(/([[(] *)?\b(RE|AW|FWD?) *([-:;)\]][ :;\])-]*|$)|\]+ *$/gim, '').trim();
}

/** Zulip's is_forwarded: the subject starts with a "Fwd:" form. */
export function isForwarded(subject: string): boolean {
  return /^(?:([[(] *)?\b(FWD?) *([-:;)\]][ :;\])-]*|$)|\]+ *$)/i.test(subject);
}

/** Zulip's filter_footer: cut at a "--" signature line, only when there is exactly one. */
export function filterFooter(text: string): string {
  const candidates = text.split('\n').filter((line) => line.trim() === '--');
  if (candidates.length !== 1) return text;
  return text.split(/^\s*--\s*$/m, 1)[0]!.trim();
}

/**
 * Removes quoted replies from an HTML body before conversion: Gmail's, Apple Mail's and
 * Thunderbird's quotation containers (the HTML side of talon's extract_from_html).
 */
interface ElementLike {
  nodeName: string;
  getAttribute(name: string): string | null;
}

function removeHtmlQuotations(service: TurndownService): void {
  service.remove((node) => {
    const el = node as unknown as ElementLike;
    const cls = ` ${el.getAttribute('class') ?? ''} `;
    if (cls.includes(' gmail_quote ') || cls.includes(' moz-cite-prefix ') || cls.includes(' yahoo_quoted ')) return true;
    if (el.nodeName === 'BLOCKQUOTE' && (el.getAttribute('type') === 'cite' || cls.includes(' gmail_quote '))) return true;
    return el.getAttribute('id') === 'divRplyFwdMsg' || el.getAttribute('id') === 'appendonsend';
  });
}

/**
 * Zulip's convert_html_to_markdown (html2text), and its rewrite of inline images
 * `![](http://host/path/name.png?x)` to links `[name.png](http://host/path/name.png)`.
 */
export function htmlToMarkdown(html: string, includeQuotes: boolean): string {
  const service = new (Turndown())({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '*', emDelimiter: '_' });
  service.remove(['style', 'script', 'head', 'title']);
  if (!includeQuotes) removeHtmlQuotations(service);
  const markdown = service.turndown(html).trim();
  return markdown.replace(/!\[\]\((\S*)\/(\S*)\?(\S*)\)/g, '[$2]($1/$2)');
}

/** Python's str() of an address header: `Name <addr>`, the name quoted when it has specials. */
export function formatAddressList(addresses: readonly { name: string; address?: string }[]): string {
  return addresses
    .map(({ name, address }) => {
      if (!name) return address ?? '';
      const shown = /[()<>[\]:;@\\,."]/.test(name) ? `"${name.replace(/(["\\])/g, '\\$1')}"` : name;
      return address ? `${shown} <${address}>` : shown;
    })
    .join(', ');
}
