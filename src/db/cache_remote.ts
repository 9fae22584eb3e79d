import type { Redis } from 'ioredis';
import type PgModule from 'pg';
import { lazyRequire } from '../lib/lazy.js';
import type { CacheRemote, ReadCache } from './cache.js';

const ioredis = lazyRequire<typeof import('ioredis')>('ioredis');
const pg = lazyRequire<typeof PgModule>('pg');

/**
 * Read-cache invalidation between processes sharing a database.
 *
 * With Redis (the scaled-out mode), each table has a generation counter in one Redis hash: a
 * process increments the counters of the tables it committed to before it answers, and
 * reads the hash at the start of every request. So a change answered by one process is seen
 * by the very next request on any other process, as with a shared cache, while hits are
 * still served from local memory. The requests that arrive in one turn of the event loop
 * share one read, sent at the end of that turn: after every one of them arrived, so it sees
 * whatever was committed before any of them (ten thousand re-polls after a fan-out read the
 * hash a few dozen times instead of ten thousand).
 */
export class RedisCacheRemote implements CacheRemote {
  private readonly redis: Redis;
  private readonly key: string;
  /** The counters as of our last read or write. */
  private readonly seen = new Map<string, number>();
  /** The read that requests arriving now will share, not sent yet. */
  private nextRead: Promise<void> | null = null;

  constructor(
    url: string,
    prefix: string,
    private readonly cache: ReadCache,
  ) {
    this.redis = new (ioredis().Redis)(url, { enableAutoPipelining: true, maxRetriesPerRequest: 2 });
    // A lost connection fails the commands that need it (and GET /health/ready says so);
    // ioredis reconnects by itself. Without a listener it printed every retry to stderr.
    this.redis.on('error', () => undefined);
    this.key = `${prefix}cache:generations`;
  }

  async publish(tables: string[]): Promise<void> {
    const multi = this.redis.multi();
    for (const t of tables) multi.hincrby(this.key, t, 1);
    const results = (await multi.exec()) ?? [];
    tables.forEach((t, i) => {
      const value = Number(results[i]?.[1]);
      // Only our own increment happened since we last looked: nothing else to invalidate.
      if (this.seen.get(t) === value - 1) this.seen.set(t, value);
    });
  }

  sync(): Promise<void> {
    this.nextRead ??= new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        this.nextRead = null;
        this.read().then(resolve, reject);
      });
    });
    return this.nextRead;
  }

  private async read(): Promise<void> {
    const all = await this.redis.hgetall(this.key);
    let changed: string[] | null = null;
    for (const [t, v] of Object.entries(all)) {
      const n = Number(v);
      if (this.seen.get(t) === n) continue;
      this.seen.set(t, n);
      (changed ??= []).push(t);
    }
    if (changed) this.cache.invalidate(changed);
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

const CHANNEL = 'parley_read_cache';

/**
 * PostgreSQL without Redis is the one-server-process mode; other writers are occasional
 * command-line runs. Their commits arrive through LISTEN/NOTIFY. `sync` makes that exact, as
 * Redis is: PostgreSQL hands a listening session every notification committed before its next
 * statement ends, so one round trip on the listening connection, shared by the requests that
 * arrive in one turn of the event loop, has delivered every commit made before they arrived
 * (a grant by `npx parley` applies to the very next request). A lost connection forgets the
 * whole cache (notifications may have been missed) and is opened again by the next use.
 */
export class PostgresCacheRemote implements CacheRemote {
  private client: PgModule.Client | null = null;
  private ready: Promise<PgModule.Client> | null = null;
  private nextRead: Promise<void> | null = null;

  constructor(
    private readonly url: string,
    private readonly cache: ReadCache,
  ) {}

  start(): Promise<PgModule.Client> {
    if (this.ready) return this.ready;
    const client = new (pg().Client)({ connectionString: this.url });
    this.client = client;
    const lost = () => {
      if (this.client !== client) return;
      this.client = null;
      this.ready = null;
      this.cache.invalidateAll();
      client.end().catch(() => undefined);
    };
    // A dropped connection only delays invalidation by others; it must not crash the server.
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (n) => {
      if (n.channel === CHANNEL && n.payload) this.cache.invalidate(n.payload.split(','));
    });
    const ready = client.connect().then(async () => {
      await client.query(`LISTEN ${CHANNEL}`);
      return client;
    });
    ready.catch(lost);
    this.ready = ready;
    return ready;
  }

  async publish(tables: string[]): Promise<void> {
    const client = await this.start();
    await client.query('SELECT pg_notify($1, $2)', [CHANNEL, tables.join(',')]);
  }

  sync(): Promise<void> {
    this.nextRead ??= new Promise<void>((resolve) => {
      setImmediate(() => {
        this.nextRead = null;
        // Unreachable, the request goes on with what this process knows (its own queries fail
        // on their own if the database is down).
        this.start()
          .then((client) => client.query('SELECT 1'))
          .then(() => resolve(), () => resolve());
      });
    });
    return this.nextRead;
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.ready = null;
    await client?.end().catch(() => undefined);
  }
}
