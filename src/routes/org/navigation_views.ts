import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { fetchUserNavigationViews } from '../../db/repos/navigation_views.js';
import { formatNavigationView } from '../../lib/format/navigation_views.js';
import {
  accessNavigationView,
  checkAddNavigationView,
  checkUpdateNavigationView,
  doAddNavigationView,
  doRemoveNavigationView,
  doUpdateNavigationView,
} from '../../actions/navigation_views.js';
import { strippedString } from './params.js';

/** Fragments such as `narrow/is/alerted` contain slashes, so the path ends in a wildcard. */
const pathFragment = (req: FastifyRequest): string => (req.params as { '*': string })['*'];

export function registerNavigationViewRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'GET',
    path: '/navigation_views',
    params: {},
    handler: async ({ user }) => {
      const rows = await fetchUserNavigationViews(services.db.kysely, user.id);
      return { navigation_views: rows.map(formatNavigationView) };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/navigation_views',
    params: {
      fragment: strippedString(),
      is_pinned: p.bool(),
      name: strippedString().optional(),
    },
    handler: async ({ user, params }) => {
      const name = params.name ?? null;
      await checkAddNavigationView(services, user, params.fragment, name);
      await doAddNavigationView(services, user, { fragment: params.fragment, isPinned: params.is_pinned, name });
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/navigation_views/*',
    params: {
      is_pinned: p.bool().optional(),
      name: strippedString().optional(),
    },
    handler: async ({ user, params, req }) => {
      const fragment = pathFragment(req);
      await checkUpdateNavigationView(services, user, fragment, params.name);
      const view = await accessNavigationView(services, user, fragment);
      await doUpdateNavigationView(services, user, view, { isPinned: params.is_pinned, name: params.name });
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/navigation_views/*',
    params: {},
    handler: async ({ user, req }) => {
      const view = await accessNavigationView(services, user, pathFragment(req));
      await doRemoveNavigationView(services, user, view);
    },
  });
}
