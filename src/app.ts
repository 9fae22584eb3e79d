import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Config } from './config.js';
import { migrate, openDatabase, type Database } from './db/index.js';
import { RedisCacheRemote } from './db/cache_remote.js';
import { fetchDatabaseId, redisNamespace } from './db/identity.js';
import { EventBus } from './events/bus.js';
import { createQueueManager } from './events/backends/index.js';
import { trackUnusedConnections } from './events/connections.js';
import type { Services } from './services.js';
import { createRateLimiter } from './plugins/rate_limit.js';
import { registerBodyParsers } from './plugins/body.js';
import { registerErrorHandling } from './plugins/errors.js';
import { clientErrorHandler, frameworkErrors, refuseDuringShutdown } from './plugins/limits.js';
import { requestSerializer } from './plugins/redact.js';
import { registerMetrics, registerRequestLog, type MetricsEndpoint } from './plugins/metrics.js';
import { ensureDefaultRealm } from './actions/bootstrap.js';
import { registerRoutes } from './routes/index.js';
import { serveLongPollsDirectly } from './routes/events/long_poll.js';
import { ScheduledMessageWorker } from './workers/scheduled_messages.js';
import { NotificationWorker } from './workers/notifications.js';
import type { EmailGatewayServer } from './workers/email_gateway.js';
import { OutgoingWebhookWorker } from './workers/outgoing_webhooks.js';
import { ThumbnailWorker } from './workers/thumbnails.js';
import { DigestWorker } from './workers/digests.js';
import { RealmExportWorker } from './workers/realm_exports.js';
import { LdapSyncWorker } from './workers/ldap_sync.js';
import { RetentionWorker } from './workers/retention.js';

export interface App {
  fastify: FastifyInstance;
  services: Services;
  /** The SMTP listener of the email gateway, when this process is configured with its port. */
  emailGateway: EmailGatewayServer | null;
  /** GET /metrics, when enabled (plugins/metrics.ts). */
  metrics: MetricsEndpoint | null;
  close(): Promise<void>;
}

export interface BuildOptions {
  /** Use this database instead of opening config.databaseUrl (tests share one). */
  db?: Database;
  /** Print the generated owner credentials on first start. */
  announce?: (line: string) => void;
}

/**
 * Other processes' commits must reach this process's read cache before a request reads it, so
 * that a change answered by one process (or made by `npx parley`) applies to the next request
 * here. Scaled out, through Redis; on PostgreSQL alone, through its notifications; both are
 * brought up to date at the start of every request (db/cache_remote.ts). SQLite reports other
 * connections' commits itself (data_version, db/index.ts). Returns the per-request check, for
 * the requests served before Fastify (routes/events/long_poll.ts), or null when there is none.
 */
async function connectReadCache(fastify: FastifyInstance, config: Config, db: Database, databaseId: string): Promise<(() => Promise<void>) | null> {
  if (config.redisUrl && !(db.cache.remote instanceof RedisCacheRemote)) {
    await db.cache.remote?.close();
    db.cache.remote = new RedisCacheRemote(config.redisUrl, redisNamespace(config.events.redisPrefix, databaseId), db.cache);
  }
  const remote = db.cache.remote;
  if (!remote) return null;
  await remote.sync();
  fastify.addHook('onRequest', async (req) => {
    if (req.routeOptions.config.probe) return;
    await remote.sync();
  });
  return () => remote.sync();
}

/** Builds the whole server without listening; server.ts and the tests call it. */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<App> {
  if (config.emailGateway.port !== null && !config.emailGateway.domain) {
    throw new Error('PARLEY_EMAIL_GATEWAY_PORT needs PARLEY_EMAIL_GATEWAY_DOMAIN: the domain of the addresses it accepts');
  }
  const fastify = Fastify({
    // Written synchronously, as process.stdout is, so that the log and what server.ts prints
    // appear in the order they happen. Request lines are logged only at debug level.
    logger: { stream: pino.destination({ dest: 1, sync: true }), level: config.logLevel, redact: ['req.headers.authorization', 'req.headers.cookie'], serializers: { req: requestSerializer } },
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
    trustProxy: config.trustedProxies,
    frameworkErrors,
    clientErrorHandler,
    return503OnClosing: false,
  });
  const db = options.db ?? openDatabase(config.databaseUrl, { observeQueries: config.metrics.enabled });
  await migrate(db);
  const databaseId = await fetchDatabaseId(db);
  const syncReadCache = await connectReadCache(fastify, config, db, databaseId);
  const events = new EventBus();
  const queues = createQueueManager(config, events, fastify.log, databaseId);
  await queues.start();
  const services: Services = { config, db, events, queues, log: fastify.log, rateLimiter: createRateLimiter(config, databaseId) };
  // As Zulip: the push notification service when configured, else the operator's own FCM/APNs credentials.
  if (config.pushBouncer.url) services.push = new (await import('./lib/push/bouncer.js')).BouncerPushSender(config, db, fastify.log);
  else if (config.fcm.credentialsPath || config.apns.keyFile) services.push = (await import('./lib/push/direct.js')).directPushSender(config, fastify.log) ?? undefined;
  const outgoingWebhooks = new OutgoingWebhookWorker(services, config.outgoingWebhookIntervalMs);
  services.outgoingWebhooks = outgoingWebhooks;
  // Request logging needs every request to go through Fastify.
  if (config.logLevel !== 'debug') serveLongPollsDirectly(fastify.server, services, syncReadCache);
  // Held GET /events requests (and unused client connections) would keep close() waiting.
  const closeUnusedConnections = trackUnusedConnections(fastify.server);
  fastify.addHook('preClose', (done) => {
    queues.releaseWaiters();
    closeUnusedConnections();
    done();
  });

  registerRequestLog(fastify, config.logLevel);
  const metrics = await registerMetrics(fastify, services);
  registerBodyParsers(fastify, config.bodyLimitBytes);
  registerErrorHandling(fastify);
  refuseDuringShutdown(fastify);
  registerRoutes(fastify, services);
  await ensureDefaultRealm(services, options.announce ?? ((line) => fastify.log.info(line)));
  const scheduler = config.scheduler.enabled ? new ScheduledMessageWorker(services, config.scheduler.intervalMs) : null;
  if (scheduler) {
    services.scheduler = scheduler;
    scheduler.start();
  }
  const thumbnailer = config.thumbnailer.enabled ? new ThumbnailWorker(services, config.thumbnailer.intervalMs) : null;
  if (thumbnailer) {
    services.thumbnails = thumbnailer;
    thumbnailer.start();
  }
  const notifications = config.notifications.enabled ? new NotificationWorker(services, config.notifications.intervalMs) : null;
  if (notifications) {
    services.notifications = notifications;
    notifications.start();
  }
  outgoingWebhooks.start();
  const retention = config.retention.enabled ? new RetentionWorker(services, config.retention.intervalMs) : null;
  retention?.start();
  const digests = config.digests.enabled ? new DigestWorker(services, config.digests.intervalMs) : null;
  digests?.start();
  const realmExports = new RealmExportWorker(services);
  services.realmExports = realmExports;
  realmExports.start();
  const ldapSync = config.ldap && config.ldap.syncIntervalMinutes > 0 ? new LdapSyncWorker(services, config.ldap) : null;
  ldapSync?.start();
  // Loaded only where configured: its MIME parser costs every other start for nothing.
  const emailGateway = config.emailGateway.port !== null ? new (await import('./workers/email_gateway.js')).EmailGatewayServer(services) : null;
  if (emailGateway) {
    const { address, port } = await emailGateway.listen();
    fastify.log.info(`Email gateway listening for ${config.emailGateway.domain} on ${address}:${port}`);
  }

  return {
    fastify,
    services,
    emailGateway,
    metrics,
    async close() {
      await emailGateway?.close();
      await metrics?.close();
      await fastify.close();
      await scheduler?.stop();
      await thumbnailer?.stop();
      await notifications?.stop();
      await digests?.stop();
      services.push?.close?.();
      await retention?.stop();
      await ldapSync?.stop();
      await realmExports.stop();
      await outgoingWebhooks.stop();
      await queues.close();
      await services.rateLimiter.close();
      if (!options.db) await db.close();
    },
  };
}
