import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';
import { forEachDatabase, startServer, type TestServer } from './helpers/server.js';
import { ok } from './helpers/assert.js';
import { registerQueue } from './helpers/events.js';
import { loadConfig } from '../src/config.js';

const TOKEN = 'scrape-secret-123';

type Scrape = Map<string, ParsedFamily> & { text: string };

/** GET /metrics parsed by a Prometheus text-format parser, by family name (and the raw text). */
async function scrape(url: string, token: string | null = TOKEN): Promise<Scrape> {
  const res = await fetch(`${url}/metrics`, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  const text = await res.text();
  return Object.assign(new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f])), { text });
}

/**
 * A labelled histogram's observation count, read from its `_count` sample line: the parser
 * above folds every label set of a histogram into one (it is what prom2json does).
 */
function histogramCount(scraped: Scrape, name: string, labels: string): number {
  const line = scraped.text.split('\n').find((l) => l.startsWith(`${name}_count{${labels}} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

/** The value of the sample of `name` whose labels include `labels` (0 when there is none yet). */
function value(families: Map<string, ParsedFamily>, name: string, labels: Record<string, string> = {}): number {
  const family = families.get(name);
  assert.ok(family, `no metric ${name}`);
  const sample = family.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  if (!sample) return 0;
  return Number(sample.value ?? sample.count);
}

forEachDatabase(
  'GET /metrics',
  (server) => {
    test('needs the token; parses as Prometheus text; counters and gauges move with the requests made', async () => {
      const s: TestServer = server();
      const { hamlet, othello } = s.cast;
      const refused = await fetch(`${s.url}/metrics`);
      assert.equal(refused.status, 401);
      assert.deepEqual(await refused.json(), { result: 'error', msg: 'Missing or wrong metrics token', code: 'UNAUTHORIZED' });
      assert.equal((await fetch(`${s.url}/metrics`, { headers: { Authorization: 'Bearer wrong' } })).status, 401);

      const before = await scrape(s.url);
      for (const family of ['parley_http_requests_total', 'parley_messages_sent_total', 'parley_events_queued_total', 'parley_db_queries_total']) {
        assert.equal(before.get(family)?.type, 'COUNTER', family);
      }
      assert.equal(before.get('parley_http_request_duration_seconds')?.type, 'HISTOGRAM');
      for (const family of ['parley_event_queues', 'parley_long_polls_held', 'nodejs_eventloop_lag_seconds', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes']) {
        assert.equal(before.get(family)?.type, 'GAUGE', family);
      }
      assert.equal(before.has('parley_db_pool_connections'), s.kind === 'postgres');

      const me = { method: 'GET', route: '/api/v1/users/me', status: '200' };
      for (let i = 0; i < 3; i++) ok(await hamlet.client.get('/users/me'));
      const queue = await registerQueue(othello.client, { event_types: ['message'] });
      const held = new AbortController();
      const poll = queue.poll({ signal: held.signal }).catch(() => []);
      ok(await hamlet.client.post('/messages', { type: 'private', to: JSON.stringify([othello.user.id]), content: 'one' }));
      await poll;
      const poll2 = queue.poll({ signal: held.signal }).catch(() => []);
      await new Promise((r) => setTimeout(r, 200));
      const during = await scrape(s.url);
      assert.ok(value(during, 'parley_long_polls_held') >= 1);
      assert.ok(value(during, 'parley_event_queues') >= 1);
      ok(await hamlet.client.post('/messages', { type: 'private', to: JSON.stringify([othello.user.id]), content: 'two' }));
      await poll2;
      assert.equal((await hamlet.client.get('/no/such/endpoint')).status, 404);

      const afterward = await scrape(s.url);
      assert.equal(value(afterward, 'parley_http_requests_total', me) - value(before, 'parley_http_requests_total', me), 3);
      const meLatency = 'method="GET",route="/api/v1/users/me"';
      assert.equal(histogramCount(afterward, 'parley_http_request_duration_seconds', meLatency) - histogramCount(before, 'parley_http_request_duration_seconds', meLatency), 3);
      assert.equal(value(afterward, 'parley_http_requests_total', { route: '/api/v1/messages', method: 'POST', status: '200' }), 2);
      assert.equal(value(afterward, 'parley_http_requests_total', { route: 'unmatched', status: '404' }), 1);
      assert.equal(value(afterward, 'parley_messages_sent_total') - value(before, 'parley_messages_sent_total'), 2);
      // Each message reached othello's queue (and any other queue of the test cast).
      assert.ok(value(afterward, 'parley_events_queued_total') - value(before, 'parley_events_queued_total') >= 2);
      assert.ok(value(afterward, 'parley_db_queries_total') > value(before, 'parley_db_queries_total'));
      assert.ok(value(afterward, 'parley_db_query_seconds_total') > 0);
      assert.ok(value(afterward, 'process_resident_memory_bytes') > 0);
      held.abort();
    });
  },
  { metrics: { enabled: true, port: null, host: '127.0.0.1', token: TOKEN } },
);

describe('GET /metrics: off by default, or on its own port', () => {
  let servers: TestServer[] = [];
  before(() => {
    servers = [];
  });
  after(async () => {
    for (const s of servers) await s.close();
  });

  test('off by default: /metrics is not there', async () => {
    assert.equal(loadConfig({}, { PARLEY_ENV_FILE: '/nonexistent' }).metrics.enabled, false);
    const s = await startServer('sqlite');
    servers.push(s);
    assert.equal(s.app.metrics, null);
    assert.equal((await fetch(`${s.url}/metrics`)).status, 404);
  });

  test('PARLEY_METRICS_PORT: served by its own listener, not on the API port', async () => {
    const env = { PARLEY_ENV_FILE: '/nonexistent', PARLEY_METRICS: 'on', PARLEY_METRICS_PORT: '0' };
    const config = loadConfig({}, env);
    assert.deepEqual(config.metrics, { enabled: true, port: 0, host: '127.0.0.1', token: null });
    const s = await startServer('sqlite', { metrics: config.metrics });
    servers.push(s);
    assert.equal((await fetch(`${s.url}/metrics`)).status, 404);
    const port = s.app.metrics?.port;
    assert.ok(port);
    ok(await s.cast.hamlet.client.get('/users/me'));
    const families = await scrape(`http://127.0.0.1:${port}`, null);
    assert.equal(value(families, 'parley_http_requests_total', { route: '/api/v1/users/me', status: '200' }), 1);
    assert.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
  });
});
