/**
 * Where a request's time goes in SQL: builds the bench data (quick sizes) in a temporary
 * SQLite database, runs one kind of request in-process many times, and prints every
 * statement with its count per request and time.
 *
 *   node --import tsx bench/trace.ts send|fanout|history|search|register|events [count] [concurrency] [--profile FILE]
 *
 * TRACE_FANOUT_USERS sets the size of the fan-out channel (default 400).
 *
 * --profile writes a CPU profile of the measured requests only (summarize it with bench/profile.ts).
 * --allocations prints where the measured requests allocate memory (sampled, garbage included),
 * the source of the garbage collector's share of a profile.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/app.js';
import { serverEnv } from './lib/server.js';
import { seed } from './lib/seed.js';
import type { InjectOptions } from 'fastify';

const profileAt = process.argv.indexOf('--profile');
const profileFile = profileAt > 0 ? process.argv.splice(profileAt, 2)[1] : undefined;
const allocationsAt = process.argv.indexOf('--allocations');
const allocations = allocationsAt > 0 && process.argv.splice(allocationsAt, 1).length > 0;
const kind = process.argv[2] ?? 'send';
const count = Number(process.argv[3] ?? 200);
/** Requests in flight at once (sends then share transactions). */
const concurrency = Number(process.argv[4] ?? 1);

const stats = new Map<string, { n: number; ms: number }>();
let tracing = false;
// Times every statement better-sqlite3 runs, keyed by its SQL.
const proto = SQLite.prototype as unknown as { prepare(sql: string): SQLite.Statement };
const prepare = proto.prepare;
proto.prepare = function (this: unknown, sqlText: string) {
  const t0 = performance.now();
  const stmt = prepare.call(this, sqlText);
  const prepMs = performance.now() - t0;
  if (tracing) add('(prepare) ' + sqlText, prepMs);
  for (const m of ['all', 'run', 'get', 'iterate'] as const) {
    const orig = (stmt as unknown as Record<string, (...a: unknown[]) => unknown>)[m]!.bind(stmt);
    (stmt as unknown as Record<string, unknown>)[m] = (...a: unknown[]) => {
      const s = performance.now();
      const r = orig(...a);
      if (tracing) add(sqlText, performance.now() - s);
      return r;
    };
  }
  return stmt;
};
function add(key: string, ms: number): void {
  const k = key.replace(/\s+/g, ' ').slice(0, 260);
  const e = stats.get(k) ?? { n: 0, ms: 0 };
  e.n++;
  e.ms += ms;
  stats.set(k, e);
}

const work = mkdtempSync(join(tmpdir(), 'parley-trace-'));
const env = serverEnv(
  {
    databaseUrl: `sqlite:${join(work, 'db.sqlite3')}`,
    redisUrl: null,
    redisPrefix: 'trace:',
    dataDir: join(work, 'data'),
    ownerEmail: 'owner@bench.example.com',
    ownerPassword: 'trace-password-123',
  },
  9991,
  0,
);
const first = await buildApp(loadConfig({}, env), { announce: () => undefined });
await first.close();
const data = await seed(
  env,
  {
    fanoutUsers: Number(process.env.TRACE_FANOUT_USERS ?? 400),
    sendSubscribers: 50,
    historyMessages: 100_000,
    historyChannels: 10,
    historyTopics: 1000,
    historySenders: 5,
    registerUsers: 1000,
    registerChannels: 200,
    registerMessages: 2000,
  },
  () => undefined,
);
const app = await buildApp(loadConfig({}, env), { announce: () => undefined });

function request(i: number): InjectOptions {
  switch (kind) {
    case 'send':
      return {
        method: 'POST',
        url: '/api/v1/messages',
        headers: { host: data.host, authorization: data.users[i % 50]!.auth, 'content-type': 'application/x-www-form-urlencoded' },
        payload: `type=stream&to=${encodeURIComponent(data.sendStream)}&topic=t${i % 5}&content=sm${i}x`,
      };
    case 'fanout':
      return {
        method: 'POST',
        url: '/api/v1/messages',
        headers: { host: data.host, authorization: data.users[0]!.auth, 'content-type': 'application/x-www-form-urlencoded' },
        payload: `type=stream&to=${encodeURIComponent(data.fanoutStream)}&topic=fan-out&content=sm${i}x`,
      };
    case 'history':
    case 'search': {
      const narrow =
        kind === 'search'
          ? [{ operator: 'search', operand: data.searchWord }]
          : [
              { operator: 'channel', operand: data.historyChannels[i % data.historyChannels.length]!.id },
              { operator: 'topic', operand: data.topicName(i % data.historyChannels.length, i % data.topicsPerChannel) },
            ];
      return {
        method: 'GET',
        url: `/api/v1/messages?anchor=newest&num_before=100&num_after=0&narrow=${encodeURIComponent(JSON.stringify(narrow))}`,
        headers: { host: data.host, authorization: data.reader.auth },
      };
    }
    case 'events':
      return {
        method: 'GET',
        url: `/api/v1/events?queue_id=${encodeURIComponent(queueId)}&last_event_id=-1&dont_block=true`,
        headers: { host: data.host, authorization: data.users[0]!.auth },
      };
    case 'register':
      return {
        method: 'POST',
        url: '/api/v1/register',
        headers: { host: data.registerHost, authorization: data.register.auth, 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'apply_markdown=true&client_gravatar=true&include_subscribers=true',
      };
    default:
      throw new Error(`unknown kind ${kind}`);
  }
}

const queueId =
  kind === 'events'
    ? (
        (await app.fastify.inject({
          method: 'POST',
          url: '/api/v1/register',
          headers: { host: data.host, authorization: data.users[0]!.auth, 'content-type': 'application/x-www-form-urlencoded' },
          payload: 'event_types=%5B%22message%22%5D',
        })).json() as { queue_id: string }
      ).queue_id
    : '';
for (let i = 0; i < 20; i++) await app.fastify.inject(request(i));
const session = new Session();
if (profileFile || allocations) session.connect();
if (profileFile) {
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
}
if (allocations) {
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
}
tracing = !profileFile && !allocations;
const t0 = performance.now();
const cpu0 = process.cpuUsage();
let next = 0;
const each: number[] = [];
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const r0 = performance.now();
      const r = await app.fastify.inject(request(next++));
      each.push(performance.now() - r0);
      if (r.statusCode !== 200) throw new Error(`${r.statusCode} ${r.body.slice(0, 300)}`);
    }
  }),
);
each.sort((a, b) => a - b);
const wall = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
tracing = false;
if (profileFile) {
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(profileFile, JSON.stringify(profile));
}
if (allocations) {
  const { profile } = await session.post('HeapProfiler.stopSampling');
  printAllocations(profile.head);
}
let sqlMs = 0;
for (const e of stats.values()) sqlMs += e.ms;
// The minimum and median resist other processes' load on a shared machine better than the mean.
process.stdout.write(
  `${kind}: ${count} requests, ${(wall / count).toFixed(3)} ms each (CPU ${((cpu.user + cpu.system) / 1000 / count).toFixed(3)} ms; ` +
    `min ${each[0]!.toFixed(3)}, median ${each[each.length >> 1]!.toFixed(3)} ms), of which SQL ${(sqlMs / count).toFixed(3)} ms\n`,
);
for (const [k, e] of [...stats].sort((a, b) => b[1].ms - a[1].ms).slice(0, 40)) {
  process.stdout.write(`${(e.ms / count).toFixed(3).padStart(8)} ms/req  ${(e.n / count).toFixed(1).padStart(5)}x  ${k}\n`);
}
await app.close();
rmSync(work, { recursive: true, force: true });

interface AllocationNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: AllocationNode[];
}

/** Bytes allocated per request by each function (self) and with its callees (inclusive), top 30 each. */
function printAllocations(head: AllocationNode): void {
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const label = (n: AllocationNode): string =>
    `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(src|node_modules)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
  const walk = (n: AllocationNode, stack: string[]): number => {
    const l = label(n);
    self.set(l, (self.get(l) ?? 0) + n.selfSize);
    let total = n.selfSize;
    const inner = [...stack, l];
    for (const c of n.children) total += walk(c, inner);
    if (!stack.includes(l)) inclusive.set(l, (inclusive.get(l) ?? 0) + total);
    return total;
  };
  walk(head, []);
  for (const [title, m] of [['self', self], ['inclusive', inclusive]] as const) {
    process.stdout.write(`allocated per request (${title}):\n`);
    for (const [k, b] of [...m].sort((a, b) => b[1] - a[1]).slice(0, 30)) process.stdout.write(`${(b / count / 1024).toFixed(2).padStart(9)} KiB  ${k}\n`);
  }
}
