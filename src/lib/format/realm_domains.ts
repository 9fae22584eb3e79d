import type { RealmDomainRow } from '../../db/repos/realm_domains.js';

export interface RealmDomainDict {
  domain: string;
  allow_subdomains: boolean;
}

export function formatRealmDomain(row: RealmDomainRow): RealmDomainDict {
  return { domain: row.domain, allow_subdomains: !!row.allow_subdomains };
}
