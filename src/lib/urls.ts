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

export function realmIconUrl(config: Config, realm: Pick<Realm, 'string_id' | 'icon_version'>): string {
  return `${realmUrl(config, realm)}/static/images/logo/zulip-icon-128x128.png?version=${realm.icon_version}`;
}
