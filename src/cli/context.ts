import pino from 'pino';
import type { Config } from '../config.js';
import { migrate, openDatabase } from '../db/index.js';
import { RedisCacheRemote } from '../db/cache_remote.js';
import { fetchDatabaseId, redisNamespace } from '../db/identity.js';
import { countRealms } from '../db/repos/realms.js';
import { EventBus } from '../events/bus.js';
import type { ActionServices } from '../services.js';

export interface CliContext {
  services: ActionServices;
  /** Waits for the command's events and cache invalidations to be handed over, then closes the database. */
  close(): Promise<void>;
}

/**
 * What a one-shot admin command needs, and nothing that a server runs: the database, migrated
 * and bootstrapped as a server start would (the default organization on an empty database),
 * and an event bus for the actions it calls. It loads, restores and saves no event queue
 * (those belong to the running servers) and starts no timer, listener or background work.
 *
 * Where the command's events go:
 * - With REDIS_URL, into the shared event log that every server process delivers from, so
 *   connected clients get them (a user created here arrives as a `realm_user` event), and
 *   the read-cache counters are bumped, so the servers' next requests see the change.
 * - Without, nowhere: an embedded server's queues live in its own memory, out of this
 *   process's reach. The server still sees the change in the database (SQLite's
 *   data_version, PostgreSQL notifications); its connected clients see it when they next
 *   register, as after any missed event.
 */
export async function openCliContext(config: Config, announce: (line: string) => void): Promise<CliContext> {
  // stdout carries only the command's JSON.
  const log = pino({ level: 'warn' }, pino.destination({ fd: 2, sync: true }));
  const db = openDatabase(config.databaseUrl, { background: false });
  const events = new EventBus();
  let publisher: { close(): Promise<void> } | null = null;
  try {
    await migrate(db);
    if (config.redisUrl) {
      const databaseId = await fetchDatabaseId(db);
      // The servers' read caches are invalidated through Redis then, not the database.
      await db.cache.remote?.close();
      db.cache.remote = new RedisCacheRemote(config.redisUrl, redisNamespace(config.events.redisPrefix, databaseId), db.cache);
      const { RedisEventPublisher } = await import('../events/backends/redis.js');
      publisher = await RedisEventPublisher.connect(config, events, log, databaseId);
    }
    const services: ActionServices = { config, db, events, log };
    if ((await countRealms(db.kysely)) === 0) {
      const { ensureDefaultRealm } = await import('../actions/bootstrap.js');
      await ensureDefaultRealm(services, announce);
    }
    return {
      services,
      async close() {
        await publisher?.close();
        await db.close();
      },
    };
  } catch (e) {
    await publisher?.close();
    await db.close();
    throw e;
  }
}
