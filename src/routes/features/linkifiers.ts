import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import {
  accessLinkifier,
  checkLinkifier,
  checkReorderLinkifiers,
  doAddLinkifier,
  doRemoveLinkifier,
  doReorderLinkifiers,
  doUpdateLinkifier,
} from '../../actions/linkifiers.js';
import { fetchLinkifiers } from '../../db/repos/settings.js';
import { endpoint } from '../endpoint.js';
import { requireAdministrator } from '../org/params.js';
import { p } from '../params.js';

/** Linkifiers: listed for everyone; added (under the legacy /realm/filters path), changed and reordered by administrators. */
export function registerLinkifierRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'GET',
    path: '/realm/linkifiers',
    params: {},
    handler: async ({ realm }) => ({ linkifiers: await fetchLinkifiers(services.db.kysely, realm.id) }),
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/realm/linkifiers',
    authorize: requireAdministrator,
    params: { ordered_linkifier_ids: p.intList() },
    handler: async ({ params, realm }) => {
      await checkReorderLinkifiers(services, realm, params.ordered_linkifier_ids);
      await doReorderLinkifiers(services, realm, params.ordered_linkifier_ids);
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/realm/filters',
    authorize: requireAdministrator,
    params: { pattern: p.str(), url_template: p.str() },
    handler: async ({ params, realm }) => {
      const l = { pattern: params.pattern, urlTemplate: params.url_template };
      await checkLinkifier(services, realm, l);
      return { id: await doAddLinkifier(services, realm, l) };
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/realm/filters/:filter_id',
    authorize: requireAdministrator,
    params: { filter_id: p.int(), pattern: p.str(), url_template: p.str() },
    handler: async ({ params, realm }) => {
      const row = await accessLinkifier(services, realm, params.filter_id);
      const l = { pattern: params.pattern, urlTemplate: params.url_template };
      await checkLinkifier(services, realm, l, row.id);
      await doUpdateLinkifier(services, realm, row, l);
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/realm/filters/:filter_id',
    authorize: requireAdministrator,
    params: { filter_id: p.int() },
    handler: async ({ params, realm }) => {
      const row = await accessLinkifier(services, realm, params.filter_id);
      await doRemoveLinkifier(services, realm, row);
    },
  });
}
