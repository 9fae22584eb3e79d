import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { registerRealmSettingsRoutes } from './realm.js';

export function registerSettingsRoutes(app: FastifyInstance, services: Services): void {
  registerRealmSettingsRoutes(app, services);
}
