import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { registerRealmSettingsRoutes, registerRealmUserSettingsDefaultsRoutes } from './realm.js';
import { registerUserSettingsRoutes } from './user.js';

export function registerSettingsRoutes(app: FastifyInstance, services: Services): void {
  registerRealmSettingsRoutes(app, services);
  registerRealmUserSettingsDefaultsRoutes(app, services);
  registerUserSettingsRoutes(app, services);
}
