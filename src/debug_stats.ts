import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { writeHeapSnapshot } from 'node:v8';
import type { Services } from './services.js';

/**
 * Process statistics for `npm run bench`, served on 127.0.0.1 only when
 * PARLEY_DEBUG_STATS_PORT is set (never in a normal deployment): the longest event-loop
 * stall since the last reset, memory and CPU time. A separate listener keeps it out of the
 * API's routing, authentication and rate limits.
 *
 * GET /stats answers JSON; `?gc=1` first collects garbage (when node runs with
 * --expose-gc) so memory figures compare; `?reset=1` restarts the stall histogram after
 * reading it; `?snapshot=1` writes a heap snapshot under the data directory.
 */
export function startDebugStats(port: number, services: Services): Promise<Server> {
  const delay = monitorEventLoopDelay({ resolution: 2 });
  delay.enable();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/stats') {
      res.writeHead(404).end();
      return;
    }
    const collect = globalThis.gc as (() => void) | undefined;
    if (url.searchParams.get('gc') === '1' && collect) {
      collect();
      collect();
    }
    // A heap snapshot in the data directory, to see what a held poll costs (bench/heap.ts reads it).
    const snapshot = url.searchParams.get('snapshot') === '1' ? writeHeapSnapshot(join(services.config.dataDir, `heap-${Date.now()}.heapsnapshot`)) : undefined;
    const mem = process.memoryUsage();
    const cpu = process.cpuUsage();
    const body = JSON.stringify({
      // The histogram records how late a 2 ms timer fired: a stall of that length.
      maxStallMs: delay.max / 1e6,
      p99StallMs: delay.percentile(99) / 1e6,
      rss: mem.rss,
      heapUsed: mem.heapUsed,
      external: mem.external,
      cpuUserUs: cpu.user,
      cpuSystemUs: cpu.system,
      queues: services.queues.queueCount,
      uptimeMs: process.uptime() * 1000,
      snapshot,
    });
    if (url.searchParams.get('reset') === '1') delay.reset();
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}
