import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';
import type { EventBus } from '../bus.js';
import type { QueueManager } from '../queue_manager.js';
import { MemoryQueueManager } from './memory.js';
import { RedisQueueManager } from './redis.js';

/** In-memory queues for the embedded mode; Redis-shared queues when REDIS_URL is set. */
export function createQueueManager(config: Config, bus: EventBus, log: FastifyBaseLogger, databaseId: string): QueueManager {
  return config.redisUrl ? new RedisQueueManager(config, bus, log, databaseId) : new MemoryQueueManager(config, bus, log, databaseId);
}
