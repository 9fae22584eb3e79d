import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const RESULTS_DIR = join(ROOT, 'bench', 'results');

const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
const cores = availableParallelism();

export interface Pinning {
  /** The core of server process k (0-based; the ceiling server runs where server 0 does), or null. */
  server(k: number): number | null;
  load: number | null;
  describe(): string;
}

/**
 * Where each process runs. One server process: the server on core 0, the load generator on
 * core 1, so the generator never steals the server's CPU. Several: server k on core k (modulo
 * the cores) and the load generator unpinned, sharing the cores with them, since there is no
 * core left for it. Without taskset nothing is pinned.
 */
export function pinningFor(processes: number): Pinning {
  const servers = processes === 1 ? 'server' : `${processes} server processes`;
  if (!hasTaskset) return { server: () => null, load: null, describe: () => `not pinned (no taskset); ${cores} cores shared by ${servers} and load generator` };
  if (processes === 1) {
    if (cores < 2) return { server: () => 0, load: null, describe: () => 'server pinned to core 0 (taskset); one core, shared with the load generator' };
    return { server: () => 0, load: 1, describe: () => `server pinned to core 0, load generator to core 1 (taskset -c); ${cores} cores` };
  }
  const server = (k: number): number => k % cores;
  const where = Array.from({ length: processes }, (_, k) => `#${k + 1} on core ${server(k)}`).join(', ');
  return {
    server,
    load: null,
    describe: () => `${servers} pinned (taskset -c: ${where}); load generator not pinned, sharing the ${cores} cores with the servers`,
  };
}

// Raise the open-file limit to the hard limit: tens of thousands of held long-polls need as many sockets.
const RAISE_FD = 'h=$(ulimit -Hn); [ "$h" = unlimited ] && h=1048576; ulimit -n "$h" 2>/dev/null';

/** The open-file limit a process spawned through `spawnPinned` gets. */
export function fdLimit(): number {
  const r = spawnSync('sh', ['-c', `${RAISE_FD}; ulimit -n`], { encoding: 'utf8' });
  const n = Number(r.stdout.trim());
  return Number.isFinite(n) ? n : 1024;
}

export interface SpawnOptions {
  core: number | null;
  /** Node flags and script, e.g. ['--expose-gc', 'server.js']. */
  args: string[];
  env?: NodeJS.ProcessEnv;
  ipc?: boolean;
}

/** Starts `node <args>` through a shell that raises the fd limit, pinned with taskset when asked. */
export function spawnPinned(opts: SpawnOptions): ChildProcess {
  const cmd = [...(opts.core === null ? [] : ['taskset', '-c', String(opts.core)]), process.execPath, ...opts.args];
  return spawn('sh', ['-c', `${RAISE_FD}; exec "$@"`, 'sh', ...cmd], {
    cwd: ROOT,
    env: { ...process.env, ...opts.env },
    stdio: opts.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
}

/** Keeps the last lines a child printed, to explain a failure. */
export function captureOutput(child: ChildProcess, echo = false): () => string {
  const lines: string[] = [];
  const take = (chunk: Buffer): void => {
    const text = chunk.toString();
    if (echo) process.stderr.write(text);
    lines.push(...text.split('\n'));
    if (lines.length > 200) lines.splice(0, lines.length - 200);
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  return () => lines.join('\n');
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/**
 * Compiles src/ file by file to JavaScript, as `npm run build` does (one output file per
 * source file, same imports), in well under a second so every run measures the current code.
 * Returns the path of server.js.
 */
export async function buildServer(): Promise<string> {
  const outdir = join(RESULTS_DIR, '.server');
  rmSync(outdir, { recursive: true, force: true });
  await build({
    entryPoints: walk(join(ROOT, 'src')),
    outdir,
    outbase: join(ROOT, 'src'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    bundle: false,
    logLevel: 'error',
  });
  return join(outdir, 'server.js');
}
