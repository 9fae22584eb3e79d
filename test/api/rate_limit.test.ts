import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertMatchesComponent } from '../helpers/openapi.js';
import { loadConfig } from '../../src/config.js';

const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent' });

forEachDatabase('rate limits', (server) => {
  test('per user: X-RateLimit headers, then 429 RATE_LIMIT_HIT with retry-after; other users unaffected', async () => {
    const s = server();
    const c = s.cast.othello.client;
    const first = await c.get('/users/me');
    ok(first);
    assert.equal(first.headers.get('x-ratelimit-limit'), '5');
    assert.equal(first.headers.get('x-ratelimit-remaining'), '4');
    assert.ok(Number(first.headers.get('x-ratelimit-reset')) > Date.now() / 1000);
    for (let i = 0; i < 4; i++) ok(await c.get('/users/me'));
    const limited = await c.get('/users/me');
    const body = err(limited, 429, 'RATE_LIMIT_HIT', 'API usage exceeded rate limit');
    assert.ok(body['retry-after'] > 0 && body['retry-after'] <= 60);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');
    assertMatchesComponent(limited.body, 'RateLimitedError');
    ok(await s.cast.hamlet.client.get('/users/me'));
  });

  test('per IP address for unauthenticated routes', async () => {
    const s = server();
    // The server trusts X-Forwarded-For from its (loopback) proxy, as behind a load balancer.
    const client = s.anonymous.withHeaders({ 'X-Forwarded-For': '203.0.113.7' });
    for (let i = 0; i < 3; i++) ok(await client.get('/server_settings'));
    err(await client.get('/server_settings'), 429, 'RATE_LIMIT_HIT');
    ok(await s.anonymous.withHeaders({ 'X-Forwarded-For': '203.0.113.8' }).get('/server_settings'));
  });

  test('password guessing against fetch_api_key is throttled per username; a success clears it', async () => {
    const s = server();
    const anon = (ip: string) => s.anonymous.withHeaders({ 'X-Forwarded-For': ip });
    const username = s.cast.moderator.user.email;
    err(await anon('198.51.100.1').post('/fetch_api_key', { username, password: 'guess1' }), 401, 'AUTHENTICATION_FAILED');
    ok(await anon('198.51.100.2').post('/fetch_api_key', { username, password: s.cast.moderator.password }));
    for (let i = 0; i < 3; i++) err(await anon(`198.51.100.${10 + i}`).post('/fetch_api_key', { username, password: `guess${i}` }), 401, 'AUTHENTICATION_FAILED');
    // The limit is per username, whatever the address: even the right password is refused now.
    err(await anon('198.51.100.20').post('/fetch_api_key', { username, password: s.cast.moderator.password }), 429, 'RATE_LIMIT_HIT');
    ok(await anon('198.51.100.21').post('/fetch_api_key', { username: s.cast.guest.user.email, password: s.cast.guest.password }));
  });
}, { rateLimits: { ...base.rateLimits, enabled: true, apiPerMinute: 5, ipPerMinute: 3, authAttempts: 3, authWindowSeconds: 600 } });
