import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import { registerServerRoutes } from './server/index.js';
import { registerAuthRoutes } from './auth/index.js';
import { registerUserRoutes } from './users/index.js';
import { registerStreamRoutes } from './streams/index.js';
import { registerSettingsRoutes } from './settings/index.js';
import { registerMessageRoutes } from './messages/index.js';
import { registerEventRoutes } from './events/index.js';
import { registerOrgRoutes } from './org/index.js';
import { registerGroupRoutes } from './groups/index.js';
import { registerCallRoutes } from './calls/index.js';
import { registerInviteRoutes } from './invites/index.js';
import { registerFeatureRoutes } from './features/index.js';
import { registerHealthRoutes } from './health/index.js';
import { registerStaticRoutes } from './static/index.js';
import { registerIntegrationRoutes } from './integrations/index.js';
import { registerWebRoutes } from './web/index.js';
import { registerOidcRoutes } from './web/oidc.js';
import { registerTwoFactorRoutes } from './settings/two_factor.js';
import { registerNotificationRoutes } from './notifications/index.js';
import { registerPasswordResetRoutes } from './web/password_reset.js';

/** Every API area, in a fixed order. Each area registers its endpoints through endpoint(). */
export function registerRoutes(app: FastifyInstance, services: Services): void {
  registerHealthRoutes(app, services);
  registerStaticRoutes(app);
  registerServerRoutes(app, services);
  registerAuthRoutes(app, services);
  registerUserRoutes(app, services);
  registerStreamRoutes(app, services);
  registerSettingsRoutes(app, services);
  registerMessageRoutes(app, services);
  registerEventRoutes(app, services);
  registerOrgRoutes(app, services);
  registerGroupRoutes(app, services);
  registerCallRoutes(app, services);
  registerInviteRoutes(app, services);
  registerFeatureRoutes(app, services);
  registerIntegrationRoutes(app, services);
  registerNotificationRoutes(app, services);
  registerWebRoutes(app, services);
  registerOidcRoutes(app, services);
  registerTwoFactorRoutes(app, services);
  registerPasswordResetRoutes(app, services);
}
