import type { Config } from '../config.js';
import type { Realm } from '../db/tables.js';

/**
 * The ways into an organization, by Zulip's backend names (AUTH_BACKEND_NAME_MAP): those this
 * server is configured for, and of those the ones the organization has not switched off
 * (PATCH /realm authentication_methods). The switched-off ones are kept in the realm's settings
 * JSON under their own key, beside (not among) the Zulip realm properties.
 */
export const AUTH_BACKEND_NAMES = ['Email', 'LDAP', 'OpenID Connect'] as const;
export type AuthBackendName = (typeof AUTH_BACKEND_NAMES)[number];

const DISABLED_KEY = 'disabled_authentication_methods';

/** Backends this server's configuration provides (Zulip's "available"). */
export function availableAuthBackends(config: Config): AuthBackendName[] {
  const out: AuthBackendName[] = ['Email'];
  if (config.ldap) out.push('LDAP');
  if (config.oidc.length) out.push('OpenID Connect');
  return out;
}

/**
 * Zulip's get_external_method_dicts: one button per identity provider while the organization
 * has OpenID Connect on. Several providers are named `oidc:<key>` as Zulip names its several
 * SAML IdPs (`saml:<key>`); the apps open login_url with `?mobile_flow_otp=...` appended.
 */
export function externalAuthMethods(config: Config, realm: Pick<Realm, 'settings'>): Array<{ name: string; display_name: string; display_icon: string | null; login_url: string; signup_url: string }> {
  if (!realmAuthMethods(config, realm)['OpenID Connect']) return [];
  return config.oidc.map((idp) => ({
    name: `oidc:${idp.key}`,
    display_name: idp.displayName,
    display_icon: idp.displayIcon,
    login_url: `/accounts/login/social/oidc/${idp.key}`,
    signup_url: `/accounts/register/social/oidc/${idp.key}`,
  }));
}

function disabledBackends(realm: Pick<Realm, 'settings'>): string[] {
  try {
    const v = (JSON.parse(realm.settings) as Record<string, unknown>)[DISABLED_KEY];
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** The settings JSON with `disabled` as the switched-off backends. */
export function settingsWithDisabledBackends(settingsText: string, disabled: readonly AuthBackendName[]): string {
  let stored: Record<string, unknown>;
  try {
    stored = JSON.parse(settingsText) as Record<string, unknown>;
  } catch {
    stored = {};
  }
  if (disabled.length) stored[DISABLED_KEY] = [...disabled];
  else delete stored[DISABLED_KEY];
  return JSON.stringify(stored);
}

/** Backend name -> enabled for this organization, for the backends this server provides only (Zulip's authentication_methods_dict). */
export function realmAuthMethods(config: Config, realm: Pick<Realm, 'settings'>): Partial<Record<AuthBackendName, boolean>> {
  const disabled = disabledBackends(realm);
  return Object.fromEntries(availableAuthBackends(config).map((name) => [name, !disabled.includes(name)]));
}

/** realm_authentication_methods as POST /register and the realm update_dict event carry it. */
export function formatRealmAuthMethods(config: Config, realm: Pick<Realm, 'settings'>): Record<string, { enabled: boolean; available: boolean }> {
  return Object.fromEntries(Object.entries(realmAuthMethods(config, realm)).map(([k, enabled]) => [k, { enabled, available: true }]));
}

/**
 * Zulip's require_email_format_usernames: with a directory whose usernames are not emails
 * (LDAP_APPEND_DOMAIN or LDAP_EMAIL_ATTR set), apps must not insist on an email address.
 */
export function requireEmailFormatUsernames(config: Config, realm: Realm): boolean {
  const ldap = config.ldap;
  return !(realmAuthMethods(config, realm).LDAP === true && ldap && (ldap.appendDomain || ldap.emailAttr));
}
