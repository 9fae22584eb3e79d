import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { fetchRealmDomains } from '../../db/repos/realm_domains.js';
import { formatRealmDomain } from '../../lib/format/realm_domains.js';
import {
  accessRealmDomain,
  checkAddRealmDomain,
  doAddRealmDomain,
  doChangeRealmDomain,
  doRemoveRealmDomain,
} from '../../actions/realm_domains.js';
import { requireOwner } from './params.js';

export function registerRealmDomainRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'GET',
    path: '/realm/domains',
    params: {},
    handler: async ({ realm }) => {
      const rows = await fetchRealmDomains(services.db.kysely, realm.id);
      return { domains: rows.map(formatRealmDomain) };
    },
  });

  // Owners only since Zulip 6.0 (feature level 143), like PATCH and DELETE.
  endpoint(app, services, {
    method: 'POST',
    path: '/realm/domains',
    authorize: requireOwner,
    params: { domain: p.str(), allow_subdomains: p.bool() },
    handler: async ({ realm, params }) => {
      const domain = await checkAddRealmDomain(services, realm, params.domain);
      const row = await doAddRealmDomain(services, realm, domain, params.allow_subdomains);
      return { new_domain: [row.id, row.domain] };
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/realm/domains/:domain',
    authorize: requireOwner,
    params: { domain: p.str(), allow_subdomains: p.bool() },
    handler: async ({ realm, params }) => {
      const row = await accessRealmDomain(services, realm, params.domain);
      await doChangeRealmDomain(services, realm, row, params.allow_subdomains);
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/realm/domains/:domain',
    authorize: requireOwner,
    params: { domain: p.str() },
    handler: async ({ realm, user, params }) => {
      const row = await accessRealmDomain(services, realm, params.domain);
      await doRemoveRealmDomain(services, realm, user, row);
    },
  });
}
