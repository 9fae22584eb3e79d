import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { checkFetchApiKey, checkJwtFetchApiKey } from '../../actions/auth.js';
import { getUserForApi } from '../../lib/users.js';
import { createMailer } from '../../lib/email.js';
import { notifyNewLogin } from '../../actions/password_reset.js';

export function registerAuthRoutes(app: FastifyInstance, services: Services): void {
  const mailer = createMailer(services.config, services.log);
  app.addHook('onClose', async () => mailer.close());
  endpoint(app, services, {
    method: 'POST',
    path: '/fetch_api_key',
    auth: 'none',
    params: { username: p.str(), password: p.str() },
    handler: async ({ realm, params, req }) => {
      const user = await checkFetchApiKey(services, realm, params.username, params.password);
      notifyNewLogin(services, mailer, realm, user, { userAgent: req.headers['user-agent'] ?? '', ip: req.ip });
      return { api_key: user.api_key, email: user.email, user_id: user.id };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/jwt/fetch_api_key',
    auth: 'none',
    params: { token: p.str().default(''), include_profile: p.bool().default(false) },
    handler: async ({ realm, params, req }) => {
      const user = await checkJwtFetchApiKey(services, realm, params.token);
      notifyNewLogin(services, mailer, realm, user, { userAgent: req.headers['user-agent'] ?? '', ip: req.ip });
      const out: Record<string, unknown> = { api_key: user.api_key, email: user.delivery_email };
      if (params.include_profile) {
        out.user = await getUserForApi(services.db.kysely, services.config, realm, user, user, { clientGravatar: false, includeCustomProfileFields: false });
      }
      return out;
    },
  });
}
