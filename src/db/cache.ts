import type {
  CompiledQuery,
  DatabaseConnection,
  DatabaseIntrospector,
  Dialect,
  DialectAdapter,
  Driver,
  Kysely,
  QueryCompiler,
  QueryResult,
  TransactionSettings,
} from 'kysely';
import type { Tx } from './index.js';

/** Tables some cachedRead depends on: only commits to these concern other processes. */
const CACHED_TABLES = new Set<string>();

/**
 * Read-through cache for rows that almost every request reads and few requests change (the
 * organization, the authenticated user, group memberships, a channel and its subscribers),
 * invalidated by table: every statement that writes a table, whatever code issued it, makes
 * every cached read depending on that table stale once it commits.
 *
 * Correctness rests on two rules. (1) A table's generation is bumped after each commit that
 * wrote it (after the statement, outside a transaction), before the writer's transaction
 * resolves and so before any event or response reports the change. (2) A value is stored only
 * if no dependency was bumped while it was being loaded: a reader that raced a commit just
 * does not store what it read. Other processes' commits arrive through `CacheRemote`.
 */
export class ReadCache {
  private readonly generations = new Map<string, number>();
  private readonly entries = new Map<string, { version: number; value: unknown }>();
  private readonly inflight = new Map<string, { version: number; promise: Promise<unknown> }>();
  private counter = 0;
  /** Raised by invalidateAll: counts as a write to every table. */
  private base = 0;
  /** Runs before every lookup: detects commits by other processes (SQLite's data_version). */
  checkExternal: (() => void) | null = null;
  /** Propagates this process's commits to other processes (Redis or PostgreSQL NOTIFY). */
  remote: CacheRemote | null = null;

  constructor(private readonly maxEntries = 50_000) {}

  /** The largest generation among `deps`: changes whenever any of them is written. */
  private version(deps: readonly string[]): number {
    let v = this.base;
    for (const d of deps) {
      const g = this.generations.get(d);
      if (g !== undefined && g > v) v = g;
    }
    return v;
  }

  /**
   * The cached value of `key`, or `load()`'s result (stored when no dependency changed
   * meanwhile and `keep` accepts it). Values are frozen: callers share them and must copy
   * before changing anything.
   */
  async get<T>(key: string, deps: readonly string[], load: () => Promise<T>, keep: (value: T) => boolean = always): Promise<T> {
    this.checkExternal?.();
    const version = this.version(deps);
    const hit = this.entries.get(key);
    if (hit && hit.version === version) return hit.value as T;
    const running = this.inflight.get(key);
    if (running && running.version === version) return running.promise as Promise<T>;
    const promise = load().then((value) => {
      if (this.inflight.get(key)?.promise === promise) this.inflight.delete(key);
      if (this.version(deps) === version && keep(value)) this.store(key, version, deepFreeze(value));
      return value;
    });
    promise.catch(() => {
      if (this.inflight.get(key)?.promise === promise) this.inflight.delete(key);
    });
    this.inflight.set(key, { version, promise });
    return promise;
  }

  private store(key: string, version: number, value: unknown): void {
    this.entries.delete(key);
    this.entries.set(key, { version, value });
    if (this.entries.size > this.maxEntries) {
      // Oldest first: Map iterates in insertion order.
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  /** Marks `tables` as written: every cached value depending on one of them is stale. */
  invalidate(tables: Iterable<string>): void {
    const g = ++this.counter;
    for (const t of tables) this.generations.set(t, g);
  }

  /** Forgets everything (another process changed the database in unknown ways). */
  invalidateAll(): void {
    this.entries.clear();
    this.inflight.clear();
    this.base = ++this.counter;
  }

  /** Called by the database layer once a write to `tables` has committed. */
  async committed(tables: ReadonlySet<string>): Promise<void> {
    this.invalidate(tables);
    if (!this.remote) return;
    const shared = [...tables].filter((t) => CACHED_TABLES.has(t));
    if (shared.length > 0) await this.remote.publish(shared);
  }

  async close(): Promise<void> {
    await this.remote?.close();
    this.remote = null;
  }
}

/** How commits reach other processes' caches. */
export interface CacheRemote {
  publish(tables: string[]): Promise<void>;
  /** Brings this process up to date with every commit other processes had published before the call. */
  sync(): Promise<void>;
  close(): Promise<void>;
}

function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  Object.freeze(value);
  if (value instanceof Map) {
    for (const v of value.values()) deepFreeze(v);
  } else if (value instanceof Set) {
    for (const v of value) deepFreeze(v);
  } else {
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function always(): boolean {
  return true;
}

/**
 * Written, besides `messages`, by every statement that updates or deletes messages (not by
 * inserts): what a fact that only new messages cannot make false depends on ("this topic has
 * messages").
 */
export const MESSAGES_REWRITTEN = 'messages#rewritten';

// The verb and the table after INSERT [OR x] INTO, UPDATE or DELETE FROM, quoted or not.
const WRITE_TARGET = /\b(insert\s+(?:or\s+\w+\s+)?into|update|delete\s+from)\s+"?([A-Za-z_][A-Za-z0-9_]*)"?/gi;

/** Tables a statement writes to. Kysely compiles reads to "select ...": those are skipped at once. */
export function writtenTables(sql: string): string[] {
  const first = sql.charCodeAt(0) | 0x20;
  // select, savepoint, begin, commit, rollback, release, pragma
  if (first === 0x73 || first === 0x62 || first === 0x63 || first === 0x72 || first === 0x70) return [];
  const out: string[] = [];
  WRITE_TARGET.lastIndex = 0;
  for (let m = WRITE_TARGET.exec(sql); m; m = WRITE_TARGET.exec(sql)) {
    const table = m[2]!.toLowerCase();
    out.push(table);
    if (table === 'messages' && (m[1]!.charCodeAt(0) | 0x20) !== 0x69) out.push(MESSAGES_REWRITTEN);
  }
  return out;
}

type Committed = (tables: ReadonlySet<string>) => Promise<void>;

class ObservedConnection implements DatabaseConnection {
  /** Tables written by the open transaction on this connection, if one is open. */
  pending: Set<string> | null = null;

  constructor(
    readonly inner: DatabaseConnection,
    private readonly onCommit: Committed,
  ) {}

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const tables = writtenTables(compiledQuery.sql);
    const result = await this.inner.executeQuery<R>(compiledQuery);
    if (tables.length > 0) {
      if (this.pending) for (const t of tables) this.pending.add(t);
      else await this.onCommit(new Set(tables));
    }
    return result;
  }

  streamQuery<R>(compiledQuery: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(compiledQuery, chunkSize);
  }
}

class ObservedDriver implements Driver {
  private readonly wrappers = new WeakMap<DatabaseConnection, ObservedConnection>();

  constructor(
    private readonly inner: Driver,
    private readonly onCommit: Committed,
  ) {}

  // Both dialects' drivers implement savepoints.
  savepoint(c: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.inner.savepoint!(unwrap(c), name, compile);
  }

  rollbackToSavepoint(c: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.inner.rollbackToSavepoint!(unwrap(c), name, compile);
  }

  releaseSavepoint(c: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.inner.releaseSavepoint!(unwrap(c), name, compile);
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const c = await this.inner.acquireConnection();
    let w = this.wrappers.get(c);
    if (!w) {
      w = new ObservedConnection(c, this.onCommit);
      this.wrappers.set(c, w);
    }
    return w;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    await this.inner.beginTransaction(unwrap(connection), settings);
    (connection as ObservedConnection).pending = new Set();
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as ObservedConnection;
    const tables = c.pending;
    c.pending = null;
    await this.inner.commitTransaction(c.inner);
    if (tables && tables.size > 0) await this.onCommit(tables);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as ObservedConnection).pending = null;
    await this.inner.rollbackTransaction(unwrap(connection));
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(unwrap(connection));
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

function unwrap(c: DatabaseConnection): DatabaseConnection {
  return c instanceof ObservedConnection ? c.inner : c;
}

/** Wraps a dialect so that every committed write is reported to `cache`. */
export class ObservedDialect implements Dialect {
  constructor(
    private readonly inner: Dialect,
    private readonly cache: ReadCache,
  ) {}

  createDriver(): Driver {
    return new ObservedDriver(this.inner.createDriver(), (tables) => this.cache.committed(tables));
  }

  createQueryCompiler(): QueryCompiler {
    return this.inner.createQueryCompiler();
  }

  createAdapter(): DialectAdapter {
    return this.inner.createAdapter();
  }

  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return this.inner.createIntrospector(db);
  }
}

const attached = new WeakMap<object, ReadCache>();

/** Makes `kysely` (the root instance, never a transaction) read through `cache` in cachedRead functions. */
export function attachCache(kysely: object, cache: ReadCache): void {
  attached.set(kysely, cache);
}

/**
 * A repo read served from the database's ReadCache. Inside a transaction (whose Kysely
 * object has no cache attached) it always reads the database, so a transaction sees its own
 * writes. `deps` must name every table the read depends on.
 */
export function cachedRead<A extends unknown[], T>(
  name: string,
  deps: readonly string[],
  keyOf: (...args: A) => string,
  load: (db: Tx, ...args: A) => Promise<T>,
  keep?: (value: T) => boolean,
): (db: Tx, ...args: A) => Promise<T> {
  for (const d of deps) CACHED_TABLES.add(d);
  return (db, ...args) => {
    const cache = attached.get(db);
    if (!cache) return load(db, ...args);
    return cache.get(`${name}\u0000${keyOf(...args)}`, deps, () => load(db, ...args), keep);
  };
}
