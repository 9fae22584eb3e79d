import { Element } from './etree.js';
import { TOP_LEVEL_DOMAINS } from './tlds.js';
import { quotePlus, urlsplit, urlunsplit, type SplitUrl } from './url.js';
import { spinnerAttributes, type UploadPreview } from '../thumbnail.js';

// Links: URL sanitizing, bare-URL detection, and the inline previews (images, videos, YouTube)
// Zulip adds after the message body. Previews that need network access (oEmbed, Open Graph,
// tweets) are not produced.

// The HTML "safelisted schemes" plus web and file URLs; anything else is not linked.
const ALLOWED_SCHEMES = new Set([
  'http', 'https', 'ftp', 'file', 'bitcoin', 'geo', 'im', 'irc', 'ircs', 'magnet', 'mailto',
  'matrix', 'mms', 'news', 'nntp', 'openpgp4fpr', 'sip', 'sms', 'smsto', 'ssh', 'tel', 'urn',
  'webcal', 'wtai', 'xmpp',
]);

/**
 * Zulip's sanitize_url: null for a URL that must not become a link (unknown scheme such as
 * javascript:), otherwise the URL with "http://" assumed when no scheme is given.
 */
export function sanitizeUrl(url: string, depth = 0): string | null {
  const parts: SplitUrl = urlsplit(url.replaceAll(' ', '%20'));
  if (!parts.scheme && !parts.netloc && parts.path.includes('@')) {
    parts.scheme = 'mailto';
  } else if (!parts.scheme && !parts.netloc && parts.path.startsWith('/')) {
    return urlunsplit({ ...parts, scheme: '', netloc: '' });
  } else if (!parts.scheme && !parts.netloc && !parts.path && !parts.query && parts.fragment) {
    return urlunsplit({ scheme: '', netloc: '', path: '', query: '', fragment: parts.fragment });
  }
  if (!parts.scheme) return depth > 0 ? null : sanitizeUrl('http://' + url, 1);
  if (!ALLOWED_SCHEMES.has(parts.scheme)) return null;
  return urlunsplit(parts);
}

/** Links into the realm's own narrows or uploads become relative, opening in the same tab. */
export function rewriteLocalLink(realmUrl: string, link: string): string {
  const prefix = realmUrl + '/';
  if (link.startsWith(prefix + '#') || link.startsWith(prefix + 'user_uploads/')) return link.slice(prefix.length);
  return link;
}

/** The path id of an upload URL, relative or on the realm's own host; null for other URLs. */
export function uploadPathId(realmUrl: string, url: string): string | null {
  const path = url.startsWith(realmUrl + '/') ? url.slice(realmUrl.length) : url;
  return path.startsWith('/user_uploads/') ? path.slice('/user_uploads/'.length) : null;
}

/**
 * An uploaded image shown in place by the Markdown image syntax (Zulip's `img.inline-image`):
 * a loading spinner with the original's address, dimensions and type, which the caller
 * rewrites into the thumbnail where one exists (lib/thumbnail.ts), as for link previews.
 */
export function inlineUploadImage(pathId: string, upload: UploadPreview, alt: string, title: string | null): Element {
  const img = new Element('img', { alt });
  for (const [k, v] of spinnerAttributes(upload)) img.set(k, v);
  img.set('class', 'inline-image image-loading-placeholder');
  img.set('data-original-src', `/user_uploads/${pathId}`);
  if (title !== null) img.set('title', title);
  return img;
}

/** Zulip's url_to_a: an <a> for a URL (text defaults to the URL), or the URL itself if unsafe. */
export function urlToA(realmUrl: string, url: string, text?: string): Element | string {
  const href = sanitizeUrl(url);
  if (href === null) return url;
  const a = new Element('a');
  a.set('href', rewriteLocalLink(realmUrl, href));
  a.setText(text ?? url, true);
  return a;
}

/** A regex alternation of `words`, factored by common prefixes. */
function trieSource(words: readonly string[]): string {
  const groups = new Map<string, string[]>();
  let empty = false;
  for (const w of words) {
    if (w === '') empty = true;
    else groups.set(w[0]!, [...(groups.get(w[0]!) ?? []), w.slice(1)]);
  }
  const alts = [...groups].map(([c, rest]) => c + (rest.length === 1 && rest[0] === '' ? '' : `(?:${trieSource(rest)})`));
  if (empty) alts.push('');
  return alts.join('|');
}

function buildWebLinkSource(): string {
  // File extensions that are also TLDs would link too many file names.
  const falsePositives = new Set(['java', 'md', 'mov', 'py', 'zip']);
  // A TLD must be the whole last label (the pattern's lookahead ensures it), so the order of
  // alternatives does not matter and a trie is equivalent to Zulip's longest-first alternation.
  const tlds = trieSource(TOP_LEVEL_DOMAINS.filter((t) => !falsePositives.has(t)));
  // Balanced parentheses, up to six levels deep (regexes cannot count).
  const urlChar = '[^\\s()"]';
  let nested = `${urlChar}*`;
  for (let i = 0; i < 7; i++) nested = `${urlChar}*?(?:\\(${nested}\\)${urlChar}*?)*`;
  const w = '[\\p{L}\\p{N}_]';
  return (
    `(?<![^\\s'"(,:<])` +
    `(?<url>` +
    `(?:(?:https?://[\\p{L}\\p{N}_.:@\\-]+?|(?:(?:${w}|-)+\\.)+(?:${tlds}))(?:/${nested})?)` +
    `|(?:[\\p{L}\\p{N}_.\\-]+@[\\p{L}\\p{N}_.\\-]+\\.${w}+)` +
    `|(?:file://(?:/[^/ ]*)+/?)` +
    `|(?:bitcoin:[13][a-km-zA-HJ-NP-Z1-9]{25,34})` +
    `)` +
    `(?=[!:;?),.'">]*(?:$|\\s))`
  );
}

let webLinkSource: string | undefined;

/** The bare-URL pattern (scheme links, domains ending in a real TLD, emails, file:, bitcoin:). */
export function webLinkRegex(flags: string): RegExp {
  webLinkSource ??= buildWebLinkSource();
  return new RegExp(webLinkSource, flags);
}

const IMAGE_EXTENSIONS = ['.bmp', '.gif', '.jpe', '.jpeg', '.jpg', '.png', '.webp'];
const INLINE_PREVIEW_LIMIT = 24;
const INLINE_PREVIEW_CLASSES = new Set(['message_inline_image', 'message_inline_ref', 'inline-preview-twitter']);

export interface LinkScan {
  hasLink: boolean;
  hasImage: boolean;
  attachmentPathIds: string[];
}

interface FoundUrl {
  url: string;
  text: string | null;
  el: Element;
  parent: Element;
  grandparent: Element | null;
  inBlockquote: boolean;
}

function realmHost(realmUrl: string): string {
  try {
    return new URL(realmUrl).host;
  } catch {
    return '';
  }
}

/** Python's urljoin("/", url) for the cases that matter here: relative paths gain a "/". */
function absolutePath(url: string): SplitUrl {
  const parts = urlsplit(url);
  if (!parts.scheme && !parts.netloc && !parts.path.startsWith('/')) parts.path = '/' + parts.path;
  return parts;
}

/**
 * Zulip's InlineInterestingLinkProcessor: records has_link / has_image / upload references
 * and appends inline previews for image, video and YouTube links (not inside quotes).
 */
export function processLinks(root: Element, realmUrl: string, previews: boolean, uploads?: ReadonlyMap<string, UploadPreview>): LinkScan {
  const found = collectLinks(root);
  const scan: LinkScan = { hasLink: found.length > 0, hasImage: false, attachmentPathIds: [] };
  if (found.length === 0) return scan;
  const host = realmHost(realmUrl);
  for (const url of new Set(found.map((f) => f.url))) {
    const parts = absolutePath(url);
    if (parts.netloc !== '' && parts.netloc !== host) continue;
    if (!parts.path.startsWith('/user_uploads/')) continue;
    scan.attachmentPathIds.push(parts.path.slice('/user_uploads/'.length));
  }
  if (!previews) return scan;
  const previewable = new Set(found.filter((f) => !f.inBlockquote).map((f) => f.url));
  if (previewable.size > INLINE_PREVIEW_LIMIT) return scan;
  const processed = new Set<string>();
  for (const f of found) {
    if (!previewable.has(f.url) || processed.has(f.url)) continue;
    processed.add(f.url);
    const url = f.url;
    if (isVideo(url)) {
      const info = inliningInfo(root, f);
      addVideo(info.parent, url, info.title, info.index);
      if (info.remove) info.parent.remove(info.remove);
      continue;
    }
    const dropbox = dropboxImage(url);
    if (dropbox !== null) {
      addPreview(scan, root, { imageUrl: dropbox, link: url, title: null, index: null, alreadyThumbnailed: true });
      continue;
    }
    if (uploads !== undefined && url.startsWith('/user_uploads/')) {
      // Zulip's is_image with db data: only uploads whose header parsed as an image.
      const upload = uploads.get(url.slice('/user_uploads/'.length));
      if (upload !== undefined) {
        const info = inliningInfo(root, f);
        addPreview(scan, info.parent, { imageUrl: url, link: url, title: info.title, index: info.index, alreadyThumbnailed: true, upload });
        if (info.remove) info.parent.remove(info.remove);
      }
      continue;
    }
    if (isImage(url)) {
      const corrected = correctedImageSource(url);
      const target = corrected === null ? f : { ...f, url: corrected, text: corrected };
      const info = inliningInfo(root, target);
      addPreview(scan, info.parent, {
        imageUrl: actualImageUrl(target.url),
        link: target.url,
        title: info.title,
        index: info.index,
        alreadyThumbnailed: false,
      });
      if (info.remove) info.parent.remove(info.remove);
      continue;
    }
    const netloc = urlsplit(url).netloc;
    if (netloc === '' || netloc === host) continue;
    const ytId = youtubeId(url);
    if (ytId !== null) {
      const info = inliningInfo(root, f);
      addPreview(scan, info.parent, {
        imageUrl: `https://i.ytimg.com/vi/${ytId}/default.jpg`,
        link: url,
        title: null,
        index: info.index,
        alreadyThumbnailed: true,
        cls: 'youtube-video message_inline_image',
        dataId: ytId,
      });
    }
  }
  return scan;
}

function collectLinks(root: Element): FoundUrl[] {
  // Breadth-first, like Zulip's walk_tree_with_family.
  const out: FoundUrl[] = [];
  const queue: { el: Element; parent: { el: Element; parent: unknown } | null; quoted: boolean }[] = [
    { el: root, parent: null, quoted: false },
  ];
  for (let qi = 0; qi < queue.length; qi++) {
    const cur = queue[qi]!;
    const quoted = cur.quoted || cur.el.tag === 'blockquote';
    for (const child of cur.el.children) {
      queue.push({ el: child, parent: cur, quoted });
      if (child.tag === 'a') {
        out.push({
          url: child.get('href') ?? '',
          text: child.text,
          el: child,
          parent: cur.el,
          grandparent: cur.parent ? (cur.parent as { el: Element }).el : null,
          inBlockquote: quoted,
        });
      }
    }
  }
  return out;
}

interface InliningInfo {
  parent: Element;
  title: string | null;
  index: number | null;
  remove: Element | null;
}

function inliningInfo(root: Element, f: FoundUrl): InliningInfo {
  // A named link keeps its text (and gives the preview a title).
  const urlEqText = f.text === null || f.url === f.text;
  const info: InliningInfo = { parent: root, title: urlEqText ? null : f.text, index: null, remove: null };
  if (f.parent.tag === 'li') {
    info.parent = f.parent;
    if (!f.parent.text && !f.el.tail && urlEqText) info.remove = f.el;
  } else if (f.parent.tag === 'p' && f.grandparent) {
    const gp = f.grandparent;
    info.parent = gp;
    const p = f.parent;
    if (p.children.length === 1 && (!p.text || p.text === '\n') && !f.el.tail && urlEqText) info.remove = p;
    const pIndex = gp.children.indexOf(p);
    if (pIndex >= 0) info.index = insertionIndex(gp, p, pIndex);
  }
  return info;
}

/** After the paragraph, and after previews already added for that paragraph's links. */
function insertionIndex(gp: Element, p: Element, pIndex: number): number {
  const links = new Set([...p.iter('a')].map((a) => a.get('href')));
  let i = pIndex;
  for (;;) {
    i++;
    if (i >= gp.children.length) return i;
    const uncle = gp.children[i]!;
    const classes = (uncle.get('class') ?? '').split(/\s+/);
    if (uncle.tag !== 'div' || !classes.some((c) => INLINE_PREVIEW_CLASSES.has(c))) return i;
    const a = uncle.children.find((c) => c.tag === 'a');
    if (!a || !links.has(a.get('href'))) return i;
  }
}

interface Preview {
  imageUrl: string;
  link: string;
  title: string | null;
  index: number | null;
  alreadyThumbnailed: boolean;
  cls?: string;
  dataId?: string;
  upload?: UploadPreview;
}

function insertAt(parent: Element, index: number | null, el: Element): void {
  if (index === null) parent.append(el);
  else parent.insert(index, el);
}

function addPreview(scan: LinkScan, parent: Element, p: Preview): void {
  const cls = p.cls ?? 'message_inline_image';
  if (cls.split(' ').includes('message_inline_image')) scan.hasImage = true;
  const div = new Element('div', { class: cls });
  insertAt(parent, p.index, div);
  const a = div.sub('a', { href: p.link });
  if (p.title !== null) a.set('title', p.title);
  if (p.dataId !== undefined) a.set('data-id', p.dataId);
  const img = a.sub('img');
  if (p.upload) {
    for (const [k, v] of spinnerAttributes(p.upload)) img.set(k, v);
  } else if (!p.alreadyThumbnailed && isUploadOrExternal(p.imageUrl)) {
    // Served through the thumbnailing endpoint, which redirects to the image.
    const url = p.imageUrl.replace(/^\/+/, '');
    img.set('src', `/thumbnail?url=${quotePlus(url)}&size=thumbnail`);
    img.set('data-src-fullsize', `/thumbnail?url=${quotePlus(url)}&size=full`);
  } else {
    img.set('src', p.imageUrl);
  }
}

function addVideo(parent: Element, url: string, title: string | null, index: number | null): void {
  const div = new Element('div', { class: 'message_inline_image message_inline_video' });
  insertAt(parent, index, div);
  const a = div.sub('a', { href: url });
  if (title) a.set('title', title);
  a.sub('video', { src: url, preload: 'metadata' });
}

function isUploadOrExternal(url: string): boolean {
  const parts = urlsplit(url);
  return parts.scheme !== '' || parts.netloc !== '' || url.startsWith('/user_uploads/');
}

function isImage(url: string): boolean {
  const parts = urlsplit(url);
  if (parts.netloc === 'pasteboard.co') return false;
  const path = parts.path.toLowerCase();
  return IMAGE_EXTENSIONS.some((ext) => path.endsWith(ext));
}

function isVideo(url: string): boolean {
  // mimetypes.guess_type: the extension of everything after the scheme, query included.
  const rest = url.replace(/^[A-Za-z][A-Za-z0-9+.-]*:/, '');
  const m = /(\.[^./]*)$/.exec(rest);
  if (!m) return false;
  const ext = m[1]!;
  return ['.mp4', '.webm'].includes(ext) || ['.mp4', '.webm'].includes(ext.toLowerCase());
}

function actualImageUrl(url: string): string {
  // GitHub "blob" pages of images -> the raw image.
  const parts = urlsplit(url);
  if (parts.netloc === 'github.com' || parts.netloc.endsWith('.github.com')) {
    const split = parts.path.split('/');
    if (split.length > 3 && split[3] === 'blob') {
      return 'https://raw.githubusercontent.com' + [...split.slice(0, 3), ...split.slice(4)].join('/');
    }
  }
  return url;
}

function correctedImageSource(url: string): string | null {
  const parts = urlsplit(url);
  if (parts.netloc.toLowerCase().endsWith('.wikipedia.org') && parts.path.startsWith('/wiki/File:')) {
    return urlunsplit({ ...parts, path: parts.path.replace('/wiki/File:', '/wiki/Special:FilePath/File:') });
  }
  if (parts.netloc === 'linx.li') return 'https://linx.li/s' + parts.path;
  return null;
}

/** Dropbox shared image links preview as the raw file (albums would need a fetch). */
function dropboxImage(url: string): string | null {
  const parts = urlsplit(url);
  if (parts.netloc !== 'dropbox.com' && !parts.netloc.endsWith('.dropbox.com')) return null;
  if (!parts.path.startsWith('/s/') && !parts.path.startsWith('/sh/')) return null;
  if (!isImage(url)) return null;
  return urlunsplit({ ...parts, query: 'raw=1' });
}

function youtubeId(url: string): string | null {
  const parts = urlsplit(url);
  let id: string | undefined;
  if (parts.scheme === 'http' || parts.scheme === 'https') {
    const hostname = parts.netloc.replace(/^.*@/, '').replace(/:\d*$/, '').toLowerCase();
    if (['m.youtube.com', 'www.youtube.com', 'www.youtube-nocookie.com', 'youtube.com', 'youtube-nocookie.com'].includes(hostname)) {
      const query = new URLSearchParams(parts.query);
      if ((parts.path === '/watch' || parts.path === '/watch_popup') && query.get('v')) {
        id = query.get('v')!;
      } else if (parts.path === '/watch_videos' && query.get('video_ids')) {
        id = query.get('video_ids')!.split(',')[0];
      } else if (/^\/(embed|shorts|v)\//.test(parts.path)) {
        id = parts.path.split('/')[2];
      }
    } else if (hostname === 'youtu.be' && parts.path.startsWith('/')) {
      id = parts.path.slice(1);
    }
  }
  return id !== undefined && /^[0-9A-Za-z_-]+$/.test(id) ? id : null;
}
