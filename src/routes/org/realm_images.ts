import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { filesOf } from '../../plugins/body.js';
import { checkRealmImage, doChangeRealmImage } from '../../actions/realm_images.js';
import { realmIconUrl, realmLogoUrl } from '../../lib/urls.js';
import { requireAdministrator } from './params.js';

/** The query string a client sent, passed on by the redirects below as Zulip does. */
function queryOf(url: string): string {
  const i = url.indexOf('?');
  return i < 0 ? '' : url.slice(i + 1);
}

/**
 * The organization's icon and wide logos (Zulip's zerver/views/realm_icon.py and
 * realm_logo.py): administrators upload or reset them; anyone in the organization may be
 * redirected to the current one. A reset keeps the stored file, as Zulip does, since cached
 * URLs may still name it; the next upload replaces it.
 */
export function registerRealmImageRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'POST',
    path: '/realm/icon',
    authorize: requireAdministrator,
    params: {},
    handler: async ({ realm, user, req }) => {
      const image = checkRealmImage('icon', filesOf(req));
      return { icon_url: await doChangeRealmImage(services, realm, user, 'icon', image) };
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/realm/icon',
    authorize: requireAdministrator,
    params: {},
    handler: async ({ realm, user }) => ({ icon_url: await doChangeRealmImage(services, realm, user, 'icon', null) }),
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/realm/icon',
    params: {},
    handler: async ({ realm, req, reply }) => {
      const extra = queryOf(req.url);
      return reply.redirect(`${realmIconUrl(services.config, realm)}${extra ? `&${extra}` : ''}`, 302);
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/realm/logo',
    authorize: requireAdministrator,
    params: { night: p.bool() },
    handler: async ({ realm, user, req, params }) => {
      const image = checkRealmImage('logo', filesOf(req));
      await doChangeRealmImage(services, realm, user, params.night ? 'night_logo' : 'logo', image);
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/realm/logo',
    authorize: requireAdministrator,
    params: { night: p.bool() },
    handler: async ({ realm, user, params }) => {
      await doChangeRealmImage(services, realm, user, params.night ? 'night_logo' : 'logo', null);
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/realm/logo',
    params: { night: p.bool() },
    handler: async ({ realm, params, reply }) => reply.redirect(realmLogoUrl(services.config, realm, params.night), 302),
  });
}
