// URL helpers with the exact semantics of the Python functions Zulip's renderer relies on
// (urllib.parse.urlsplit/urlunsplit/quote), so hrefs come out byte-for-byte the same.

export interface SplitUrl {
  scheme: string;
  netloc: string;
  path: string;
  query: string;
  fragment: string;
}

const SCHEME_CHARS = /^[A-Za-z][A-Za-z0-9+\-.]*$/;
// WHATWG C0 controls and space, stripped from the front as urlsplit does.
const LEADING_C0 = /^[\u0000-\u0020]+/;

export function urlsplit(url: string): SplitUrl {
  url = url.replace(LEADING_C0, '').replace(/[\t\r\n]/g, '');
  let scheme = '';
  let netloc = '';
  let query = '';
  let fragment = '';
  const i = url.indexOf(':');
  if (i > 0 && SCHEME_CHARS.test(url.slice(0, i))) {
    scheme = url.slice(0, i).toLowerCase();
    url = url.slice(i + 1);
  }
  if (url.startsWith('//')) {
    let end = url.length;
    for (const c of '/?#') {
      const j = url.indexOf(c, 2);
      if (j >= 0 && j < end) end = j;
    }
    netloc = url.slice(2, end);
    url = url.slice(end);
  }
  const hash = url.indexOf('#');
  if (hash >= 0) {
    fragment = url.slice(hash + 1);
    url = url.slice(0, hash);
  }
  const q = url.indexOf('?');
  if (q >= 0) {
    query = url.slice(q + 1);
    url = url.slice(0, q);
  }
  return { scheme, netloc, path: url, query, fragment };
}

const USES_NETLOC = new Set([
  '', 'ftp', 'http', 'gopher', 'nntp', 'telnet', 'imap', 'wais', 'file', 'mms', 'https', 'shttp',
  'snews', 'prospero', 'rtsp', 'rtspu', 'rsync', 'svn', 'svn+ssh', 'sftp', 'nfs', 'git',
  'git+ssh', 'ws', 'wss', 'itms-services',
]);

export function urlunsplit(p: SplitUrl): string {
  let url = p.path;
  if (p.netloc || (p.scheme && USES_NETLOC.has(p.scheme) && !url.startsWith('//'))) {
    if (url && !url.startsWith('/')) url = '/' + url;
    url = '//' + p.netloc + url;
  }
  if (p.scheme) url = p.scheme + ':' + url;
  if (p.query) url += '?' + p.query;
  if (p.fragment) url += '#' + p.fragment;
  return url;
}

const HEX = '0123456789ABCDEF';

/** Python's urllib.parse.quote: percent-encode UTF-8 bytes except unreserved and `safe`. */
export function quote(s: string, safe = '/'): string {
  let out = '';
  for (const byte of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9_.\-~]/.test(c) || (byte < 128 && safe.includes(c))) out += c;
    else out += '%' + HEX[byte >> 4]! + HEX[byte & 15]!;
  }
  return out;
}

/** Python's urllib.parse.quote_plus (as used by urlencode). */
export function quotePlus(s: string): string {
  return quote(s, ' ').replaceAll(' ', '+');
}

/** Zulip's hash_util_encode: the encoding of narrow URL components (".XX" instead of "%XX"). */
export function hashUtilEncode(s: string): string {
  return quote(s, '').replaceAll('.', '%2E').replaceAll('%', '.');
}

/** Zulip's encode_stream: "<id>-<name with spaces as dashes, hash-encoded>". */
export function encodeChannel(channelId: number, name: string): string {
  return `${channelId}-${hashUtilEncode(name.replaceAll(' ', '-'))}`;
}
