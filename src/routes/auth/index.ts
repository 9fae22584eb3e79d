import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { checkFetchApiKey } from '../../actions/auth.js';

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
}
