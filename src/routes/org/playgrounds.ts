import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { badRequest } from '../../errors.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { accessRealmPlayground, checkAddRealmPlayground, doAddRealmPlayground, doRemoveRealmPlayground } from '../../actions/realm_playgrounds.js';
import { codePointLength } from '../../lib/topics.js';
import { requireAdministrator } from './params.js';

/** Zulip's RealmPlayground.MAX_PYGMENTS_LANGUAGE_LENGTH. */
const MAX_PYGMENTS_LANGUAGE_LENGTH = 40;

/**
 * Zulip's check_pygments_language: any language name made of these characters, so a
 * playground can serve a language Pygments does not know. (`+-.` is a range, as in Zulip's
 * regular expression, so `,` is allowed too.)
 */
const pygmentsLanguage = p.custom((raw, name) => {
  if (codePointLength(raw) > MAX_PYGMENTS_LANGUAGE_LENGTH) {
    throw badRequest(`${name} is too long (limit: ${MAX_PYGMENTS_LANGUAGE_LENGTH} characters)`);
  }
  if (!/^[ a-zA-Z0-9_+-./#]*$/.test(raw)) throw badRequest('Invalid characters in pygments language');
  return raw.trim();
});

export function registerPlaygroundRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'POST',
    path: '/realm/playgrounds',
    authorize: requireAdministrator,
    params: {
      name: p.str(),
      // The spec's name for Zulip's `pygments_language`.
      pygments_language: pygmentsLanguage.alias('highlighter_language'),
      url_template: p.str(),
    },
    handler: async ({ realm, params }) => {
      const playground = { name: params.name.trim(), pygmentsLanguage: params.pygments_language, urlTemplate: params.url_template.trim() };
      await checkAddRealmPlayground(services, realm, playground);
      const row = await doAddRealmPlayground(services, realm, playground);
      return { id: row.id };
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/realm/playgrounds/:playground_id',
    authorize: requireAdministrator,
    params: { playground_id: p.int() },
    handler: async ({ realm, params }) => {
      const playground = await accessRealmPlayground(services, realm, params.playground_id);
      await doRemoveRealmPlayground(services, realm, playground);
    },
  });
}
