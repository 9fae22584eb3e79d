import type { FastifyReply, FastifyRequest } from 'fastify';
import { lazyRequire } from '../lib/lazy.js';
import type { Config } from '../config.js';
import { redisNamespace } from '../db/identity.js';
import { JsonableError } from '../errors.js';
import { MemoryRateLimitBackend, RedisRateLimitBackend, type RateLimitBackend, type RateLimitDecision, type RateLimitRule } from '../lib/rate_limit.js';

/**
 * Zulip's rate limits: API requests per user (or per IP address when unauthenticated), and
 * password attempts per username. Counted in memory, or in Redis when REDIS_URL is set so
 * that every process shares one budget.
 */
const EMAIL_MIRROR_RULES: RateLimitRule[] = [
  [60, 50],
  [300, 120],
  [3600, 600],
];

export class RateLimiter {
  private readonly apiByUser: RateLimitRule[];
  private readonly apiByIp: RateLimitRule[];
  private readonly authByUsername: RateLimitRule[];

  constructor(
    private readonly config: Config['rateLimits'],
    private readonly backend: RateLimitBackend,
  ) {
    this.apiByUser = [[60, config.apiPerMinute]];
    this.apiByIp = [[60, config.ipPerMinute]];
    this.authByUsername = [[config.authWindowSeconds, config.authAttempts]];
  }

  get enabled(): boolean {
    return this.config.enabled;
  }

  private async hit(key: string, rules: RateLimitRule[]): Promise<RateLimitDecision | null> {
    if (!this.config.enabled) return null;
    const d = await this.backend.hit(key, rules, Date.now());
    if (!d.allowed) {
      // zulip.yaml types retry-after as an integer: round up so a client waiting that long gets through.
      throw new JsonableError('API usage exceeded rate limit', 'RATE_LIMIT_HIT', 429, { 'retry-after': Math.max(1, Math.ceil(d.retryAfter)) });
    }
    return d;
  }

  /** Counts one API request by `userId` (or by the client's IP address) and sets the X-RateLimit headers. */
  async checkApi(req: FastifyRequest, reply: FastifyReply, userId: number | null): Promise<void> {
    const key = userId === null ? `api_by_ip:${req.ip}` : `api_by_user:${userId}`;
    try {
      const d = await this.hit(key, userId === null ? this.apiByIp : this.apiByUser);
      if (d) setHeaders(reply, d);
    } catch (e) {
      if (e instanceof JsonableError) reply.header('X-RateLimit-Remaining', '0');
      throw e;
    }
  }

  /** One mail to a channel's address in the realm (Zulip's RATE_LIMITING_MIRROR_REALM_RULES). */
  async checkEmailMirror(realmId: number): Promise<void> {
    await this.hit(`email_mirror_by_realm:${realmId}`, EMAIL_MIRROR_RULES);
  }

  /** One password attempt for a username; a success calls clearAuthAttempts. */
  async checkAuthAttempt(realmId: number, username: string): Promise<void> {
    await this.hit(`authenticate_by_username:${realmId}:${username.toLowerCase()}`, this.authByUsername);
  }

  async clearAuthAttempts(realmId: number, username: string): Promise<void> {
    if (this.config.enabled) await this.backend.clear(`authenticate_by_username:${realmId}:${username.toLowerCase()}`);
  }

  close(): Promise<void> {
    return this.backend.close();
  }
}

function setHeaders(reply: FastifyReply, d: RateLimitDecision): void {
  reply.header('X-RateLimit-Limit', String(d.limit));
  reply.header('X-RateLimit-Remaining', String(d.remaining));
  reply.header('X-RateLimit-Reset', String(d.resetAt));
}

const ioredis = lazyRequire<typeof import('ioredis')>('ioredis');

function redisClient(url: string): import('ioredis').Redis {
  const client = new (ioredis().Redis)(url, { lazyConnect: false, maxRetriesPerRequest: 2 });
  // A lost connection fails the commands that need it; ioredis reconnects by itself.
  client.on('error', () => undefined);
  return client;
}

/** Shared through Redis when configured, under the database's namespace: user IDs are per database. */
export function createRateLimiter(config: Config, databaseId: string): RateLimiter {
  const backend = config.redisUrl
    ? new RedisRateLimitBackend(redisClient(config.redisUrl), redisNamespace(config.rateLimits.redisPrefix, databaseId))
    : new MemoryRateLimitBackend();
  return new RateLimiter(config.rateLimits, backend);
}
