import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { MemoryRateLimitBackend, RedisRateLimitBackend, type RateLimitBackend } from '../../src/lib/rate_limit.js';

const backends: [string, () => RateLimitBackend][] = [['memory', () => new MemoryRateLimitBackend()]];
if (process.env.TEST_REDIS_URL) {
  const prefix = `parley-test-${randomBytes(4).toString('hex')}:`;
  backends.push(['redis', () => new RedisRateLimitBackend(new Redis(process.env.TEST_REDIS_URL!), prefix)]);
}

for (const [name, make] of backends) {
  describe(`rate limit backend [${name}]`, () => {
    const b = make();
    after(() => b.close());

    test('allows max requests per window, then refuses with the time until a slot frees', async () => {
      const t0 = 1_000_000_000_000;
      for (let i = 0; i < 3; i++) {
        const d = await b.hit('k1', [[60, 3]], t0 + i * 1000);
        assert.equal(d.allowed, true);
        assert.equal(d.limit, 3);
        assert.equal(d.remaining, 2 - i);
      }
      const denied = await b.hit('k1', [[60, 3]], t0 + 10_000);
      assert.equal(denied.allowed, false);
      assert.equal(denied.remaining, 0);
      assert.equal(denied.retryAfter, 50);
      assert.equal(denied.resetAt, Math.ceil((t0 + 60_000) / 1000));
      // A denied request is not counted: once the first hit ages out, one more is allowed.
      assert.equal((await b.hit('k1', [[60, 3]], t0 + 60_001)).allowed, true);
      assert.equal((await b.hit('k1', [[60, 3]], t0 + 60_002)).allowed, false);
    });

    test('the tightest of several rules decides; keys are independent; clear resets', async () => {
      const t0 = 2_000_000_000_000;
      const rules = [[3600, 2], [86400, 5]] as const;
      assert.equal((await b.hit('k2', rules, t0)).allowed, true);
      assert.equal((await b.hit('k2', rules, t0 + 1)).allowed, true);
      assert.equal((await b.hit('k2', rules, t0 + 2)).allowed, false);
      assert.equal((await b.hit('k3', rules, t0 + 2)).allowed, true);
      await b.clear('k2');
      assert.equal((await b.hit('k2', rules, t0 + 3)).allowed, true);
    });
  });
}

if (process.env.TEST_REDIS_URL) {
  test('two processes sharing Redis share one budget', async () => {
    const prefix = `parley-test-${randomBytes(4).toString('hex')}:`;
    const a = new RedisRateLimitBackend(new Redis(process.env.TEST_REDIS_URL!), prefix);
    const c = new RedisRateLimitBackend(new Redis(process.env.TEST_REDIS_URL!), prefix);
    try {
      const now = Date.now();
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : c).hit('shared', [[60, 4]], now + i)));
      assert.equal(results.filter((r) => r.allowed).length, 4);
    } finally {
      await a.close();
      await c.close();
    }
  });
}
