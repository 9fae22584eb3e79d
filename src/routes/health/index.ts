import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { pingDatabase } from '../../db/repos/health.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A health probe: skips the per-request read-cache sync, which needs Redis (app.ts). */
    probe?: boolean;
  }
}

/** How long a readiness check waits for the database or Redis before calling it unreachable. */
const CHECK_TIMEOUT_MS = 2000;

function withinTimeout(work: Promise<void>): Promise<'ok' | 'unreachable'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'unreachable'>((resolve) => {
    timer = setTimeout(() => resolve('unreachable'), CHECK_TIMEOUT_MS);
  });
  return Promise.race([work.then(() => 'ok' as const, () => 'unreachable' as const), timeout]).finally(() => clearTimeout(timer));
}

/**
 * Probes for load balancers and orchestrators. Plain Fastify routes rather than endpoint():
 * no organization by Host, no authentication and no rate limit, so that a probe never fails
 * for a reason other than the server's own health.
 *
 * GET /health is liveness: the process answers. GET /health/ready is readiness: the database
 * and, when configured, Redis answer within CHECK_TIMEOUT_MS; otherwise 503 with each
 * check's state, so a balancer stops sending traffic until they are back.
 */
export function registerHealthRoutes(app: FastifyInstance, services: Services): void {
  app.get('/health', { config: { probe: true } }, async (_req, reply) => {
    void reply.header('Cache-Control', 'no-store');
    return { result: 'success', msg: '' };
  });

  app.get('/health/ready', { config: { probe: true } }, async (_req, reply) => {
    void reply.header('Cache-Control', 'no-store');
    const [database, redis] = await Promise.all([
      withinTimeout(pingDatabase(services.db.kysely)),
      services.config.redisUrl ? withinTimeout(services.queues.ping()) : Promise.resolve(null),
    ]);
    const checks: Record<string, string> = { database };
    if (redis !== null) checks.redis = redis;
    const failed = Object.entries(checks).filter(([, state]) => state !== 'ok').map(([name]) => name);
    if (failed.length === 0) return { result: 'success', msg: '', checks };
    services.log.warn({ checks }, 'readiness check failed');
    return reply.code(503).send({ result: 'error', msg: `Not ready: ${failed.join(' and ')} unreachable`, code: 'SERVER_NOT_READY', checks });
  });
}
