import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';

export function registerEventRoutes(_app: FastifyInstance, _services: Services): void {}
