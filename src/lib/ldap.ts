import type { Client, Entry } from 'ldapts';
import type { LdapConfig } from '../config.js';
import { lazyRequire } from './lazy.js';

const ldapts = lazyRequire<typeof import('ldapts')>('ldapts');

/**
 * The directory service as Zulip's LDAP backend reads it (zproject/backends.py,
 * ZulipLDAPAuthBackendBase): translate what a person typed into a directory username, find
 * their entry, check their password by binding as them, and map the entry's attributes.
 * Every function opens its own connection and closes it; none of them touches the database.
 */

/** The directory could not be reached or refused our own (service) bind; never a login. */
export class LdapUnavailableError extends Error {}

/** A person's entry: its DN, directory username and attributes (binary ones as Buffers). */
export interface LdapPerson {
  dn: string;
  username: string;
  attrs: Entry;
}

/** What an entry says about a person, through PARLEY_LDAP_USER_ATTR_MAP and the email settings. */
export interface LdapProfile {
  /** null: the entry has no email (Zulip: "LDAP user doesn't have the needed ... attribute"). */
  email: string | null;
  fullName: string | null;
  disabled: boolean;
  avatar: Buffer | null;
  /** Custom profile field values by Zulip's var name (the field's name, lowercased, spaces as _). */
  profileFields: Record<string, string>;
}

const BINARY_ATTRS = ['jpegPhoto', 'thumbnailPhoto'];

/** RFC 4515 escaping of a value inside a search filter. */
export function escapeFilterValue(v: string): string {
  return v.replace(/[\\*()\u0000]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** RFC 4514 escaping of a value inside a DN. */
function escapeDnValue(v: string): string {
  return v.replace(/[,+"\\<>;=]/g, (c) => `\\${c}`).replace(/^[ #]/, (c) => `\\${c}`).replace(/ $/, '\\ ');
}

function fill(template: string, values: Record<string, string>, escape: (v: string) => string): string {
  return template.replace(/%\((\w+)\)s/g, (_m, k: string) => escape(values[k] ?? ''));
}

function first(attrs: Entry, name: string): string | null {
  const v = attrs[name];
  const x = Array.isArray(v) ? v[0] : v;
  if (x === undefined) return null;
  return Buffer.isBuffer(x) ? x.toString('utf8') : String(x);
}

function isEmail(s: string): boolean {
  return /^[^\s@]+@[^\s@]+$/.test(s);
}

function newClient(cfg: LdapConfig): Client {
  // ldapts speaks TLS from the start whenever tlsOptions is given, so only for ldaps:// URLs.
  const tls = cfg.url.startsWith('ldaps:') ? { tlsOptions: { rejectUnauthorized: cfg.tlsVerify } } : {};
  return new (ldapts().Client)({ url: cfg.url, timeout: cfg.timeoutMs, connectTimeout: cfg.timeoutMs, ...tls });
}

/** Runs `fn` on a connection bound as the service account (or anonymously); maps failures to LdapUnavailableError. */
async function withServiceConnection<T>(cfg: LdapConfig, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = newClient(cfg);
  try {
    try {
      if (cfg.startTls) await client.startTLS({ rejectUnauthorized: cfg.tlsVerify });
      if (cfg.bindDn) await client.bind(cfg.bindDn, cfg.bindPassword);
    } catch (e) {
      throw new LdapUnavailableError(`directory bind failed: ${e instanceof Error ? e.constructor.name : 'error'}`);
    }
    try {
      return await fn(client);
    } catch (e) {
      if (e instanceof LdapUnavailableError) throw e;
      throw new LdapUnavailableError(`directory request failed: ${e instanceof Error ? e.constructor.name : 'error'}`);
    }
  } finally {
    await client.unbind().catch(() => undefined);
  }
}

/** Entries matching; a search matching more than one person counts as none (Zulip logs and refuses it too). */
async function search(client: Client, base: string, scope: 'base' | 'sub', filter: string): Promise<Entry[]> {
  try {
    const { searchEntries } = await client.search(base, { scope, filter, explicitBufferAttributes: BINARY_ATTRS, sizeLimit: 2 });
    return searchEntries;
  } catch (e) {
    // noSuchObject (32): a DN template naming nobody; sizeLimitExceeded (4): several people.
    if (e instanceof ldapts().ResultCodeError && (e.code === 32 || e.code === 4)) return [];
    throw e;
  }
}

async function findByUsername(client: Client, cfg: LdapConfig, username: string): Promise<LdapPerson | null> {
  let entries: Entry[];
  if (cfg.userDnTemplate) {
    entries = await search(client, fill(cfg.userDnTemplate, { user: username }, escapeDnValue), 'base', '(objectClass=*)');
  } else if (cfg.userSearchBase) {
    entries = await search(client, cfg.userSearchBase, 'sub', fill(cfg.userSearchFilter, { user: username }, escapeFilterValue));
  } else {
    throw new LdapUnavailableError('neither PARLEY_LDAP_USER_DN_TEMPLATE nor PARLEY_LDAP_USER_SEARCH_BASE is set');
  }
  if (entries.length !== 1) return null;
  return { dn: entries[0]!.dn, username, attrs: entries[0]! };
}

/**
 * Zulip's django_to_ldap_username followed by the entry lookup: an email in the append domain
 * becomes its local part; other emails are looked up by the email attribute; anything else is a
 * directory username. null: no such person in the directory (or outside its email domain).
 */
async function findPerson(client: Client, cfg: LdapConfig, typed: string): Promise<LdapPerson | null> {
  let username = typed.trim();
  if (cfg.appendDomain) {
    if (isEmail(username)) {
      const at = username.lastIndexOf('@');
      if (username.slice(at + 1).toLowerCase() !== cfg.appendDomain) return null;
      username = username.slice(0, at);
    }
  } else if (isEmail(username) && cfg.emailAttr && cfg.userSearchBase) {
    const found = await search(client, cfg.userSearchBase, 'sub', `(${cfg.emailAttr}=${escapeFilterValue(username)})`);
    const name = found.length === 1 ? first(found[0]!, cfg.usernameAttr) : null;
    if (name !== null) return { dn: found[0]!.dn, username: name, attrs: found[0]! };
  }
  return findByUsername(client, cfg, username);
}

export type LdapAuthResult = { kind: 'ok'; person: LdapPerson } | { kind: 'no_such_user' } | { kind: 'wrong_password'; person: LdapPerson };

/**
 * Checks `password` by binding as the person's DN. An empty password is refused before any bind:
 * LDAP treats a simple bind with no password as an anonymous bind that succeeds.
 * @throws LdapUnavailableError when the directory cannot answer.
 */
export async function ldapAuthenticate(cfg: LdapConfig, typed: string, password: string): Promise<LdapAuthResult> {
  const person = await withServiceConnection(cfg, (c) => findPerson(c, cfg, typed));
  if (!person) return { kind: 'no_such_user' };
  if (password === '') return { kind: 'wrong_password', person };
  const client = newClient(cfg);
  try {
    if (cfg.startTls) await client.startTLS({ rejectUnauthorized: cfg.tlsVerify });
    await client.bind(person.dn, password);
    return { kind: 'ok', person };
  } catch (e) {
    // The directory refused this bind (bad password, locked account, policy): not an outage.
    if (e instanceof ldapts().ResultCodeError) return { kind: 'wrong_password', person };
    throw new LdapUnavailableError(`directory bind failed: ${e instanceof Error ? e.constructor.name : 'error'}`);
  } finally {
    await client.unbind().catch(() => undefined);
  }
}

/**
 * Looks up several people by email (Zulip's sync_user_from_ldap for each account) over one
 * connection. The map has null for an email with no entry.
 * @throws LdapUnavailableError when the directory cannot answer.
 */
export async function ldapFindByEmails(cfg: LdapConfig, emails: readonly string[]): Promise<Map<string, LdapPerson | null>> {
  return withServiceConnection(cfg, async (client) => {
    const out = new Map<string, LdapPerson | null>();
    for (const email of emails) out.set(email, await findPerson(client, cfg, email));
    return out;
  });
}

/** Zulip's LDAP_USER_ACCOUNT_CONTROL_DISABLED_MASK (Active Directory's ACCOUNTDISABLE bit). */
const ACCOUNT_DISABLED = 2;

/** Whether the attribute map names an attribute that says a person is disabled (Zulip's ldap_should_sync_active_status). */
export function ldapSyncsActiveStatus(cfg: LdapConfig): boolean {
  return 'userAccountControl' in cfg.attrMap || 'deactivated' in cfg.attrMap;
}

/** Zulip's user_email_from_ldapuser, get_mapped_name and is_user_disabled_in_ldap, on one entry. */
export function ldapProfile(cfg: LdapConfig, person: LdapPerson): LdapProfile {
  const { attrs } = person;
  const map = cfg.attrMap;
  let email: string | null = person.username;
  if (cfg.appendDomain) email = `${person.username}@${cfg.appendDomain}`;
  else if (cfg.emailAttr) email = first(attrs, cfg.emailAttr);
  if (email !== null && !isEmail(email)) email = null;
  let fullName: string | null = null;
  if (map.full_name) fullName = first(attrs, map.full_name);
  else if (map.first_name && map.last_name) {
    const f = first(attrs, map.first_name);
    const l = first(attrs, map.last_name);
    fullName = f !== null && l !== null ? `${f} ${l}` : null;
  }
  let disabled = false;
  if (map.userAccountControl) {
    disabled = (Number(first(attrs, map.userAccountControl) ?? '0') & ACCOUNT_DISABLED) !== 0;
  } else if (map.deactivated) {
    // LDAP booleans are TRUE/FALSE; FreeIPA documents Yes/No (as Zulip notes).
    disabled = ['TRUE', 'YES'].includes((first(attrs, map.deactivated) ?? '').toUpperCase());
  }
  let avatar: Buffer | null = null;
  if (map.avatar) {
    const v = attrs[map.avatar];
    const x = Array.isArray(v) ? v[0] : v;
    if (Buffer.isBuffer(x) && x.length > 0) avatar = x;
  }
  const profileFields: Record<string, string> = {};
  for (const [key, attr] of Object.entries(map)) {
    if (!key.startsWith('custom_profile_field__')) continue;
    const v = first(attrs, attr);
    if (v !== null) profileFields[key.slice('custom_profile_field__'.length)] = v;
  }
  return { email, fullName, disabled, avatar, profileFields };
}
