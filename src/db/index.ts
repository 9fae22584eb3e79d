import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type Migration, type Transaction } from 'kysely';
import type { DB } from './tables.js';
import { migrations } from './migrations/index.js';

export type Dialect = 'sqlite' | 'postgres';
export type Tx = Transaction<DB> | Kysely<DB>;

export interface Database {
  kysely: Kysely<DB>;
  dialect: Dialect;
  close(): Promise<void>;
}

// bigint columns hold IDs and Unix times, all far below 2^53: read them as numbers.
pg.types.setTypeParser(20, (v) => Number(v));

export function parseDatabaseUrl(url: string): { dialect: Dialect; target: string } {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return { dialect: 'postgres', target: url };
  if (url.startsWith('sqlite:')) return { dialect: 'sqlite', target: url.slice('sqlite:'.length) };
  throw new Error(`DATABASE_URL must be sqlite:PATH or postgres://...; got ${url}`);
}

export function openDatabase(url: string): Database {
  const { dialect, target } = parseDatabaseUrl(url);
  if (dialect === 'sqlite') {
    if (target !== ':memory:') mkdirSync(dirname(target), { recursive: true });
    const sqlite = new SQLite(target);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    const kysely = new Kysely<DB>({ dialect: new SqliteDialect({ database: sqlite }) });
    return { kysely, dialect, close: () => kysely.destroy() };
  }
  const pool = new pg.Pool({ connectionString: target, max: 10 });
  // An idle client's error (e.g. the server restarting) must not crash the process.
  pool.on('error', () => undefined);
  const kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return { kysely, dialect, close: () => kysely.destroy() };
}

/** Applies every pending migration; safe to run at each start and from several processes. */
export async function migrate(db: Database): Promise<void> {
  const all: Record<string, Migration> = {};
  for (const [name, m] of Object.entries(migrations)) {
    all[name] = { up: (k) => m.up(k, db.dialect) };
  }
  const migrator = new Migrator({
    db: db.kysely,
    provider: { getMigrations: async () => all },
    // Areas number their migrations in their own ranges; order across areas does not matter.
    allowUnorderedMigrations: true,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`Migration ${failed?.migrationName ?? ''} failed: ${String(error)}`);
  }
}

/**
 * Runs fn in one transaction and calls the collected after-commit callbacks only once
 * it has committed, so events never announce a change that was rolled back.
 */
export async function transaction<T>(
  db: Database,
  fn: (tx: Transaction<DB>, afterCommit: (cb: () => void) => void) => Promise<T>,
): Promise<T> {
  const callbacks: (() => void)[] = [];
  const result = await db.kysely.transaction().execute((tx) => fn(tx, (cb) => callbacks.push(cb)));
  for (const cb of callbacks) cb();
  return result;
}

export const now = (): number => Math.floor(Date.now() / 1000);
