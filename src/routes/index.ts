import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import { registerServerRoutes } from './server/index.js';
import { registerAuthRoutes } from './auth/index.js';

/** Every API area, in a fixed order. Each area registers its endpoints through endpoint(). */
export function registerRoutes(app: FastifyInstance, services: Services): void {
  registerServerRoutes(app, services);
  registerAuthRoutes(app, services);
}
