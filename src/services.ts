import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import type { Database } from './db/index.js';
import type { EventBus } from './events/bus.js';
import type { QueueManager } from './events/queue_manager.js';
import type { PushSender } from './lib/push/sender.js';
import type { RateLimiter } from './plugins/rate_limit.js';

/**
 * What actions need: configuration, the database, the event bus they send their events on,
 * and a logger. The CLI builds only this (cli/context.ts): no event queues, no rate limiter.
 */
export interface ActionServices {
  config: Config;
  db: Database;
  events: EventBus;
  log: FastifyBaseLogger;
  /** The scheduled-message worker of this process, when it runs one (not in CLI commands). */
  scheduler?: { wake(timestamp: number): void };
  /** Delivers mobile push notifications; unset means they are only logged (lib/push). */
  push?: PushSender;
  /** The notification worker of this process (workers/notifications.ts); not in CLI commands. */
  notifications?: { wake(): void };
  /** The outgoing-webhook worker of this process (workers/outgoing_webhooks.ts); not in CLI commands. */
  outgoingWebhooks?: { wake(): void };
  /** The thumbnail worker of this process (workers/thumbnails.ts), when it runs one. */
  thumbnails?: { wake(): void };
  /** The data export worker of this process (workers/realm_exports.ts); not in CLI commands. */
  realmExports?: { wake(): void };
}

/** What the running server adds for its routes. Built once by buildApp and passed down explicitly. */
export interface Services extends ActionServices {
  /** Event queues behind POST /register and GET /events (in memory, or shared through Redis). */
  queues: QueueManager;
  rateLimiter: RateLimiter;
}
