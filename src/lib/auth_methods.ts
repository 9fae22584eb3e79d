import type { Config } from '../config.js';
import type { Realm } from '../db/tables.js';

/**
 * The ways into an organization, by Zulip's backend names (AUTH_BACKEND_NAME_MAP): those this
 * server is configured for, and of those the ones the organization has switched on.
 */
export type AuthBackendName = 'Email' | 'LDAP';

/** Backends this server's configuration provides (Zulip's "available"). */
export function availableAuthBackends(config: Config): AuthBackendName[] {
  const out: AuthBackendName[] = ['Email'];
  if (config.ldap) out.push('LDAP');
  return out;
}

/** Backend name -> enabled for this organization, for the backends this server provides only (Zulip's authentication_methods_dict). */
export function realmAuthMethods(config: Config, realm: Realm): Partial<Record<AuthBackendName, boolean>> {
  void realm;
  return Object.fromEntries(availableAuthBackends(config).map((name) => [name, true]));
}

/**
 * Zulip's require_email_format_usernames: with a directory whose usernames are not emails
 * (LDAP_APPEND_DOMAIN or LDAP_EMAIL_ATTR set), apps must not insist on an email address.
 */
export function requireEmailFormatUsernames(config: Config, realm: Realm): boolean {
  const ldap = config.ldap;
  return !(realmAuthMethods(config, realm).LDAP === true && ldap && (ldap.appendDomain || ldap.emailAttr));
}
