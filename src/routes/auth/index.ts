import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { checkFetchApiKey, checkJwtFetchApiKey } from '../../actions/auth.js';
import { getUserForApi } from '../../lib/users.js';

export function registerAuthRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'POST',
    path: '/fetch_api_key',
    auth: 'none',
    params: { username: p.str(), password: p.str() },
    handler: async ({ realm, params }) => {
      const user = await checkFetchApiKey(services, realm, params.username, params.password);
      return { api_key: user.api_key, email: user.email, user_id: user.id };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/jwt/fetch_api_key',
    auth: 'none',
    params: { token: p.str().default(''), include_profile: p.bool().default(false) },
    handler: async ({ realm, params }) => {
      const user = await checkJwtFetchApiKey(services, realm, params.token);
      const out: Record<string, unknown> = { api_key: user.api_key, email: user.delivery_email };
      if (params.include_profile) {
        out.user = await getUserForApi(services.db.kysely, services.config, realm, user, user, { clientGravatar: false, includeCustomProfileFields: false });
      }
      return out;
    },
  });
}
