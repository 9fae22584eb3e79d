import { createServer, type Server } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { pino } from 'pino';
import type { Registry } from 'prom-client';
import type { Services } from '../services.js';
import { runtimeCounters } from '../lib/runtime_counters.js';
import { safeEqual } from './auth.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated user, once endpoint() has one (for the request log and metrics). */
    userId: number | null;
  }
}

export interface MetricsEndpoint {
  port: number | null;
  close(): Promise<void>;
}

/** Latency buckets (seconds) from a cached read to a slow search. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * One info line per request answered through Fastify, with what an operator searches by and
 * nothing secret: the route pattern (never the URL, whose query may hold an api_key), the
 * status, the time and the user. LOG_LEVEL=warn turns it off. GET /events long-polls served
 * before Fastify (routes/events/long_poll.ts) are not logged; the metrics count them.
 */
export function registerRequestLog(fastify: FastifyInstance, logLevel: string): void {
  fastify.decorateRequest('userId', null);
  if ((pino.levels.values[logLevel] ?? Infinity) > pino.levels.values.info!) return;
  fastify.addHook('onResponse', async (req, reply) => {
    req.log.info(
      { method: req.method, route: req.routeOptions.url ?? null, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10, user_id: req.userId },
      'request',
    );
  });
}

/**
 * GET /metrics in Prometheus' text format, when enabled: request counts and latencies per
 * route pattern, status and method, event queues, held long-polls, events queued, messages
 * sent, database queries and pool, and prom-client's process metrics (event-loop delay,
 * memory, CPU, GC). prom-client is loaded only then. Returns the port of the separate
 * listener (null: served on the main port) and what app.close() must close.
 */
export async function registerMetrics(fastify: FastifyInstance, services: Services): Promise<MetricsEndpoint | null> {
  const { enabled, port, host, token } = services.config.metrics;
  if (!enabled) return null;
  const client = await import('prom-client');
  const registry: Registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const requests = new client.Counter({
    name: 'parley_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const latency = new client.Histogram({
    name: 'parley_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const { queues, db } = services;
  new client.Gauge({ name: 'parley_event_queues', help: 'Event queues held by this process', registers: [registry], collect() { this.set(queues.queueCount); } });
  new client.Gauge({ name: 'parley_long_polls_held', help: 'GET /events requests waiting for an event', registers: [registry], collect() { this.set(queues.heldPollCount); } });
  const total = (name: string, help: string, read: () => number): void => {
    new client.Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  };
  total('parley_events_queued_total', 'Events added to event queues of this process (heartbeats excluded)', () => runtimeCounters.eventsQueued);
  total('parley_messages_sent_total', 'Messages sent through this process', () => runtimeCounters.messagesSent);
  total('parley_db_queries_total', 'Database queries run by this process', () => runtimeCounters.dbQueries);
  total('parley_db_query_seconds_total', 'Time spent in database queries, summed', () => runtimeCounters.dbQuerySeconds);
  if (db.poolStats) {
    const stats = db.poolStats;
    new client.Gauge({
      name: 'parley_db_pool_connections',
      help: 'PostgreSQL pool connections by state (idle, busy) and queries waiting for one',
      labelNames: ['state'] as const,
      registers: [registry],
      collect() {
        const s = stats();
        this.set({ state: 'idle' }, s.idle);
        this.set({ state: 'busy' }, s.total - s.idle);
        this.set({ state: 'waiting' }, s.waiting);
      },
    });
  }

  fastify.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    requests.inc({ method: req.method, route, status: reply.statusCode });
    latency.observe({ method: req.method, route }, reply.elapsedTime / 1000);
  });

  const authorized = (header: string | undefined): boolean => token === null || (header !== undefined && safeEqual(header, `Bearer ${token}`));
  const refusal = JSON.stringify({ result: 'error', msg: 'Missing or wrong metrics token', code: 'UNAUTHORIZED' });

  if (port === null) {
    fastify.get('/metrics', { config: { probe: true } }, async (req: FastifyRequest, reply: FastifyReply) => {
      void reply.header('Cache-Control', 'no-store');
      if (!authorized(req.headers.authorization)) return reply.code(401).type('application/json').send(refusal);
      return reply.type(registry.contentType).send(await registry.metrics());
    });
    return { port: null, close: async () => registry.clear() };
  }
  const server: Server = createServer((req, res) => {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/metrics' || req.method !== 'GET') {
      res.writeHead(404).end();
      return;
    }
    if (!authorized(req.headers.authorization)) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(refusal);
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(text),
      (e: unknown) => res.writeHead(500).end(String(e)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const listening = typeof address === 'object' && address ? address.port : port;
  services.log.info(`Metrics on http://${host}:${listening}/metrics`);
  return {
    port: listening,
    close: async () => {
      registry.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
