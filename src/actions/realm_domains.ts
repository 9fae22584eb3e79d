import { fetchActiveUserIds } from '../db/repos/users.js';
import { transaction, type Tx } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import {
  countRealmDomains,
  deleteRealmDomainRow,
  fetchRealmDomain,
  fetchRealmDomains,
  insertRealmDomain,
  updateRealmDomainRow,
  type RealmDomainRow,
} from '../db/repos/realm_domains.js';
import { badRequest } from '../errors.js';
import { formatRealmDomain } from '../lib/format/realm_domains.js';
import { realmSettings } from '../lib/realm_settings.js';
import type { ActionServices } from '../services.js';
import { doUpdateRealmSettings } from './realm_settings.js';

/** Zulip's validate_domain; returns the problem, or null for a valid (lowercase) domain. */
export function domainProblem(domain: string): string | null {
  if (domain.length === 0) return "Domain can't be empty.";
  if (!domain.includes('.')) return 'Domain must have at least one dot (.)';
  if (domain.length > 255) return 'Domain is too long';
  if (domain.startsWith('.') || domain.endsWith('.')) return 'Domain cannot start or end with a dot (.)';
  for (const label of domain.split('.')) {
    if (!label) return "Consecutive '.' are not allowed.";
    if (label.startsWith('-') || label.endsWith('-')) return "Subdomains cannot start or end with a '-'.";
    if (!/^[a-z0-9-]*$/.test(label)) return "Domain can only have letters, numbers, '.' and '-'s.";
  }
  return null;
}

/** Normalizes and validates a new allowed domain (Zulip's create_realm_domain checks). */
export async function checkAddRealmDomain(services: ActionServices, realm: Realm, rawDomain: string): Promise<string> {
  const domain = rawDomain.trim().toLowerCase();
  const problem = domainProblem(domain);
  if (problem) throw badRequest(`Invalid domain: ${problem}`);
  if (await fetchRealmDomain(services.db.kysely, realm.id, domain)) {
    throw badRequest(`The domain ${domain} is already a part of your organization.`);
  }
  return domain;
}

export async function accessRealmDomain(services: ActionServices, realm: Realm, domain: string): Promise<RealmDomainRow> {
  const row = await fetchRealmDomain(services.db.kysely, realm.id, domain);
  if (!row) throw badRequest(`No entry found for domain ${domain}.`);
  return row;
}

async function sendToRealm(services: ActionServices, tx: Tx, realm: Realm, event: { type: string; [k: string]: unknown }, afterCommit: (cb: () => void) => void): Promise<void> {
  const userIds = await fetchActiveUserIds(tx, realm.id);
  afterCommit(() => services.events.send(realm.id, event, userIds));
}

/** Preconditions: checkAddRealmDomain returned `domain`; the caller is an owner. */
export async function doAddRealmDomain(services: ActionServices, realm: Realm, domain: string, allowSubdomains: boolean): Promise<RealmDomainRow> {
  return transaction(services.db, async (tx, afterCommit) => {
    const row = await insertRealmDomain(tx, { realm_id: realm.id, domain, allow_subdomains: allowSubdomains ? 1 : 0 });
    await sendToRealm(services, tx, realm, { type: 'realm_domains', op: 'add', realm_domain: formatRealmDomain(row) }, afterCommit);
    return row;
  });
}

export async function doChangeRealmDomain(services: ActionServices, realm: Realm, domain: RealmDomainRow, allowSubdomains: boolean): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    const row = await updateRealmDomainRow(tx, domain.id, allowSubdomains ? 1 : 0);
    await sendToRealm(services, tx, realm, { type: 'realm_domains', op: 'change', realm_domain: formatRealmDomain(row) }, afterCommit);
  });
}

/**
 * Removing the last allowed domain also turns emails_restricted_to_domains off (with its
 * realm event), as in Zulip: a restriction to no domains would only confuse.
 */
export async function doRemoveRealmDomain(services: ActionServices, realm: Realm, actingUser: User, domain: RealmDomainRow): Promise<void> {
  const remaining = await transaction(services.db, async (tx, afterCommit) => {
    await deleteRealmDomainRow(tx, domain.id);
    await sendToRealm(services, tx, realm, { type: 'realm_domains', op: 'remove', domain: domain.domain }, afterCommit);
    return countRealmDomains(tx, realm.id);
  });
  if (remaining === 0) {
    await doUpdateRealmSettings(services, realm, actingUser, { properties: { emails_restricted_to_domains: false }, groups: {} });
  }
}

/** Why an address may not join a realm restricted to its allowed domains (Zulip's messages). */
export type EmailDomainProblem = 'Outside your domain.' | 'Email addresses containing + are not allowed.';

/**
 * Zulip's get_realm_email_validator: when the realm setting emails_restricted_to_domains is
 * on, an address must not contain `+` in its local part and its domain must be an allowed
 * domain, or a subdomain of one that allows subdomains. Returns a checker so a list of
 * invitees costs one query. The address's syntax is the caller's to validate first.
 */
export async function realmEmailValidator(db: Tx, realm: Realm): Promise<(email: string) => EmailDomainProblem | null> {
  if (!realmSettings(realm).emails_restricted_to_domains) return () => null;
  const rows = await fetchRealmDomains(db, realm.id);
  const exact = new Set(rows.map((r) => r.domain));
  const withSubdomains = new Set(rows.filter((r) => r.allow_subdomains).map((r) => r.domain));
  return (email: string) => {
    const at = email.lastIndexOf('@');
    if (email.slice(0, Math.max(at, 0)).includes('+')) return 'Email addresses containing + are not allowed.';
    let domain = email.slice(at + 1).toLowerCase();
    if (at < 0 || domain === '') return 'Outside your domain.';
    if (exact.has(domain)) return null;
    while (domain.includes('.')) {
      domain = domain.slice(domain.indexOf('.') + 1);
      if (withSubdomains.has(domain)) return null;
    }
    return 'Outside your domain.';
  };
}

/** One address; for several, call realmEmailValidator once and reuse it. */
export async function emailAllowedForRealm(db: Tx, realm: Realm, email: string): Promise<EmailDomainProblem | null> {
  return (await realmEmailValidator(db, realm))(email);
}
