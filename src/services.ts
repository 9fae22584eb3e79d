import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import type { Database } from './db/index.js';
import type { EventBus } from './events/bus.js';
import type { QueueManager } from './events/queue_manager.js';
import type { PushSender } from './lib/push/sender.js';
import type { RateLimiter } from './plugins/rate_limit.js';

/**
 * What actions need from the running process: configuration, the database and the
 * event bus. Built once by buildApp (or by the CLI) and passed down explicitly.
 */
export interface Services {
  config: Config;
  db: Database;
  events: EventBus;
  /** Event queues behind POST /register and GET /events (in memory, or shared through Redis). */
  queues: QueueManager;
  log: FastifyBaseLogger;
  rateLimiter: RateLimiter;
  /** The scheduled-message worker of this process, when it runs one (not in CLI commands). */
  scheduler?: { wake(timestamp: number): void };
  /** Delivers mobile push notifications; unset means they are only logged (lib/push). */
  push?: PushSender;
}
