import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import type PgModule from 'pg';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type KyselyConfig, type LogEvent, type Migration, type Transaction } from 'kysely';
import type { DB } from './tables.js';
import { migrations } from './migrations/index.js';
import { ObservedDialect, ReadCache, attachCache } from './cache.js';
import { PostgresCacheRemote } from './cache_remote.js';
import { startCheckpointer } from './checkpoints.js';
import { DeferredReceipts } from './receipts.js';
import { DeferredSearchIndex } from './search_index.js';
import { lazyRequire } from '../lib/lazy.js';
import { runtimeCounters } from '../lib/runtime_counters.js';

export type Dialect = 'sqlite' | 'postgres';
export type Tx = Transaction<DB> | Kysely<DB>;

export interface Database {
  kysely: Kysely<DB>;
  dialect: Dialect;
  /** Cached reads of hot rows, invalidated by every committed write (db/cache.ts, db/cached.ts). */
  cache: ReadCache;
  /** SQLite: user_messages rows written behind their messages (db/receipts.ts); set once migrated. */
  receipts: DeferredReceipts | null;
  /** SQLite: full-text index entries added behind their messages (db/search_index.ts); set once migrated. */
  searchIndex: DeferredSearchIndex | null;
  /** PostgreSQL: the connection pool's connections and the queries waiting for one. */
  poolStats?: () => { total: number; idle: number; waiting: number };
  /** Called by migrate() once the schema is current. */
  migrated(): void;
  close(): Promise<void>;
}

/** node-postgres, loaded only for a PostgreSQL database. */
export const pgModule = lazyRequire<typeof PgModule>('pg', (pg) => {
  // bigint columns hold IDs and Unix times, all far below 2^53: read them as numbers.
  pg.types.setTypeParser(20, (v) => Number(v));
});

export function parseDatabaseUrl(url: string): { dialect: Dialect; target: string } {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return { dialect: 'postgres', target: url };
  if (url.startsWith('sqlite:')) return { dialect: 'sqlite', target: url.slice('sqlite:'.length) };
  throw new Error(`DATABASE_URL must be sqlite:PATH or postgres://...; got ${url}`);
}

export interface OpenOptions {
  /**
   * False for a one-shot process (the CLI): no checkpoint thread (SQLite checkpoints inside
   * commits, as by default) and no background slices of deferred work (db/deferred.ts).
   */
  background?: boolean;
  /** Count every query and its duration in runtimeCounters (GET /metrics); off, no per-query cost. */
  observeQueries?: boolean;
}

/** Kysely's query log, summed into runtimeCounters. */
function queryObserver(observe: boolean): KyselyConfig['log'] {
  if (!observe) return undefined;
  return (event: LogEvent) => {
    runtimeCounters.dbQueries++;
    runtimeCounters.dbQuerySeconds += event.queryDurationMillis / 1000;
  };
}

export function openDatabase(url: string, { background = true, observeQueries = false }: OpenOptions = {}): Database {
  const { dialect, target } = parseDatabaseUrl(url);
  if (dialect === 'sqlite') {
    if (target !== ':memory:') mkdirSync(dirname(target), { recursive: true });
    const sqlite = new SQLite(target);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    // 128 MiB of page cache (SQLite's default is 2 MiB): the hot indexes of a busy server stay in memory.
    sqlite.pragma('cache_size = -131072');
    const hasTable = (name: string): boolean => sqlite.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
    const cache = new ReadCache();
    // Another process (the CLI, a second server) committed: nothing cached can be trusted.
    const dataVersion = sqlite.prepare('PRAGMA data_version').pluck();
    let seen = dataVersion.get();
    let checked = false;
    // Once per turn of the event loop: a commit by another process is not ordered with our requests anyway.
    const uncheck = (): void => {
      checked = false;
    };
    cache.checkExternal = () => {
      if (checked) return;
      checked = true;
      setImmediate(uncheck);
      const v = dataVersion.get();
      if (v !== seen) {
        seen = v;
        cache.invalidateAll();
        db.receipts?.noteExternalWrite();
        db.searchIndex?.noteExternalWrite();
      }
    };
    let stopCheckpoints: (() => Promise<void>) | null = null;
    if (background && target !== ':memory:' && target !== '') {
      sqlite.pragma('wal_autocheckpoint = 0');
      stopCheckpoints = startCheckpointer(target, () => sqlite.pragma('wal_autocheckpoint = 1000'));
    }
    const database = { close: () => sqlite.close(), prepare: statementCache(sqlite, () => db) };
    const kysely = new Kysely<DB>({ dialect: new ObservedDialect(new SqliteDialect({ database }), cache), log: queryObserver(observeQueries) });
    attachCache(kysely, cache);
    const db: Database = {
      kysely,
      dialect,
      cache,
      receipts: null,
      searchIndex: null,
      migrated: () => {
        if (!hasTable('user_messages_pending')) return;
        db.receipts ??= new DeferredReceipts(sqlite, cache, background);
        if (hasTable('messages_fts_pending')) db.searchIndex ??= new DeferredSearchIndex(sqlite, cache, background);
      },
      close: async () => {
        db.receipts?.close();
        db.searchIndex?.close();
        await cache.close();
        await stopCheckpoints?.();
        await kysely.destroy();
      },
    };
    // Opened on an existing database (the command-line tools): deferred work is done before it can be seen.
    db.migrated();
    return db;
  }
  const pool = new (pgModule().Pool)({ connectionString: target, max: 10 });
  // An idle client's error (e.g. the server restarting) must not crash the process.
  pool.on('error', () => undefined);
  const cache = new ReadCache();
  // Other processes' commits arrive as notifications (app.ts swaps in Redis when configured).
  const remote = new PostgresCacheRemote(target, cache);
  cache.remote = remote;
  void remote.start().catch(() => undefined);
  const kysely = new Kysely<DB>({ dialect: new ObservedDialect(new PostgresDialect({ pool }), cache), log: queryObserver(observeQueries) });
  attachCache(kysely, cache);
  return {
    kysely,
    dialect,
    cache,
    receipts: null,
    searchIndex: null,
    migrated: () => undefined,
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: async () => {
      await cache.close();
      await kysely.destroy();
    },
  };
}

/**
 * better-sqlite3's prepare() compiles the SQL every time, and Kysely calls it for every
 * query: reuse compiled statements (Kysely emits the same text for the same query shape).
 * Kysely prepares each statement just before running it, which makes this the chokepoint
 * where deferred work (db/deferred.ts) is done before anything reads or writes its table.
 */
function statementCache(
  sqlite: SQLite.Database,
  deferred: () => Pick<Database, 'receipts' | 'searchIndex'>,
  max = 2000,
): (sql: string) => SQLite.Statement {
  const statements = new Map<string, { stmt: SQLite.Statement; receipts: boolean; search: boolean; adds: boolean }>();
  return (sql) => {
    let entry = statements.get(sql);
    if (!entry) {
      entry = {
        stmt: sqlite.prepare(sql),
        receipts: DeferredReceipts.TABLE.test(sql),
        search: DeferredSearchIndex.TABLE.test(sql),
        adds: DeferredSearchIndex.ADDS.test(sql),
      };
      if (statements.size >= max) statements.delete(statements.keys().next().value as string);
      statements.set(sql, entry);
    }
    if (entry.receipts || entry.search || entry.adds) {
      const { receipts, searchIndex } = deferred();
      if (entry.receipts && receipts?.pending) receipts.flushAll();
      if (entry.search && searchIndex?.pending) searchIndex.flushAll();
      if (entry.adds) searchIndex?.noteAdded();
    }
    return entry.stmt;
  };
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
  db.migrated();
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
