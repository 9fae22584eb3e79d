import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import pg from 'pg';
import { freshDatabaseUrl, forEachDatabase, listenApp, testConfig } from '../helpers/server.js';
import { freePort } from '../../bench/lib/util.js';

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { headers });
  return { status: res.status, body: await res.json() };
}


// Rate limits on and tight, so that a probe that went through the limiter would be refused.
forEachDatabase(
  'GET /health and /health/ready',
  (server) => {
    test('answer without authentication, under any host name, and are never rate-limited', async () => {
      const s = server();
      for (let i = 0; i < 12; i++) {
        for (const path of ['/health', '/health/ready']) {
          const res = await get(`${s.url}${path}`, { Host: '10.1.2.3:9991' });
          assert.equal(res.status, 200, `${path} #${i}`);
          assert.equal(res.body.result, 'success');
        }
      }
      assert.deepEqual((await get(`${s.url}/health/ready`)).body, { result: 'success', msg: '', checks: { database: 'ok' } });
      // The same unauthenticated address is limited on an ordinary endpoint.
      let limited = false;
      for (let i = 0; i < 12 && !limited; i++) limited = (await fetch(`${s.url}/api/v1/server_settings`)).status === 429;
      assert.ok(limited, 'the ordinary endpoint is rate-limited at this setting');
      assert.equal((await get(`${s.url}/health`)).status, 200);
    });
  },
  { rateLimits: { enabled: true, apiPerMinute: 5, ipPerMinute: 5, authAttempts: 5, authWindowSeconds: 60, redisPrefix: `parley-health-${process.pid}:` } },
);

describe('GET /health/ready when a dependency is down', () => {
  test('PostgreSQL gone: 503 SERVER_NOT_READY naming the database; liveness still 200', { skip: !process.env.TEST_POSTGRES_URL && 'TEST_POSTGRES_URL is not set' }, async () => {
    const db = await freshDatabaseUrl('postgres');
    const config = testConfig(db.url);
    const { app, url } = await listenApp(config);
    try {
      assert.equal((await get(`${url}/health/ready`)).status, 200);
      const admin = new pg.Client({ connectionString: process.env.TEST_POSTGRES_URL });
      await admin.connect();
      await admin.query(`DROP DATABASE ${new URL(db.url).pathname.slice(1)} WITH (FORCE)`);
      await admin.end();
      const res = await get(`${url}/health/ready`);
      assert.equal(res.status, 503);
      assert.equal(res.body.result, 'error');
      assert.equal(res.body.code, 'SERVER_NOT_READY');
      assert.equal(res.body.checks.database, 'unreachable');
      assert.equal((await get(`${url}/health`)).status, 200);
    } finally {
      await app.close().catch(() => undefined);
      await db.drop();
      rmSync(config.dataDir, { recursive: true, force: true });
    }
  });

  const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;
  test('Redis gone: 503 naming redis; liveness still 200', { skip: !hasRedisServer && 'redis-server is not installed' }, async () => {
    const port = await freePort();
    const startRedis = async (): Promise<ChildProcess> => {
      const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      for (let i = 0; i < 50; i++) {
        if (spawnSync('redis-cli', ['-p', String(port), 'ping']).stdout?.toString().includes('PONG')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      return child;
    };
    let redis = await startRedis();
    after(() => redis.kill('SIGKILL'));
    const db = await freshDatabaseUrl('sqlite');
    const config = testConfig(db.url, { redisUrl: `redis://127.0.0.1:${port}` });
    const { app, url } = await listenApp(config);
    try {
      assert.deepEqual((await get(`${url}/health/ready`)).body.checks, { database: 'ok', redis: 'ok' });
      redis.kill('SIGKILL');
      await new Promise((r) => redis.once('exit', r));
      const res = await get(`${url}/health/ready`);
      assert.equal(res.status, 503);
      assert.equal(res.body.code, 'SERVER_NOT_READY');
      assert.deepEqual(res.body.checks, { database: 'ok', redis: 'unreachable' });
      assert.equal((await get(`${url}/health`)).status, 200);
      // Back again: ready again, and the server can close cleanly.
      redis = await startRedis();
      let back = 0;
      for (let i = 0; i < 50 && back !== 200; i++) {
        back = (await get(`${url}/health/ready`)).status;
        if (back !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(back, 200);
    } finally {
      await app.close();
      await db.drop();
      rmSync(config.dataDir, { recursive: true, force: true });
    }
  });
});
