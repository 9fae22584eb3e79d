import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { migrate, openDatabase, type Database } from './db/index.js';
import { EventBus } from './events/bus.js';
import { createQueueManager } from './events/backends/index.js';
import { trackUnusedConnections } from './events/connections.js';
import type { Services } from './services.js';
import { createRateLimiter } from './plugins/rate_limit.js';
import { registerBodyParsers } from './plugins/body.js';
import { registerErrorHandling } from './plugins/errors.js';
import { ensureDefaultRealm } from './actions/bootstrap.js';
import { registerRoutes } from './routes/index.js';

export interface App {
  fastify: FastifyInstance;
  services: Services;
  close(): Promise<void>;
}

export interface BuildOptions {
  /** Use this database instead of opening config.databaseUrl (tests share one). */
  db?: Database;
  /** Print the generated owner credentials on first start. */
  announce?: (line: string) => void;
}

/** Builds the whole server without listening; server.ts and the tests call it. */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<App> {
  const fastify = Fastify({
    logger: { level: config.logLevel, redact: ['req.headers.authorization', 'req.headers.cookie'] },
    bodyLimit: config.bodyLimitBytes,
    routerOptions: {
      ignoreDuplicateSlashes: true,
      ignoreTrailingSlash: true,
      maxParamLength: 1000,
      // Last value wins for a repeated name, as in Django's QueryDict.
      querystringParser: (s: string) => {
        const out: Record<string, string> = Object.create(null);
        for (const [k, v] of new URLSearchParams(s)) out[k] = v;
        return out;
      },
    },
    logController: new LogController({ disableRequestLogging: config.logLevel !== 'debug' }),
    trustProxy: true,
  });
  const db = options.db ?? openDatabase(config.databaseUrl);
  await migrate(db);
  const events = new EventBus();
  const queues = createQueueManager(config, events, fastify.log);
  await queues.start();
  const services: Services = { config, db, events, queues, log: fastify.log, rateLimiter: createRateLimiter(config) };
  // Held GET /events requests (and unused client connections) would keep close() waiting.
  const closeUnusedConnections = trackUnusedConnections(fastify.server);
  fastify.addHook('preClose', (done) => {
    queues.releaseWaiters();
    closeUnusedConnections();
    done();
  });

  registerBodyParsers(fastify, config.bodyLimitBytes);
  registerErrorHandling(fastify);
  registerRoutes(fastify, services);
  await ensureDefaultRealm(services, options.announce ?? ((line) => fastify.log.info(line)));

  return {
    fastify,
    services,
    async close() {
      await fastify.close();
      await queues.close();
      await services.rateLimiter.close();
      if (!options.db) await db.close();
    },
  };
}
