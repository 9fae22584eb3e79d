import { randomBytes } from 'node:crypto';

/**
 * The email gateway's address formats (Zulip's email_mirror_helpers.py): a channel's address is
 * `<slug>.<token>[.<option>...]@<domain>`, a missed-message reply address `mm<32 hex>@<domain>`.
 * Pure: no I/O.
 */

/** Options a sender may add to a channel address, `.` or `+` separated (Zulip's optional_address_tokens). */
export interface AddressOptions {
  show_sender?: boolean;
  include_footer?: boolean;
  include_quotes?: boolean;
  prefer_text?: boolean;
}

const OPTION_TOKENS: Record<string, (o: AddressOptions) => void> = {
  'show-sender': (o) => (o.show_sender = true),
  'include-footer': (o) => (o.include_footer = true),
  'include-quotes': (o) => (o.include_quotes = true),
  'prefer-text': (o) => (o.prefer_text = true),
  'prefer-html': (o) => (o.prefer_text = false),
};

/** Zulip's generate_email_token_for_stream: 32 hex digits. */
export function generateChannelEmailToken(): string {
  return randomBytes(16).toString('hex');
}

/** Zulip's generate_missed_message_token: "mm" and 32 hex digits. */
export function generateMissedMessageToken(): string {
  return `mm${randomBytes(16).toString('hex')}`;
}

/** Django's slugify (allow_unicode=False). */
function slugify(value: string): string {
  const ascii = value.normalize('NFKD').replace(/[^\x00-\x7f]/g, '');
  return ascii
    .toLowerCase()
    .replace(/[^\w\s-]/g, '')
    .replace(/[-\s]+/g, '-')
    .replace(/^[-_]+|[-_]+$/g, '');
}

/**
 * Zulip's encode_email_address: runs of non-word characters become one hyphen, then the name is
 * slugified; a name that loses characters on the way (non-ASCII letters, a leading or trailing
 * hyphen) is replaced by "channel". Empty when the gateway has no domain.
 */
export function encodeEmailAddress(domain: string | null, name: string, token: string, showSender: boolean): string {
  if (!domain) return '';
  const hyphenated = name.replace(/[^\p{L}\p{N}_]+/gu, '-');
  const slug = slugify(hyphenated);
  let local = `${slug.length === hyphenated.length && slug ? slug : 'channel'}.${token}`;
  if (showSender) local += '.show-sender';
  return `${local}@${domain}`;
}

/** The part before @domain (Zulip's get_email_gateway_message_string_from_address), or null for another domain. */
export function gatewayLocalPart(domain: string, address: string): string | null {
  const at = address.lastIndexOf('@');
  if (at <= 0 || address.slice(at + 1).toLowerCase() !== domain.toLowerCase()) return null;
  return address.slice(0, at);
}

/** Zulip's is_mm_32_format. */
export function isMissedMessageToken(localPart: string): boolean {
  return localPart.startsWith('mm') && localPart.length === 34;
}

/** Zulip's decode_email_address on the local part: the channel token and the options named in the address. */
export function decodeChannelAddress(localPart: string): { token: string; options: AddressOptions } {
  const parts = localPart.replaceAll('.', '+').split('+');
  const options: AddressOptions = {};
  const remaining: string[] = [];
  for (const part of parts) {
    const set = Object.hasOwn(OPTION_TOKENS, part) ? OPTION_TOKENS[part] : undefined;
    if (set) set(options);
    else remaining.push(part);
  }
  return { token: (remaining.length === 1 ? remaining[0] : remaining[1]) ?? '', options };
}
