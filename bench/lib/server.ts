import type { ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { captureOutput, spawnPinned } from './proc.js';
import { freePort, sleep, wallMs } from './util.js';

export interface ServerStats {
  maxStallMs: number;
  p99StallMs: number;
  rss: number;
  heapUsed: number;
  external: number;
  cpuUserUs: number;
  cpuSystemUs: number;
  queues: number;
  uptimeMs: number;
  /** Path of the heap snapshot written when asked. */
  snapshot?: string;
}

export interface BenchTarget {
  databaseUrl: string;
  redisUrl: string | null;
  redisPrefix: string;
  dataDir: string;
  ownerEmail: string;
  ownerPassword: string;
}

/** One GET to 127.0.0.1; resolves with status and body, rejects on a connection error. */
export function httpGet(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The environment every bench server runs with: rate limits off, quiet logs, the debug stats
 * listener on. `externalPort` is the port of EXTERNAL_URL, the same for every process of a group.
 * Other PARLEY_* settings in the bench's own environment reach the servers, for experiments
 * (`PARLEY_HEARTBEAT_SECONDS=20 npm run bench -- --only org`).
 */
export function serverEnv(target: BenchTarget, port: number, statsPort: number, extra: NodeJS.ProcessEnv = {}, externalPort = port): NodeJS.ProcessEnv {
  return {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('PARLEY_'))),
    DATABASE_URL: target.databaseUrl,
    REDIS_URL: target.redisUrl ?? '',
    PARLEY_REDIS_PREFIX: target.redisPrefix,
    PARLEY_DATA_DIR: target.dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    EXTERNAL_URL: `http://localhost:${externalPort}`,
    PARLEY_OWNER_EMAIL: target.ownerEmail,
    PARLEY_OWNER_PASSWORD: target.ownerPassword,
    PARLEY_RATE_LIMITS: 'off',
    PARLEY_DEBUG_STATS_PORT: String(statsPort),
    PARLEY_ENV_FILE: '/nonexistent',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    ...extra,
  };
}

/**
 * A Parley server child process pinned to `core` (when not null). `start` returns the time from
 * spawning to the first answered request (GET /api/v1/server_settings), polled every 2 ms.
 */
export class BenchServer {
  private child: ChildProcess | null = null;
  private output: () => string = () => '';
  port = 0;
  statsPort = 0;
  private external = 0;

  constructor(
    private readonly serverJs: string,
    private readonly target: BenchTarget,
    private readonly core: number | null,
    private readonly nodeFlags: string[] = [],
  ) {}

  get externalPort(): number {
    return this.external;
  }

  async start(extraEnv: NodeJS.ProcessEnv = {}, port?: number, externalPort?: number): Promise<number> {
    this.port = port ?? (await freePort());
    this.external = externalPort ?? this.port;
    this.statsPort = await freePort();
    const t0 = wallMs();
    const child = spawnPinned({
      core: this.core,
      args: ['--expose-gc', ...this.nodeFlags, this.serverJs],
      env: serverEnv(this.target, this.port, this.statsPort, extraEnv, this.external),
    });
    this.child = child;
    this.output = captureOutput(child, process.env.BENCH_VERBOSE === '1');
    let exited = false;
    child.once('exit', () => (exited = true));
    for (;;) {
      if (exited) throw new Error(`server exited during start:\n${this.output()}`);
      try {
        const r = await httpGet(this.port, '/api/v1/server_settings');
        if (r.status === 200) break;
      } catch {
        // not listening yet
      }
      if (wallMs() - t0 > 120_000) throw new Error(`server did not answer within 120 s:\n${this.output()}`);
      await sleep(2);
    }
    const startMs = wallMs() - t0;
    // The stats listener opens right after the API one.
    for (let i = 0; i < 500; i++) {
      try {
        await this.stats();
        break;
      } catch {
        await sleep(5);
      }
    }
    return startMs;
  }

  async stats(opts: { gc?: boolean; reset?: boolean; snapshot?: boolean } = {}): Promise<ServerStats> {
    const q = new URLSearchParams();
    if (opts.gc) q.set('gc', '1');
    if (opts.reset) q.set('reset', '1');
    if (opts.snapshot) q.set('snapshot', '1');
    const r = await httpGet(this.statsPort, `/stats?${q}`);
    return JSON.parse(r.body) as ServerStats;
  }

  /** CPU time (ms) the server used since `since`. */
  static cpuMs(a: ServerStats, b: ServerStats): number {
    return (b.cpuUserUs + b.cpuSystemUs - a.cpuUserUs - a.cpuSystemUs) / 1000;
  }

  /** Waits until the server has been nearly idle (< 5% CPU) for `quietMs`. */
  async settle(quietMs = 300, timeoutMs = 60_000): Promise<void> {
    const t0 = wallMs();
    let prev = await this.stats();
    let prevAt = wallMs();
    let quietSince = prevAt;
    while (wallMs() - t0 < timeoutMs) {
      await sleep(100);
      const s = await this.stats();
      const at = wallMs();
      if (BenchServer.cpuMs(prev, s) / (at - prevAt) > 0.05) quietSince = at;
      else if (at - quietSince >= quietMs) return;
      prev = s;
      prevAt = at;
    }
  }

  /** SIGTERM (graceful: the profile, when --cpu-prof is on, is written at exit), then SIGKILL. */
  async stop(): Promise<void> {
    await this.end('SIGTERM');
    // Queues persisted at shutdown would be restored by the next scenario's server.
    rmSync(join(this.target.dataDir, 'event_queues.json'), { force: true });
  }

  /** SIGKILL, as a crash: nothing is written at exit (its queues are lost). */
  async kill(): Promise<void> {
    await this.end('SIGKILL');
  }

  /** Sends `signal` and waits for the exit (SIGKILL after 30 s). */
  private async end(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const done = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await done;
    clearTimeout(timer);
  }

  lastOutput(): string {
    return this.output();
  }
}

/**
 * The server processes of one scenario, sharing the database and Redis: process k listens on
 * ports[k], every one with EXTERNAL_URL on ports[0]. `stats` adds memory, CPU time and queues
 * up over the processes and keeps the longest stall; `each` gives them process by process.
 */
export class ServerGroup {
  constructor(readonly servers: BenchServer[]) {}

  /**
   * Starts process 0 alone (on an empty database it runs the migrations and creates the
   * organization), then the others one by one; returns process 0's start time.
   */
  async start(extraEnv: NodeJS.ProcessEnv, ports: number[]): Promise<number> {
    const startMs = await this.servers[0]!.start(extraEnv, ports[0]);
    for (let k = 1; k < this.servers.length; k++) await this.servers[k]!.start(extraEnv, ports[k], ports[0]);
    return startMs;
  }

  each(opts: { gc?: boolean; reset?: boolean; snapshot?: boolean } = {}): Promise<ServerStats[]> {
    return Promise.all(this.servers.map((s) => s.stats(opts)));
  }

  async stats(opts: { gc?: boolean; reset?: boolean; snapshot?: boolean } = {}): Promise<ServerStats> {
    const all = await this.each(opts);
    if (all.length === 1) return all[0]!;
    const sum = (f: (s: ServerStats) => number): number => all.reduce((total, s) => total + f(s), 0);
    return {
      maxStallMs: Math.max(...all.map((s) => s.maxStallMs)),
      p99StallMs: Math.max(...all.map((s) => s.p99StallMs)),
      rss: sum((s) => s.rss),
      heapUsed: sum((s) => s.heapUsed),
      external: sum((s) => s.external),
      cpuUserUs: sum((s) => s.cpuUserUs),
      cpuSystemUs: sum((s) => s.cpuSystemUs),
      queues: sum((s) => s.queues),
      uptimeMs: Math.min(...all.map((s) => s.uptimeMs)),
    };
  }

  async settle(quietMs?: number): Promise<void> {
    await Promise.all(this.servers.map((s) => s.settle(quietMs)));
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()));
  }

  async kill(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.kill()));
  }
}
