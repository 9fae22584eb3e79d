import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { buildApp, type App } from '../../src/app.js';
import { freshDatabaseUrl, OWNER_EMAIL, PASSWORD, type DbKind } from '../helpers/server.js';

/**
 * The real server as a child process (`node --import tsx src/server.ts`), for tests that kill
 * it, restart it on the same database, or read its logs.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface ChildDeployment {
  kind: DbKind;
  databaseUrl: string;
  dataDir: string;
  /** Opens the database in this process (migrated, owner created) for setup; close it before start(). */
  setup<T>(fn: (app: App) => Promise<T>): Promise<T>;
  start(env?: Record<string, string>): Promise<ChildServer>;
  drop(): Promise<void>;
}

export interface ChildServer {
  url: string;
  port: number;
  process: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or signal name) once the process is gone. */
  exited: Promise<number | string>;
}

/** A fresh database and data directory that several server processes can be started on, one after another. */
export async function childDeployment(kind: DbKind): Promise<ChildDeployment> {
  const db = await freshDatabaseUrl(kind);
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-child-'));
  const baseEnv = (port: number): Record<string, string> => ({
    PATH: process.env.PATH ?? '',
    PARLEY_ENV_FILE: '/nonexistent',
    DATABASE_URL: db.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    EXTERNAL_URL: `http://localhost:${port}`,
    PARLEY_DATA_DIR: dataDir,
    PARLEY_OWNER_EMAIL: OWNER_EMAIL,
    PARLEY_OWNER_PASSWORD: PASSWORD,
    PARLEY_RATE_LIMITS: 'off',
    LOG_LEVEL: 'warn',
  });
  return {
    kind,
    databaseUrl: db.url,
    dataDir,
    async setup(fn) {
      // Setup runs no retention pass: it would take the cluster-wide job for the interval.
      const config = loadConfig({}, { ...baseEnv(0), LOG_LEVEL: 'silent', PARLEY_RETENTION: 'off' });
      const app = await buildApp(config, { announce: () => undefined });
      try {
        return await fn(app);
      } finally {
        await app.close();
      }
    },
    async start(env = {}) {
      const port = await freePort();
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
        env: { ...baseEnv(port), ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
      child.stderr!.on('data', (c: Buffer) => (out += c.toString('utf8')));
      const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`server did not start within 60 s:\n${out}`)), 60_000);
        const check = (): void => {
          if (out.includes('Parley is serving')) {
            clearTimeout(timer);
            resolve();
          }
        };
        child.stdout!.on('data', check);
        void exited.then((code) => {
          clearTimeout(timer);
          reject(new Error(`server exited (${code}) before serving:\n${out}`));
        });
      });
      return { url: `http://127.0.0.1:${port}`, port, process: child, output: () => out, exited };
    },
    async drop() {
      await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
