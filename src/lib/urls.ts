import type { Config } from '../config.js';
import type { Realm } from '../db/tables.js';

/** The absolute base URL of a realm: the external URL, with the realm's subdomain if it has one. */
export function realmUrl(config: Config, realm: Pick<Realm, 'string_id'>): string {
  if (!realm.string_id) return config.externalUrl;
  const u = new URL(config.externalUrl);
  u.hostname = `${realm.string_id}.${u.hostname}`;
  return u.toString().replace(/\/+$/, '');
}

export function realmHost(config: Config, realm: Pick<Realm, 'string_id'>): string {
  return new URL(realmUrl(config, realm)).hostname;
}

/** Where uploaded organization images are stored, served under /user_avatars/<realm id>/realm/. */
export const REALM_IMAGE_FILES = { icon: 'realm/icon.png', logo: 'realm/logo.png', night_logo: 'realm/night_logo.png' } as const;

/**
 * Zulip's realm_icon_url: the uploaded icon ('U'), else the default. Zulip's default ('G') is
 * a Gravatar identicon of the organization's string_id; Parley serves its own image instead,
 * so that an organization's name never leaves the server and offline installations work.
 */
export function realmIconUrl(config: Config, realm: Pick<Realm, 'id' | 'string_id' | 'icon_source' | 'icon_version'>): string {
  const base = realmUrl(config, realm);
  if (realm.icon_source === 'U') return `${base}/user_avatars/${realm.id}/${REALM_IMAGE_FILES.icon}?version=${realm.icon_version}`;
  return `${base}/static/images/realm-icon.png?version=${realm.icon_version}`;
}

/** Zulip's get_realm_logo_url: the uploaded wide logo ('U') for the theme, else the default. */
export function realmLogoUrl(
  config: Config,
  realm: Pick<Realm, 'id' | 'string_id' | 'logo_source' | 'logo_version' | 'night_logo_source' | 'night_logo_version'>,
  night: boolean,
): string {
  const base = realmUrl(config, realm);
  const [source, version] = night ? [realm.night_logo_source, realm.night_logo_version] : [realm.logo_source, realm.logo_version];
  if (source === 'U') return `${base}/user_avatars/${realm.id}/${night ? REALM_IMAGE_FILES.night_logo : REALM_IMAGE_FILES.logo}?version=${version}`;
  return `${base}/static/images/realm-logo.svg?version=${version}`;
}
