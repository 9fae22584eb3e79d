/**
 * npm run bench [-- --quick] [-- --only send,fanout] [-- --cpu-prof] [-- --set fanoutUsers=2000] [-- --processes 2]
 *
 * Starts Parley as a child process on a fresh database (SQLite; PostgreSQL and Redis when
 * BENCH_POSTGRES_URL / BENCH_REDIS_URL are set; --processes N starts N of them sharing
 * PostgreSQL and Redis, one port each), generates the data, runs every scenario
 * against it from a separate load-generator process, measures the ceiling (a bare node:http
 * server under the same load generator), prints one table and writes the same figures as
 * JSON under bench/results/. See docs/performance.md for the targets and the figures.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { buildServer, captureOutput, fdLimit, pinningFor, RESULTS_DIR, ROOT, spawnPinned } from './lib/proc.js';
import { BenchServer, httpGet, serverEnv, ServerGroup, type BenchTarget, type ServerStats } from './lib/server.js';
import { seed, seedOrg, type SeedSizes, type Seeded } from './lib/seed.js';
import type { OrgRates, OrgWindow } from './load/people.js';
import { freePort, machineBusyPercent, machineCpu, sleep, wallMs, type LatencySummary } from './lib/util.js';
import { LoadGenerator, type AutocannonRequest, type QueueUser } from './load/jobs.js';

const SCENARIOS = ['send', 'fanout', 'idle', 'history', 'register', 'start', 'org', 'storm', 'cost'] as const;
type Scenario = (typeof SCENARIOS)[number];

interface Options {
  quick: boolean;
  only: Set<Scenario>;
  cpuProf: boolean;
  /** --processes N: server processes sharing PostgreSQL and Redis. */
  processes: number;
  /** --set name=value overrides of the sizes and durations below, for experiments. */
  overrides: Record<string, number>;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = { quick: false, only: new Set(SCENARIOS), cpuProf: false, processes: 1, overrides: {} };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') opts.quick = true;
    else if (a === '--cpu-prof') opts.cpuProf = true;
    else if (a === '--only' || a.startsWith('--only=')) {
      const list = a === '--only' ? argv[++i] ?? '' : a.slice('--only='.length);
      const picked = list.split(',').map((s) => s.trim()) as Scenario[];
      for (const s of picked) if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s}; one of ${SCENARIOS.join(', ')}`);
      opts.only = new Set(picked);
    } else if (a === '--processes' || a.startsWith('--processes=')) {
      const n = Number(a === '--processes' ? argv[++i] : a.slice('--processes='.length));
      if (!Number.isInteger(n) || n < 1) throw new Error('--processes needs a whole number of server processes, 1 or more');
      opts.processes = n;
    } else if (a === '--set') {
      const [name, value] = (argv[++i] ?? '').split('=');
      if (!name || !(name in FULL) || !Number.isFinite(Number(value))) throw new Error(`--set needs name=number, name one of ${Object.keys(FULL).join(', ')}`);
      opts.overrides[name] = Number(value);
    } else throw new Error(`unknown option ${a}`);
  }
  return opts;
}

const FULL: SeedSizes & Plan = {
  fanoutUsers: 10_000,
  sendSubscribers: 50,
  historyMessages: 1_000_000,
  historyChannels: 100,
  historyTopics: 10_000,
  historySenders: 10,
  registerUsers: 1_000,
  registerChannels: 200,
  registerMessages: 5_000,
  ceilingMs: 10_000,
  sendWarmupMs: 3_000,
  sendMs: 10_000,
  fanoutRounds: 3,
  sendRate: 0,
  idleMax: 50_000,
  idleHeartbeatSeconds: 50,
  idleWindowMs: 60_000,
  latencyMs: 10_000,
  orgStart: 1_000,
  orgMax: 19_000,
  orgWarmupMs: 30_000,
  orgWindowMs: 120_000,
  orgRegisterConcurrency: 8,
  sendIntervalSeconds: 600,
  channelShare: 0.75,
  typingMs: 2_000,
  readBatchMs: 500,
  historyEvery: 5,
  stormPeople: 19_000,
  stormTimeoutMs: 300_000,
  costPeople: 2_000,
  costSendIntervalSeconds: 300,
  costWindowMs: 60_000,
};

const QUICK: SeedSizes & Plan = {
  fanoutUsers: 400,
  sendSubscribers: 50,
  historyMessages: 20_000,
  historyChannels: 10,
  historyTopics: 100,
  historySenders: 5,
  registerUsers: 100,
  registerChannels: 20,
  registerMessages: 200,
  ceilingMs: 2_000,
  sendWarmupMs: 500,
  sendMs: 2_000,
  fanoutRounds: 1,
  sendRate: 0,
  idleMax: 300,
  idleHeartbeatSeconds: 2,
  idleWindowMs: 3_000,
  latencyMs: 2_000,
  orgStart: 30,
  orgMax: 60,
  orgWarmupMs: 1_000,
  orgWindowMs: 3_000,
  orgRegisterConcurrency: 4,
  sendIntervalSeconds: 5,
  channelShare: 0.75,
  typingMs: 200,
  readBatchMs: 200,
  historyEvery: 5,
  stormPeople: 60,
  stormTimeoutMs: 60_000,
  costPeople: 40,
  costSendIntervalSeconds: 5,
  costWindowMs: 3_000,
};

interface Plan {
  ceilingMs: number;
  sendWarmupMs: number;
  sendMs: number;
  fanoutRounds: number;
  /** Messages/s of the send scenario's open-loop run; 0: half the closed-loop rate (fixed, to compare latencies across changes). */
  sendRate: number;
  idleMax: number;
  idleHeartbeatSeconds: number;
  idleWindowMs: number;
  latencyMs: number;
  /** org: the first organization size; doubled (capped at orgMax) while every limit holds. */
  orgStart: number;
  orgMax: number;
  orgWarmupMs: number;
  orgWindowMs: number;
  /** Registers in flight per server process while people connect. */
  orgRegisterConcurrency: number;
  sendIntervalSeconds: number;
  channelShare: number;
  typingMs: number;
  readBatchMs: number;
  historyEvery: number;
  stormPeople: number;
  stormTimeoutMs: number;
  /** cost: a fixed load (people, each sending every costSendIntervalSeconds) for any --processes. */
  costPeople: number;
  costSendIntervalSeconds: number;
  costWindowMs: number;
}

interface Row {
  scenario: string;
  metric: string;
  value: string;
  target: string;
  /** true: meets the target; false: misses it; null: no target. */
  ok: boolean | null;
}

const rows: Row[] = [];
const results: Record<string, unknown> = {};

function row(scenario: string, metric: string, value: string, target = '', ok: boolean | null = null): void {
  rows.push({ scenario, metric, value, target, ok });
}

const ms = (v: number): string => (Number.isFinite(v) ? `${v < 10 ? v.toFixed(2) : v.toFixed(1)} ms` : 'n/a');
const num = (v: number): string => Math.round(v).toLocaleString('en-US');

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

interface AutocannonResult {
  requestsPerSecond: number;
  latency: LatencySummary;
  non2xx: number;
  errors: number;
  bytesPerResponse: number;
}

interface SendResult {
  sent: number;
  errors: number;
  firstError: string;
  measuredSends: number;
  messagesPerSecond: number;
  send: LatencySummary;
  delivery: LatencySummary;
  undelivered: number;
  trackedQueues: number;
  polls: number;
  failed: number;
  firstFailure: string;
  clientCpuPercent: number;
}

function checkAutocannon(name: string, r: AutocannonResult): void {
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${name}: ${r.non2xx} non-2xx responses and ${r.errors} errors`);
  if (r.latency.count === 0) throw new Error(`${name}: no request completed`);
}

async function measureCeiling(load: LoadGenerator, plan: Plan, user: QueueUser, core: number | null): Promise<number> {
  const port = await freePort();
  const child = spawnPinned({ core, args: ['--import', 'tsx', join(ROOT, 'bench', 'ceiling_server.ts'), String(port)] });
  const output = captureOutput(child);
  try {
    for (let i = 0; ; i++) {
      try {
        await httpGet(port, '/');
        break;
      } catch {
        if (i > 3000) throw new Error(`ceiling server did not start:\n${output()}`);
        await sleep(5);
      }
    }
    await load.run({ kind: 'configure', ports: [port] });
    const r = await load.run<AutocannonResult>({
      kind: 'autocannon',
      connections: 50,
      warmupMs: Math.min(2000, plan.ceilingMs / 4),
      durationMs: plan.ceilingMs,
      requests: [{ method: 'GET', path: '/api/v1/users/me', headers: { host: user.host, authorization: user.auth } }],
    });
    checkAutocannon('ceiling', r);
    return r.requestsPerSecond;
  } finally {
    child.kill('SIGKILL');
  }
}

async function createPostgresDatabase(admin: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `parley_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      const d = new pg.Client({ connectionString: admin });
      await d.connect();
      await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await d.end();
    },
  };
}

const REGISTER_MINIMAL = `fetch_event_types=${encodeURIComponent('["message"]')}&apply_markdown=true&client_gravatar=true`;

async function withServer<T>(
  server: ServerGroup,
  load: LoadGenerator,
  ports: number[],
  env: NodeJS.ProcessEnv,
  fn: (startMs: number) => Promise<T>,
): Promise<T> {
  const startMs = await server.start(env, ports);
  await load.run({ kind: 'configure', ports });
  try {
    return await fn(startMs);
  } finally {
    await server.stop();
  }
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const plan = { ...(opts.quick ? QUICK : FULL), ...opts.overrides };
  const only = opts.only;
  const needsHistory = only.has('history') || only.has('start');
  const sizes: SeedSizes = { ...plan, historyMessages: needsHistory ? plan.historyMessages : Math.min(plan.historyMessages, 1000) };
  const dbKind = process.env.BENCH_POSTGRES_URL ? 'postgres' : 'sqlite';
  const redisUrl = process.env.BENCH_REDIS_URL || null;
  const processes = opts.processes;
  if (processes > 1 && (dbKind !== 'postgres' || !redisUrl)) {
    throw new Error(
      `--processes ${processes} needs BENCH_POSTGRES_URL and BENCH_REDIS_URL: several processes share a PostgreSQL database and Redis (docs/scaling.md); on SQLite each process keeps its event queues to itself and would never see the others' messages`,
    );
  }
  if (processes > 1 && process.env.BENCH_HEAP_SNAPSHOTS === '1') throw new Error('BENCH_HEAP_SNAPSHOTS=1 needs one server process');
  const pinning = pinningFor(processes);
  const fds = fdLimit();
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const machine = {
    cpu,
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    loadAverageAtStart: loadavg().map((v) => Number(v.toFixed(2))),
    pinning: `${pinning.describe()}${dbKind === 'postgres' ? '; PostgreSQL and Redis not pinned' : ''}`,
    fdLimit: fds,
  };
  const servers = processes === 1 ? 'one server process' : `${processes} server processes`;
  log(`Parley bench (${opts.quick ? 'quick' : 'full'}): ${dbKind}${redisUrl ? ' + redis' : ''}, ${servers}; ${machine.pinning}`);
  log(`  ${cpu}, node ${process.version}, open-file limit ${fds}, load average ${machine.loadAverageAtStart.join(' ')}`);

  mkdirSync(RESULTS_DIR, { recursive: true });
  const t0 = wallMs();
  const serverJs = await buildServer();
  const work = mkdtempSync(join(tmpdir(), 'parley-bench-'));
  let dropDatabase: (() => Promise<void>) | null = null;
  let databaseUrl = `sqlite:${join(work, 'bench.sqlite3')}`;
  if (dbKind === 'postgres') {
    const created = await createPostgresDatabase(process.env.BENCH_POSTGRES_URL!);
    databaseUrl = created.url;
    dropDatabase = created.drop;
  }
  const target: BenchTarget = {
    databaseUrl,
    redisUrl,
    redisPrefix: `parley-bench-${process.pid}-${randomBytes(3).toString('hex')}:`,
    dataDir: join(work, 'data'),
    ownerEmail: 'owner@bench.example.com',
    ownerPassword: randomBytes(12).toString('hex'),
  };
  const profileDir = join(RESULTS_DIR, 'profiles');
  // BENCH_SERVER_FLAGS: extra node flags for the server (e.g. --trace-gc), for experiments.
  const extraFlags = (process.env.BENCH_SERVER_FLAGS ?? '').split(/\s+/).filter(Boolean);
  const nodeFlags = (scenario: string): string[] => [...(opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, scenario)}`] : []), ...extraFlags];
  const serverFor = (scenario: string): ServerGroup =>
    new ServerGroup(Array.from({ length: processes }, (_, k) => new BenchServer(serverJs, target, pinning.server(k), nodeFlags(scenario))));
  // Every server of a run listens on the same ports: EXTERNAL_URL (and so the fake email domain) stays put.
  const ports: number[] = [];
  while (ports.length < processes) {
    const p = await freePort();
    if (!ports.includes(p)) ports.push(p);
  }
  const port = ports[0]!;
  const redisEnv = (scenario: string): NodeJS.ProcessEnv => ({ PARLEY_REDIS_PREFIX: `${target.redisPrefix}${scenario}:` });
  const load = LoadGenerator.start(pinning.load);
  let failed = false;
  try {
    // Ceiling.
    const ceiling = await measureCeiling(load, plan, { host: `localhost:${port}`, auth: 'Basic eDp5' }, pinning.server(0));
    results.ceiling = { requestsPerSecond: ceiling, connections: 50 };
    row('ceiling', 'bare node:http, small JSON, 50 connections', `${num(ceiling)} req/s`);
    log(`ceiling: ${num(ceiling)} req/s`);

    // Start on an empty database (migrations and the default organization included).
    const emptyStart = await withServer(serverFor('start-empty'), load, ports, redisEnv('start'), async (startMs) => startMs);
    log(`start (empty database): ${ms(emptyStart)}`);

    log('generating data...');
    const seedT0 = wallMs();
    const data: Seeded = await seed(serverEnv(target, port, 0), sizes, log);
    results.data = { ...sizes, seedMs: Math.round(wallMs() - seedT0), timings: data.timings };
    log(`data ready in ${((wallMs() - seedT0) / 1000).toFixed(1)} s`);

    const loadedStart = await withServer(serverFor('history'), load, ports, redisEnv('history'), async (startMs) => {
      if (only.has('history')) await runHistory(load, plan, data, processes);
      return startMs;
    });
    if (only.has('start')) {
      results.start = { emptyMs: emptyStart, loadedMs: loadedStart, loadedMessages: sizes.historyMessages };
      row('start', 'empty database (first answered request)', ms(emptyStart), '< 1000 ms', emptyStart < 1000);
      row('start', `${num(sizes.historyMessages)}-message database`, ms(loadedStart), '< 1000 ms', loadedStart < 1000);
      log(`start (loaded database): ${ms(loadedStart)}`);
    }
    if (only.has('register')) await withServer(serverFor('register'), load, ports, redisEnv('register'), () => runRegister(load, plan, data, processes));
    if (only.has('send')) {
      const server = serverFor('send');
      await withServer(server, load, ports, redisEnv('send'), () => runSend(load, server, plan, data, ceiling));
    }
    if (only.has('fanout')) {
      const server = serverFor('fanout');
      await withServer(server, load, ports, redisEnv('fanout'), () => runFanout(load, server, plan, data));
    }
    if (only.has('idle')) {
      const server = serverFor('idle');
      const env = { ...redisEnv('idle'), PARLEY_HEARTBEAT_SECONDS: String(plan.idleHeartbeatSeconds) };
      await withServer(server, load, ports, env, () => runIdle(load, server, plan, data, fds));
    }
    const people: PeopleContext = { load, ports, plan, seedEnv: serverEnv(target, port, 0), serverFor, redisEnv, dbKind, redisUrl };
    if (only.has('org')) await runOrg(people);
    if (only.has('storm')) await runStorm(people);
    if (only.has('cost')) await runCost(people);
  } catch (e) {
    failed = true;
    log(`bench failed: ${(e as Error).stack ?? String(e)}`);
  } finally {
    load.stop();
    rmSync(work, { recursive: true, force: true });
    await dropDatabase?.();
  }
  if (failed) process.exit(1);

  const report = {
    date: new Date().toISOString(),
    mode: opts.quick ? 'quick' : 'full',
    database: dbKind,
    redis: redisUrl !== null,
    processes,
    machine: { ...machine, loadAverageAtEnd: loadavg().map((v) => Number(v.toFixed(2))) },
    durationSeconds: Math.round((wallMs() - t0) / 1000),
    results,
    table: rows,
  };
  printTable(`${report.mode}; ${servers}; ${machine.pinning}`);
  const stamp = report.date.replace(/[:.]/g, '-');
  const file = join(RESULTS_DIR, `bench-${report.mode}-${dbKind}${redisUrl ? '-redis' : ''}${processes > 1 ? `-${processes}proc` : ''}-${stamp}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(RESULTS_DIR, `latest-${report.mode}.json`), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\nWrote ${file} (${report.durationSeconds} s)\n`);
}

/** " over N processes" when there are several: queues and senders spread round-robin, memory and CPU added up. */
const overProcesses = (server: ServerGroup): string => (server.servers.length > 1 ? ` over ${server.servers.length} processes` : '');

/** " (one connection to each of N processes)" when there are several: N requests in flight. */
const perProcess = (processes: number): string => (processes > 1 ? ` (one connection to each of ${processes} processes)` : '');

async function runHistory(load: LoadGenerator, plan: Plan, data: Seeded, processes: number): Promise<void> {
  const requests: AutocannonRequest[] = [];
  const headers = { host: data.host, authorization: data.reader.auth };
  for (let i = 0; i < 200; i++) {
    const c = (i * 37) % data.historyChannels.length;
    const t = (i * 11) % data.topicsPerChannel;
    const narrow = JSON.stringify([
      { operator: 'channel', operand: data.historyChannels[c]!.id },
      { operator: 'topic', operand: data.topicName(c, t) },
    ]);
    requests.push({ method: 'GET', path: `/api/v1/messages?anchor=newest&num_before=100&num_after=0&narrow=${encodeURIComponent(narrow)}`, headers });
  }
  const topic = await load.run<AutocannonResult>({ kind: 'autocannon', connections: 1, warmupMs: 1000, durationMs: plan.latencyMs, requests });
  checkAutocannon('history', topic);
  const search = JSON.stringify([{ operator: 'search', operand: data.searchWord }]);
  const searchRun = await load.run<AutocannonResult>({
    kind: 'autocannon',
    connections: 1,
    warmupMs: 500,
    durationMs: plan.latencyMs / 2,
    requests: [{ method: 'GET', path: `/api/v1/messages?anchor=newest&num_before=100&num_after=0&narrow=${encodeURIComponent(search)}`, headers }],
  });
  checkAutocannon('history search', searchRun);
  results.history = { topic, search: searchRun };
  row('history', `channel+topic, newest 100${perProcess(processes)}: p50`, ms(topic.latency.p50), '< 3 ms', topic.latency.p50 < 3);
  row('history', 'channel+topic, newest 100: p99', ms(topic.latency.p99), '< 10 ms', topic.latency.p99 < 10);
  row('history', `search "${data.searchWord}", newest 100: p50 / p99`, `${ms(searchRun.latency.p50)} / ${ms(searchRun.latency.p99)}`);
  log(`history: p50 ${ms(topic.latency.p50)} p99 ${ms(topic.latency.p99)}; search p50 ${ms(searchRun.latency.p50)} p99 ${ms(searchRun.latency.p99)}`);
}

async function runRegister(load: LoadGenerator, plan: Plan & SeedSizes, data: Seeded, processes: number): Promise<void> {
  const r = await load.run<AutocannonResult>({
    kind: 'autocannon',
    connections: 1,
    warmupMs: 1000,
    durationMs: plan.latencyMs,
    requests: [
      {
        method: 'POST',
        path: '/api/v1/register',
        headers: { host: data.registerHost, authorization: data.register.auth, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'apply_markdown=true&client_gravatar=true&include_subscribers=true',
      },
    ],
  });
  checkAutocannon('register', r);
  results.register = r;
  row('register', `member of ${num(plan.registerUsers)} users / ${plan.registerChannels} channels${perProcess(processes)}: p50`, ms(r.latency.p50), '< 15 ms', r.latency.p50 < 15);
  row('register', 'p99 / response size', `${ms(r.latency.p99)} / ${num(r.bytesPerResponse / 1024)} KiB`);
  log(`register: p50 ${ms(r.latency.p50)} p99 ${ms(r.latency.p99)}, ${num(r.bytesPerResponse)} bytes`);
}

function checkSend(name: string, r: SendResult): void {
  if (r.errors > 0) throw new Error(`${name}: ${r.errors} failed sends, first: ${r.firstError}`);
  if (r.failed > 0) throw new Error(`${name}: ${r.failed} event queues failed, first: ${r.firstFailure}`);
  if (r.measuredSends === 0) throw new Error(`${name}: no message sent`);
}

async function runSend(load: LoadGenerator, server: ServerGroup, plan: Plan & SeedSizes, data: Seeded, ceiling: number): Promise<void> {
  const subscribers = data.users.slice(0, plan.sendSubscribers);
  const reg = await load.run<{ registered: number; errors: number; firstError: string }>({
    kind: 'register',
    set: 'send',
    users: subscribers,
    count: subscribers.length,
    params: 'apply_markdown=true&client_gravatar=true',
    concurrency: 4,
  });
  if (reg.errors) throw new Error(`send: register failed: ${reg.firstError}`);
  await load.run({ kind: 'hold', set: 'send' });
  const topics = Array.from({ length: 5 }, (_, i) => `send topic ${i}`);
  const common = { senders: subscribers, stream: data.sendStream, topics, trackSet: 'send' };
  const cpuBefore = await server.each();
  const machineBefore = machineCpu();
  const cpuFrom = wallMs();
  const max = await load.run<SendResult>({
    kind: 'send',
    mode: 'closed',
    concurrency: subscribers.length,
    rate: 0,
    warmupMs: plan.sendWarmupMs,
    durationMs: plan.sendMs,
    ...common,
  });
  checkSend('send (throughput)', max);
  const cpuAfter = await server.each();
  const cpuWindow = wallMs() - cpuFrom;
  // Each server process's CPU over the closed-loop run (warm-up and last deliveries included),
  // and the whole machine's (database, Redis, load generator and anything else running).
  const serverCpuPercent = cpuAfter.map((s, k) => Math.round((BenchServer.cpuMs(cpuBefore[k]!, s) / cpuWindow) * 100));
  const machineCpuPercent = Math.round(machineBusyPercent(machineBefore, machineCpu()));
  const rate = plan.sendRate > 0 ? plan.sendRate : Math.max(1, Math.floor(max.messagesPerSecond / 2));
  const half = await load.run<SendResult>({ kind: 'send', mode: 'open', concurrency: 0, rate, warmupMs: 1000, durationMs: plan.sendMs, ...common });
  checkSend('send (half rate)', half);
  await load.run({ kind: 'release', set: 'send' });
  results.send = { subscribers: subscribers.length, concurrentSenders: subscribers.length, serverCpuPercent, machineCpuPercent, max, halfRate: { rate, ...half } };
  const fraction = max.messagesPerSecond / ceiling;
  const spread = overProcesses(server);
  row('send', `${subscribers.length} senders, ${subscribers.length} subscribers polling${spread}: messages/s`, `${num(max.messagesPerSecond)} (${(fraction * 100).toFixed(1)}% of ceiling)`, '>= 25% of ceiling', fraction >= 0.25);
  row('send', 'at full load: send p50 / p99', `${ms(max.send.p50)} / ${ms(max.send.p99)}`);
  const atRate = plan.sendRate > 0 ? 'at the set rate' : 'at half rate';
  row('send', `${atRate} (${num(rate)}/s): send p50 / p99`, `${ms(half.send.p50)} / ${ms(half.send.p99)}`, 'p99 < 20 ms', half.send.p99 < 20);
  row('send', `${atRate}: delivery to all queues p50 / p99`, `${ms(half.delivery.p50)} / ${ms(half.delivery.p99)}`, 'p99 < 10 ms', half.delivery.p99 < 10);
  log(
    `send: ${num(max.messagesPerSecond)} msg/s (${(fraction * 100).toFixed(1)}% of ceiling), server CPU ${serverCpuPercent.map((c) => `${c}%`).join(' + ')}, load generator CPU ${max.clientCpuPercent.toFixed(0)}%, all ${cpus().length} cores ${machineCpuPercent}% busy; at ${rate}/s send p99 ${ms(half.send.p99)}, delivery p99 ${ms(half.delivery.p99)}`,
  );
}

async function runFanout(load: LoadGenerator, server: ServerGroup, plan: Plan, data: Seeded): Promise<void> {
  const reg = await load.run<{ registered: number; errors: number; firstError: string; latency: LatencySummary }>({
    kind: 'register',
    set: 'fanout',
    users: data.users,
    count: data.users.length,
    params: REGISTER_MINIMAL,
    concurrency: 8,
  });
  if (reg.errors) throw new Error(`fan-out: register failed: ${reg.firstError}`);
  await load.run({ kind: 'hold', set: 'fanout' });
  await server.settle();
  // One unmeasured round first, as the other scenarios warm up: the first fan-out after a start
  // also pays for compiling the delivery code (reported, not counted).
  const warmup = await load.run<{ deliveredMs: number; missing: number }>({
    kind: 'fanout',
    senders: [data.users[0]!],
    stream: data.fanoutStream,
    topics: ['fan-out'],
    trackSet: 'fanout',
  });
  log(`fan-out warm-up round: ${ms(warmup.deliveredMs)}`);
  await server.settle();
  const rounds: { deliveredMs: number; maxStallMs: number; sendMs: number; clientCpuPercent: number }[] = [];
  for (let i = 0; i < plan.fanoutRounds; i++) {
    await server.stats({ reset: true });
    const r = await load.run<{
      trackedQueues: number;
      missing: number;
      sendMs: number;
      deliveredMs: number;
      clientCpuPercent: number;
      failed: number;
      firstFailure: string;
    }>({
      kind: 'fanout',
      senders: [data.users[0]!],
      stream: data.fanoutStream,
      topics: ['fan-out'],
      trackSet: 'fanout',
    });
    if (r.failed) throw new Error(`fan-out: ${r.failed} queues failed: ${r.firstFailure}`);
    if (r.missing) throw new Error(`fan-out: ${r.missing} of ${r.trackedQueues} queues did not receive the message`);
    const s: ServerStats = await server.stats({ reset: true });
    rounds.push({ deliveredMs: r.deliveredMs, maxStallMs: s.maxStallMs, sendMs: r.sendMs, clientCpuPercent: r.clientCpuPercent });
    log(
      `fan-out round ${i + 1}: ${r.trackedQueues} queues in ${ms(r.deliveredMs)} (send answered in ${ms(r.sendMs)}), longest stall ${ms(s.maxStallMs)}, load generator CPU ${r.clientCpuPercent.toFixed(0)}%`,
    );
    await server.settle();
  }
  await load.run({ kind: 'release', set: 'fanout' });
  const worst = { deliveredMs: Math.max(...rounds.map((r) => r.deliveredMs)), maxStallMs: Math.max(...rounds.map((r) => r.maxStallMs)) };
  results.fanout = { queues: data.users.length, registerLatency: reg.latency, warmupDeliveredMs: warmup.deliveredMs, rounds, worst };
  const spread = overProcesses(server);
  row('fanout', `1 message to ${num(data.users.length)} held queues${spread}: last delivered (worst of ${rounds.length})`, ms(worst.deliveredMs), '<= 1000 ms', worst.deliveredMs <= 1000);
  row('fanout', `longest event-loop stall meanwhile${server.servers.length > 1 ? ' (any process)' : ''}`, ms(worst.maxStallMs), '<= 50 ms', worst.maxStallMs <= 50);
}

async function runIdle(load: LoadGenerator, server: ServerGroup, plan: Plan, data: Seeded, fds: number): Promise<void> {
  // Each held poll costs the server and the load generator one descriptor; keep a margin for the rest.
  const count = Math.max(1, Math.min(plan.idleMax, fds - 1000));
  await server.settle();
  // BENCH_HEAP_SNAPSHOTS=1: heap snapshots idle and holding, copied to bench/results/heap/ (compare with bench/heap.ts).
  const snapshots = process.env.BENCH_HEAP_SNAPSHOTS === '1';
  const before = await server.stats({ gc: true, snapshot: snapshots });
  const reg = await load.run<{ registered: number; errors: number; firstError: string; latency: LatencySummary }>({
    kind: 'register',
    set: 'idle',
    users: data.users,
    count,
    params: REGISTER_MINIMAL,
    concurrency: 8,
  });
  if (reg.errors) throw new Error(`idle: register failed: ${reg.firstError}`);
  const held = await load.run<{ holding: number; connectErrors: number; firstError: string }>({ kind: 'hold', set: 'idle' });
  if (held.connectErrors) throw new Error(`idle: ${held.connectErrors} connections failed: ${held.firstError}`);
  await server.settle(500);
  const holding = await server.stats({ gc: true, snapshot: snapshots });
  if (snapshots) {
    mkdirSync(join(RESULTS_DIR, 'heap'), { recursive: true });
    copyFileSync(before.snapshot!, join(RESULTS_DIR, 'heap', 'idle-before.heapsnapshot'));
    copyFileSync(holding.snapshot!, join(RESULTS_DIR, 'heap', `idle-holding-${count}.heapsnapshot`));
  }
  const perThousandMiB = ((holding.rss - before.rss) / count) * 1000 / 2 ** 20;
  const heapPerThousandMiB = ((holding.heapUsed - before.heapUsed) / count) * 1000 / 2 ** 20;
  const pollsBefore = (await load.run<{ polls: number }>({ kind: 'health', set: 'idle' })).polls;
  const w0 = wallMs();
  await sleep(plan.idleWindowMs);
  const after = await server.stats();
  const windowMs = wallMs() - w0;
  const health = await load.run<{ polls: number; failed: number; firstFailure: string }>({ kind: 'health', set: 'idle' });
  if (health.failed) throw new Error(`idle: ${health.failed} polls failed: ${health.firstFailure}`);
  const cpuPercent = (BenchServer.cpuMs(holding, after) / windowMs) * 100;
  await load.run({ kind: 'release', set: 'idle' });
  const heartbeats = health.polls - pollsBefore;
  results.idle = {
    queues: count,
    fdLimit: fds,
    registerLatency: reg.latency,
    rssBefore: before.rss,
    rssHolding: holding.rss,
    heapBefore: before.heapUsed,
    heapHolding: holding.heapUsed,
    mibPerThousandQueues: perThousandMiB,
    heapMibPerThousandQueues: heapPerThousandMiB,
    heartbeatSeconds: plan.idleHeartbeatSeconds,
    windowMs,
    heartbeatsAnswered: heartbeats,
    cpuPercentOfOneCore: cpuPercent,
  };
  row('idle', `${num(count)} held long-polls${overProcesses(server)} (fd limit ${num(fds)}): memory per 1,000`, `${perThousandMiB.toFixed(2)} MiB (heap ${heapPerThousandMiB.toFixed(2)})`, '<= 12 MB', perThousandMiB * 1.048576 <= 12);
  row('idle', `heartbeats every ${plan.idleHeartbeatSeconds} s: CPU over ${(windowMs / 1000).toFixed(0)} s${server.servers.length > 1 ? ', all processes' : ''}`, `${cpuPercent.toFixed(2)}% of a core (${num(heartbeats)} heartbeats)`);
  log(`idle: ${count} queues, ${perThousandMiB.toFixed(2)} MiB per 1000, heartbeat CPU ${cpuPercent.toFixed(2)}%`);
}

interface PeopleContext {
  load: LoadGenerator;
  ports: number[];
  plan: Plan;
  seedEnv: NodeJS.ProcessEnv;
  serverFor: (scenario: string) => ServerGroup;
  redisEnv: (scenario: string) => NodeJS.ProcessEnv;
  dbKind: 'sqlite' | 'postgres';
  redisUrl: string | null;
}

const ratesOf = (plan: Plan, sendIntervalSeconds = plan.sendIntervalSeconds): OrgRates => ({
  sendIntervalSeconds,
  channelShare: plan.channelShare,
  typingMs: plan.typingMs,
  readBatchMs: plan.readBatchMs,
  historyEvery: plan.historyEvery,
});

/** A fresh organization of `count` people, seeded while no server runs; people registered and polling. */
async function connectPeople(ctx: PeopleContext, server: ServerGroup, count: number, name: string, sendIntervalSeconds?: number): Promise<{ registerMs: number; register: LatencySummary }> {
  const org = await seedOrg(ctx.seedEnv, count, name, log);
  await server.start(ctx.redisEnv(name), ctx.ports);
  await ctx.load.run({ kind: 'configure', ports: ctx.ports });
  await ctx.load.run({ kind: 'org-configure', people: org.people, channels: org.channels, rates: ratesOf(ctx.plan, sendIntervalSeconds) });
  const r = await ctx.load.run<{ registerMs: number; register: LatencySummary }>({ kind: 'org-connect', concurrency: ctx.plan.orgRegisterConcurrency });
  log(`  ${count} people registered as the mobile app in ${(r.registerMs / 1000).toFixed(1)} s (register p50 ${ms(r.register.p50)}, p99 ${ms(r.register.p99)})`);
  return r;
}

/** The limits of an organization's day (issue 21); the first it breaks, or null. */
function orgLimitBroken(w: OrgWindow, stallMs: number, rss: number): string | null {
  if (!(w.send.p99 < 100)) return `send p99 ${ms(w.send.p99)} >= 100 ms`;
  if (!(w.delivery.p99 < 200)) return `delivery p99 ${ms(w.delivery.p99)} >= 200 ms`;
  if (!(w.presence.p99 < 50)) return `presence p99 ${ms(w.presence.p99)} >= 50 ms`;
  if (stallMs > 100) return `event-loop stall ${ms(stallMs)} > 100 ms`;
  if (rss >= 4 * 2 ** 30) return `memory ${num(rss / 2 ** 20)} MiB >= 4 GiB`;
  if (w.undelivered > 0) return `${w.undelivered} deliveries missing`;
  const errs = Object.entries(w.errors);
  if (errs.length > 0) return `errors: ${errs.map(([k, v]) => `${v} ${k}`).join(', ')} (first: ${w.firstErrors[0]})`;
  return null;
}

/** One measured window of the simulated day, with the server's stalls and memory over it. */
async function orgWindow(ctx: PeopleContext, server: ServerGroup, warmupMs: number, durationMs: number): Promise<{ w: OrgWindow; stallMs: number; rss: number; cpuMs: number }> {
  let before: ServerStats[] = [];
  const mark = sleep(warmupMs).then(async () => {
    before = await server.each({ reset: true });
  });
  const w = await ctx.load.run<OrgWindow>({ kind: 'org-run', warmupMs, durationMs });
  await mark;
  const after = await server.each();
  const cpuMs = after.reduce((t, s, k) => t + BenchServer.cpuMs(before[k]!, s), 0);
  return { w, stallMs: Math.max(...after.map((s) => s.maxStallMs)), rss: after.reduce((t, s) => t + s.rss, 0), cpuMs };
}

const orgLine = (w: OrgWindow): string =>
  `send p99 ${ms(w.send.p99)}, delivery p99 ${ms(w.delivery.p99)} (${num(w.delivery.count)}), presence p99 ${ms(w.presence.p99)}, flags p99 ${ms(w.flags.p99)}, history p99 ${ms(w.history.p99)}`;

/** `--only org`: organizations of growing size until a limit breaks. */
async function runOrg(ctx: PeopleContext): Promise<void> {
  const { plan } = ctx;
  const steps: Record<string, unknown>[] = [];
  let largest = 0;
  let broke: string | null = null;
  for (let n = plan.orgStart; ; n = Math.min(plan.orgMax, n * 2)) {
    const server = ctx.serverFor(`org-${n}`);
    log(`org: ${n} people`);
    try {
      const reg = await connectPeople(ctx, server, n, `org${n}`);
      const { w, stallMs, rss, cpuMs } = await orgWindow(ctx, server, plan.orgWarmupMs, plan.orgWindowMs);
      broke = orgLimitBroken(w, stallMs, rss);
      steps.push({ people: n, registerMs: reg.registerMs, register: reg.register, window: w, maxStallMs: stallMs, rss, serverCpuPercent: (cpuMs / plan.orgWindowMs) * 100, broke });
      log(`  ${orgLine(w)}; stall ${ms(stallMs)}, RSS ${num(rss / 2 ** 20)} MiB, server CPU ${((cpuMs / plan.orgWindowMs) * 100).toFixed(0)}%, load generator CPU ${w.clientCpuPercent.toFixed(0)}%${broke ? `; BREAKS: ${broke}` : ''}`);
    } finally {
      await ctx.load.run({ kind: 'org-stop' });
      await server.stop();
    }
    if (broke) break;
    largest = n;
    if (n >= plan.orgMax) break;
  }
  results.org = { steps, largest, target: plan.orgMax };
  const last = steps[steps.length - 1] as { people: number; window: OrgWindow; maxStallMs: number; rss: number };
  row('org', `largest organization within every limit (stepped from ${num(plan.orgStart)})`, largest ? num(largest) : `none (${broke})`, `${num(plan.orgMax)}`, largest >= plan.orgMax);
  row('org', `at ${num(last.people)}: send / delivery / presence p99`, `${ms(last.window.send.p99)} / ${ms(last.window.delivery.p99)} / ${ms(last.window.presence.p99)}`, '< 100 / 200 / 50 ms');
  row('org', `at ${num(last.people)}: longest stall, memory`, `${ms(last.maxStallMs)}, ${num(last.rss / 2 ** 20)} MiB`, '<= 100 ms, < 4 GiB');
  if (broke) row('org', `the limit that broke at ${num(last.people)}`, broke);
}

/** `--only storm`: every held client loses its queue at once (SIGKILL and restart). */
async function runStorm(ctx: PeopleContext): Promise<void> {
  const { plan } = ctx;
  const n = plan.stormPeople;
  const server = ctx.serverFor('storm');
  log(`storm: ${n} people`);
  try {
    await connectPeople(ctx, server, n, `storm${n}`);
    await ctx.load.run({ kind: 'org-run', warmupMs: 0, durationMs: Math.min(5_000, plan.orgWindowMs) });
    await ctx.load.run({ kind: 'org-storm-begin' });
    const t0 = wallMs();
    await server.kill();
    await server.start(ctx.redisEnv('storm'), ctx.ports);
    const restartMs = wallMs() - t0;
    await server.each({ reset: true });
    const r = await ctx.load.run<{ allBackMs: number; back: number; register: LatencySummary; ordinary: LatencySummary; counts: Record<string, number>; errors: Record<string, number>; firstErrors: string[] }>({
      kind: 'org-await-back',
      timeoutMs: plan.stormTimeoutMs,
    });
    const after = await server.stats();
    const allBackMs = r.allBackMs + restartMs;
    results.storm = { people: n, restartMs, ...r, allBackMs, maxStallMs: after.maxStallMs, rss: after.rss };
    const errs = Object.entries(r.errors);
    row('storm', `${num(n)} clients lose their queues (SIGKILL, restart in ${ms(restartMs)}): all back`, Number.isFinite(r.allBackMs) ? `${(allBackMs / 1000).toFixed(1)} s` : `${num(r.back)} of ${num(n)} after ${(plan.stormTimeoutMs / 1000).toFixed(0)} s`, '<= 60 s', allBackMs <= 60_000);
    row('storm', 'register during the storm: p50 / p99', `${ms(r.register.p50)} / ${ms(r.register.p99)} (${num(r.register.count)})`);
    row('storm', 'ordinary requests meanwhile (presence, typing, send, flags, history): p99', ms(r.ordinary.p99), '< 200 ms', !(r.ordinary.p99 >= 200));
    row('storm', 'errors other than BAD_EVENT_QUEUE_ID and 429', errs.length ? errs.map(([k, v]) => `${v} ${k}`).join(', ') : 'none', 'none', errs.length === 0);
    row('storm', 'longest stall, memory after', `${ms(after.maxStallMs)}, ${num(after.rss / 2 ** 20)} MiB`);
    log(`storm: all back in ${(allBackMs / 1000).toFixed(1)} s; register p99 ${ms(r.register.p99)}; ordinary p99 ${ms(r.ordinary.p99)}; ${errs.length ? `errors ${JSON.stringify(r.errors)} ${r.firstErrors[0]}` : 'no errors'}`);
  } finally {
    await ctx.load.run({ kind: 'org-stop' });
    await server.stop();
  }
}

/** CPU time of every PostgreSQL process of this machine (ms), from /proc; null where there is no /proc. */
function postgresCpuMs(): number | null {
  try {
    const tick = 100; // USER_HZ on Linux
    let total = 0;
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      let stat: string;
      try {
        if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
        stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      } catch {
        continue;
      }
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += ((Number(f[11]) + Number(f[12])) * 1000) / tick;
    }
    return total;
  } catch {
    return null;
  }
}

/** Redis's own CPU time (ms), from INFO cpu. */
async function redisCpuMs(url: string): Promise<number> {
  const { Redis } = await import('ioredis');
  const r = new Redis(url, { lazyConnect: true });
  await r.connect();
  try {
    const info = await r.info('cpu');
    const get = (k: string): number => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? 0);
    return (get('used_cpu_sys') + get('used_cpu_user')) * 1000;
  } finally {
    r.disconnect();
  }
}

/** `--only cost`: CPU time per message at a fixed load, over every server process, Redis and PostgreSQL. */
async function runCost(ctx: PeopleContext): Promise<void> {
  const { plan } = ctx;
  const server = ctx.serverFor('cost');
  const processes = server.servers.length;
  log(`cost: ${plan.costPeople} people, one message each per ${plan.costSendIntervalSeconds} s, ${processes} process(es)`);
  try {
    await connectPeople(ctx, server, plan.costPeople, `cost${plan.costPeople}`, plan.costSendIntervalSeconds);
    await ctx.load.run({ kind: 'org-run', warmupMs: 0, durationMs: Math.min(5_000, plan.costWindowMs) });
    const pg0 = ctx.dbKind === 'postgres' ? postgresCpuMs() : null;
    const redis0 = ctx.redisUrl ? await redisCpuMs(ctx.redisUrl) : null;
    const { w, cpuMs } = await orgWindow(ctx, server, 0, plan.costWindowMs);
    const pgMs = pg0 === null ? null : postgresCpuMs()! - pg0;
    const redisMs = redis0 === null ? null : (await redisCpuMs(ctx.redisUrl!)) - redis0;
    const sent = w.send.count;
    const per = (v: number | null): string => (v === null ? 'n/a' : sent ? `${(v / sent).toFixed(2)} ms` : 'n/a');
    results.cost = { processes, people: plan.costPeople, sent, deliveries: w.delivery.count, serverCpuMs: cpuMs, postgresCpuMs: pgMs, redisCpuMs: redisMs, window: w };
    row('cost', `${num(plan.costPeople)} people, ${num(sent)} messages, ${num(w.delivery.count)} deliveries, ${processes} process(es): Parley CPU per message`, per(cpuMs));
    row('cost', 'PostgreSQL / Redis CPU per message', `${per(pgMs)} / ${per(redisMs)}`);
    row('cost', 'send / delivery p99 meanwhile', `${ms(w.send.p99)} / ${ms(w.delivery.p99)}`);
    log(`cost: ${sent} messages; Parley ${per(cpuMs)}, PostgreSQL ${per(pgMs)}, Redis ${per(redisMs)} CPU per message`);
  } finally {
    await ctx.load.run({ kind: 'org-stop' });
    await server.stop();
  }
}

function printTable(title: string): void {
  const header: Row = { scenario: 'scenario', metric: 'metric', value: 'value', target: 'target', ok: null };
  const cells = (r: Row): string[] => [r.scenario, r.metric, r.value, r.target, r.ok === null ? '' : r.ok ? 'meets' : 'MISSES'];
  const all = [header, ...rows].map(cells);
  const widths = all[0]!.map((_, i) => Math.max(...all.map((c) => c[i]!.length)));
  const line = (c: string[]): string => c.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  process.stdout.write(`\nParley bench (${title})\n`);
  process.stdout.write(`${line(all[0]!)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n`);
  for (const c of all.slice(1)) process.stdout.write(`${line(c)}\n`);
}

await main();
