import { badRequest } from '../errors.js';
import type { CustomProfileField, User } from '../db/tables.js';
import { renderMarkdown } from './markdown/index.js';

/**
 * Custom profile fields: their types, how an organization may define them and which values
 * a user may store, with Zulip's validation messages. Pure: callers fetch what is needed.
 */
export const FIELD_SHORT_TEXT = 1;
export const FIELD_LONG_TEXT = 2;
export const FIELD_DROPDOWN = 3;
export const FIELD_DATE = 4;
export const FIELD_URL = 5;
export const FIELD_USER = 6;
export const FIELD_EXTERNAL_ACCOUNT = 7;
export const FIELD_PRONOUNS = 8;

/** register's custom_profile_field_types, keyed by Zulip's keyword for each type. */
export const CUSTOM_PROFILE_FIELD_TYPES: Record<string, { id: number; name: string }> = {
  SHORT_TEXT: { id: FIELD_SHORT_TEXT, name: 'Text (short)' },
  LONG_TEXT: { id: FIELD_LONG_TEXT, name: 'Text (long)' },
  SELECT: { id: FIELD_DROPDOWN, name: 'List of options' },
  DATE: { id: FIELD_DATE, name: 'Date' },
  URL: { id: FIELD_URL, name: 'Link' },
  USER: { id: FIELD_USER, name: 'Users' },
  EXTERNAL_ACCOUNT: { id: FIELD_EXTERNAL_ACCOUNT, name: 'External account' },
  PRONOUNS: { id: FIELD_PRONOUNS, name: 'Pronouns' },
};
const FIELD_TYPE_IDS = new Set(Object.values(CUSTOM_PROFILE_FIELD_TYPES).map((t) => t.id));

export const FIELD_NAME_MAX_LENGTH = 40;
export const FIELD_HINT_MAX_LENGTH = 80;
export const MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS = 2;

/** Zulip's DEFAULT_EXTERNAL_ACCOUNTS: fields whose label and link come from the server. */
export const DEFAULT_EXTERNAL_ACCOUNTS: Record<string, { text: string; name: string; hint: string; url_pattern: string }> = {
  github: { text: 'GitHub', name: 'GitHub username', hint: '', url_pattern: 'https://github.com/%(username)s' },
  twitter: { text: 'Twitter', name: 'Twitter username', hint: '', url_pattern: 'https://twitter.com/%(username)s' },
};

/** Values of these types carry Markdown and get a `rendered_value`. */
export function isRenderable(type: number): boolean {
  return type === FIELD_SHORT_TEXT || type === FIELD_LONG_TEXT;
}

export type FieldData = Record<string, unknown>;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Zulip's check_profile_field_data: a dict whose values are strings or dicts of strings. */
export function checkFieldDataShape(value: unknown): FieldData {
  if (!isPlainObject(value)) throw badRequest('field_data is not a dict');
  for (const v of Object.values(value)) {
    const ok = typeof v === 'string' || (isPlainObject(v) && Object.values(v).every((x) => typeof x === 'string'));
    if (!ok) throw badRequest('field_data contains a value that is not an allowed_type');
  }
  return value;
}

function checkDropdownData(data: FieldData): void {
  if (Object.keys(data).length < 1) throw badRequest('Field must have at least one choice.');
  const texts = new Set<string>();
  for (const [key, option] of Object.entries(data)) {
    if (!key.trim()) throw badRequest("'value' cannot be blank.");
    if (!isPlainObject(option)) throw badRequest('field_data is not a dict');
    for (const k of ['text', 'order']) {
      if (!(k in option)) throw badRequest(`${k} key is missing from field_data`);
      const v = option[k];
      if (typeof v !== 'string') throw badRequest(`field_data["${k}"] is not a string`);
      if (!v.trim()) throw badRequest(`field_data["${k}"] cannot be blank.`);
    }
    const extra = Object.keys(option).filter((k) => k !== 'text' && k !== 'order');
    if (extra.length) throw badRequest(`Unexpected arguments: ${extra.join(', ')}`);
    texts.add(option.text as string);
  }
  if (texts.size !== Object.keys(data).length) throw badRequest('Field must not have duplicate choices.');
}

function checkExternalAccountData(data: FieldData): void {
  if (!('subtype' in data)) throw badRequest('subtype key is missing from field_data');
  const subtype = data.subtype;
  if (typeof subtype !== 'string') throw badRequest('field_data["subtype"] is not a string');
  if (!subtype.trim()) throw badRequest('field_data["subtype"] cannot be blank.');
  if ('url_pattern' in data) {
    const pattern = data.url_pattern;
    if (typeof pattern !== 'string') throw badRequest('field_data["url_pattern"] is not a string');
    if (pattern) {
      if (pattern.split('%(username)s').length !== 2) throw badRequest("URL pattern must contain '%(username)s'.");
      if (!isValidUrl(pattern.replace('%(username)s', 'username'))) throw badRequest('field_data["url_pattern"] is not a URL');
    }
  }
  const extra = Object.keys(data).filter((k) => k !== 'subtype' && k !== 'url_pattern');
  if (extra.length) throw badRequest(`Unexpected arguments: ${extra.join(', ')}`);
  if (!(subtype in DEFAULT_EXTERNAL_ACCOUNTS)) {
    if (subtype !== 'custom') throw badRequest('Invalid external account type');
    if (!('url_pattern' in data)) throw badRequest('Custom external account must define URL pattern');
  }
}

/** A field of type 7 whose label and hint the server supplies (e.g. GitHub). */
export function isDefaultExternalField(type: number, data: FieldData): boolean {
  return type === FIELD_EXTERNAL_ACCOUNT && typeof data.subtype === 'string' && data.subtype in DEFAULT_EXTERNAL_ACCOUNTS;
}

export function parseStoredFieldData(text: string): FieldData {
  if (!text) return {};
  try {
    const v: unknown = JSON.parse(text);
    return isPlainObject(v) ? v : {};
  } catch {
    return {};
  }
}

export interface FieldDefinition {
  name: string;
  hint: string;
  type: number;
  fieldData: FieldData;
  displayInProfileSummary: boolean;
  useForUserMatching: boolean;
}

/** Zulip's validate_custom_profile_field, in its order of checks. */
export function checkFieldDefinition(def: FieldDefinition): void {
  if (def.type === FIELD_DROPDOWN) checkDropdownData(def.fieldData);
  else if (def.type === FIELD_EXTERNAL_ACCOUNT) checkExternalAccountData(def.fieldData);
  if (!isDefaultExternalField(def.type, def.fieldData)) {
    if (!def.name.trim()) throw badRequest('Label cannot be blank.');
    if (def.hint.length > FIELD_HINT_MAX_LENGTH) throw badRequest(`hint is too long (limit: ${FIELD_HINT_MAX_LENGTH} characters)`);
    if (def.name.length > FIELD_NAME_MAX_LENGTH) throw badRequest(`name is too long (limit: ${FIELD_NAME_MAX_LENGTH} characters)`);
  }
  if (!FIELD_TYPE_IDS.has(def.type)) throw badRequest('Invalid field type.');
  // Since feature level 476 only the Users type is refused in the profile summary.
  if (def.displayInProfileSummary && def.type === FIELD_USER) {
    throw badRequest('Field type not supported for display in profile summary.');
  }
  if (def.useForUserMatching && def.type !== FIELD_SHORT_TEXT && def.type !== FIELD_EXTERNAL_ACCOUNT) {
    throw badRequest('Field type not supported for user matching.');
  }
}

/** field_data as stored: JSON for dropdown and external-account fields, '' for the others. */
export function storedFieldData(type: number, data: FieldData): string {
  return type === FIELD_DROPDOWN || type === FIELD_EXTERNAL_ACCOUNT ? JSON.stringify(data) : '';
}

/** Django's URLValidator, closely enough: an http(s)/ftp(s) URL with a plausible host. */
export function isValidUrl(s: string): boolean {
  if (/\s/.test(s)) return false;
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    return false;
  }
  if (!['http:', 'https:', 'ftp:', 'ftps:'].includes(url.protocol)) return false;
  const host = url.hostname;
  if (!host) return false;
  if (host === 'localhost' || /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.startsWith('[')) return true;
  return /^([a-z0-9-]+\.)+[a-z][a-z0-9-]*\.?$/i.test(host) || /^([a-z0-9-]+\.)+xn--[a-z0-9-]+\.?$/i.test(host);
}

function isIsoDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(y, mo - 1, d));
  return y >= 1 && date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

function cappedString(name: string, value: unknown, max: number): string {
  if (typeof value !== 'string') throw badRequest(`${name} is not a string`);
  if (value.length > max) throw badRequest(`${name} is too long (limit: ${max} characters)`);
  return value;
}

/**
 * Validates one value for a field and returns the stored text (Users fields store a JSON list).
 * `users` resolves user IDs of the field's realm, for Users fields.
 */
export function checkProfileFieldValue(
  field: Pick<CustomProfileField, 'name' | 'type' | 'field_data'>,
  value: string | number[],
  users: ReadonlyMap<number, Pick<User, 'is_active' | 'is_bot'>>,
): string {
  const name = field.name;
  switch (field.type) {
    case FIELD_SHORT_TEXT:
    case FIELD_EXTERNAL_ACCOUNT:
    case FIELD_PRONOUNS:
      return cappedString(name, value, 50);
    case FIELD_LONG_TEXT:
      return cappedString(name, value, 500);
    case FIELD_DATE:
      if (typeof value !== 'string') throw badRequest(`${name} is not a string`);
      if (!isIsoDate(value)) throw badRequest(`${name} is not a date`);
      return value;
    case FIELD_URL:
      if (typeof value !== 'string') throw badRequest(`${name} is not a string`);
      if (!isValidUrl(value)) throw badRequest(`${name} is not a URL`);
      return value;
    case FIELD_DROPDOWN: {
      if (typeof value !== 'string') throw badRequest(`${name} is not a string`);
      if (!(value in parseStoredFieldData(field.field_data))) throw badRequest(`'${value}' is not a valid choice for '${name}'.`);
      return value;
    }
    case FIELD_USER: {
      if (!Array.isArray(value)) throw badRequest('User IDs is not a list');
      for (const id of value) {
        const u = users.get(id);
        if (!u) throw badRequest(`Invalid user ID: ${id}`);
        if (!u.is_active) throw badRequest(`User with ID ${id} is deactivated`);
        if (u.is_bot) throw badRequest(`User with ID ${id} is a bot`);
      }
      return JSON.stringify(value);
    }
    default:
      throw badRequest('Invalid field type.');
  }
}

/**
 * rendered_value of a text field: Zulip-flavoured Markdown as for channel descriptions
 * (Zulip's render_stream_description: no previews, no mentions).
 */
export function renderProfileValue(text: string, realmUrl: string): string {
  return renderMarkdown(text, { realmUrl, inlineImagePreview: false }).html;
}
