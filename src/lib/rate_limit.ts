import type { Redis } from 'ioredis';

/** [window in seconds, requests allowed in that window], as Zulip's RATE_LIMITING_RULES. */
export type RateLimitRule = readonly [windowSeconds: number, maxRequests: number];

export interface RateLimitDecision {
  allowed: boolean;
  /** Limit of the tightest rule, for X-RateLimit-Limit. */
  limit: number;
  /** Requests left under the tightest rule, for X-RateLimit-Remaining. */
  remaining: number;
  /** Unix time (seconds) when the tightest rule's window frees up, for X-RateLimit-Reset. */
  resetAt: number;
  /** Seconds until a request would be allowed again (0 when allowed). */
  retryAfter: number;
}

/**
 * A sliding-window log per key: each rule allows `max` requests in any `window` seconds. A
 * denied request is not recorded, so a client that waits `retryAfter` gets through.
 */
export interface RateLimitBackend {
  hit(key: string, rules: readonly RateLimitRule[], nowMs: number): Promise<RateLimitDecision>;
  clear(key: string): Promise<void>;
  close(): Promise<void>;
}

function decide(timestampsPerRule: number[][], rules: readonly RateLimitRule[], nowMs: number): RateLimitDecision {
  let decision: RateLimitDecision | null = null;
  for (let i = 0; i < rules.length; i++) {
    const [window, max] = rules[i]!;
    const recent = timestampsPerRule[i]!;
    const blocked = recent.length >= max;
    const oldest = recent[0] ?? nowMs;
    const freeAt = blocked ? recent[recent.length - max]! + window * 1000 : oldest + window * 1000;
    const d: RateLimitDecision = {
      allowed: !blocked,
      limit: max,
      remaining: Math.max(0, max - recent.length - (blocked ? 0 : 1)),
      resetAt: Math.ceil(freeAt / 1000),
      retryAfter: blocked ? Math.max(0, (freeAt - nowMs) / 1000) : 0,
    };
    if (!decision || (!d.allowed && decision.allowed) || (d.allowed === decision.allowed && d.remaining < decision.remaining)) {
      decision = d;
    }
  }
  return decision ?? { allowed: true, limit: 0, remaining: 0, resetAt: 0, retryAfter: 0 };
}

/** One process: timestamps in a Map, pruned as they age out. */
export class MemoryRateLimitBackend implements RateLimitBackend {
  private readonly log = new Map<string, number[]>();
  private readonly sweeper: NodeJS.Timeout;

  constructor() {
    this.sweeper = setInterval(() => this.sweep(Date.now()), 60_000);
    this.sweeper.unref();
  }

  async hit(key: string, rules: readonly RateLimitRule[], nowMs: number): Promise<RateLimitDecision> {
    const longest = Math.max(...rules.map(([w]) => w)) * 1000;
    const all = (this.log.get(key) ?? []).filter((t) => t > nowMs - longest);
    const perRule = rules.map(([w]) => all.filter((t) => t > nowMs - w * 1000));
    const d = decide(perRule, rules, nowMs);
    if (d.allowed) all.push(nowMs);
    const cap = Math.max(...rules.map(([, m]) => m));
    this.log.set(key, all.length > cap ? all.slice(all.length - cap) : all);
    return d;
  }

  async clear(key: string): Promise<void> {
    this.log.delete(key);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }

  private sweep(nowMs: number): void {
    const day = 86_400_000;
    for (const [k, ts] of this.log) if (!ts.length || ts[ts.length - 1]! < nowMs - day) this.log.delete(k);
  }
}

/**
 * Several processes: one Redis sorted set per key (scores are timestamps), checked and
 * updated atomically by a Lua script so concurrent processes share one budget.
 */
const HIT_SCRIPT = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
local longest = tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
local n = (#ARGV - 4) / 2
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - longest)
local out = {}
local blocked = 0
for i = 1, n do
  local window = tonumber(ARGV[4 + 2 * i - 1]) * 1000
  local max = tonumber(ARGV[4 + 2 * i])
  local recent = redis.call('ZRANGEBYSCORE', key, now - window + 1, '+inf')
  if #recent >= max then blocked = 1 end
  out[i] = recent
end
if blocked == 0 then
  redis.call('ZADD', key, now, ARGV[4])
  local size = redis.call('ZCARD', key)
  if size > cap then redis.call('ZREMRANGEBYRANK', key, 0, size - cap - 1) end
end
redis.call('PEXPIRE', key, longest)
return out
`;

export class RedisRateLimitBackend implements RateLimitBackend {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async hit(key: string, rules: readonly RateLimitRule[], nowMs: number): Promise<RateLimitDecision> {
    const longest = Math.max(...rules.map(([w]) => w)) * 1000;
    const cap = Math.max(...rules.map(([, m]) => m));
    const member = `${nowMs}-${Math.random().toString(36).slice(2)}`;
    const args = [String(nowMs), String(longest), String(cap), member, ...rules.flatMap(([w, m]) => [String(w), String(m)])];
    const raw = (await this.redis.eval(HIT_SCRIPT, 1, this.prefix + key, ...args)) as string[][];
    const perRule = raw.map((members) => members.map((m) => Number(m.split('-')[0])));
    return decide(perRule, rules, nowMs);
  }

  async clear(key: string): Promise<void> {
    await this.redis.del(this.prefix + key);
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
