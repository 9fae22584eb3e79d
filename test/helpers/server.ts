import { after, before, describe } from 'node:test';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig, type Config } from '../../src/config.js';
import { buildApp, type App } from '../../src/app.js';
import type { Realm, User } from '../../src/db/tables.js';
import { fetchRealmByStringId } from '../../src/db/repos/realms.js';
import { fetchUserByEmail } from '../../src/db/repos/users.js';
import { doCreateUser } from '../../src/actions/users.js';
import { ROLE_ADMINISTRATOR, ROLE_GUEST, ROLE_MEMBER, ROLE_MODERATOR } from '../../src/lib/roles.js';
import { ApiClient } from './client.js';

export type DbKind = 'sqlite' | 'postgres';

/** SQLite always; PostgreSQL too when TEST_POSTGRES_URL is set (CI sets it). */
export function testDatabases(): DbKind[] {
  return process.env.TEST_POSTGRES_URL ? ['sqlite', 'postgres'] : ['sqlite'];
}

/** A fresh, empty database of the given kind; `drop` removes it. */
export async function freshDatabaseUrl(kind: DbKind): Promise<{ url: string; drop: () => Promise<void> }> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'parley-test-'));
    return { url: `sqlite:${join(dir, 'test.sqlite3')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const admin = process.env.TEST_POSTGRES_URL!;
  const name = `parley_t_${process.pid}_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export interface CastMember {
  user: User;
  client: ApiClient;
  password: string;
}

/** The seeded users every API test can use. */
export interface Cast {
  owner: CastMember;
  admin: CastMember;
  moderator: CastMember;
  hamlet: CastMember;
  othello: CastMember;
  guest: CastMember;
  /** A generic bot owned by hamlet. */
  bot: CastMember;
}

export interface TestServer {
  kind: DbKind;
  url: string;
  app: App;
  config: Config;
  realm: Realm;
  cast: Cast;
  /** An unauthenticated client. */
  anonymous: ApiClient;
  clientFor(user: User): ApiClient;
  close(): Promise<void>;
}

export const OWNER_EMAIL = 'desdemona@example.com';
export const PASSWORD = 'correct horse battery staple';

/**
 * What every test server runs with: loopback on any port, the test owner, quiet logs, no rate
 * limits, no scheduled-message, thumbnail, notification, digest or retention worker, no periodic outgoing-webhook look (their periodic queries would
 * disturb query counts; the tests of those features turn them on) and a data directory of its own (the caller removes
 * `dataDir`).
 */
export function testConfig(databaseUrl: string, overrides: Partial<Config> = {}): Config {
  const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent' });
  return {
    ...base,
    databaseUrl,
    host: '127.0.0.1',
    port: 0,
    ownerEmail: OWNER_EMAIL,
    ownerPassword: PASSWORD,
    logLevel: 'silent',
    rateLimits: { ...base.rateLimits, enabled: false },
    scheduler: { ...base.scheduler, enabled: false },
    thumbnailer: { ...base.thumbnailer, enabled: false },
    notifications: { ...base.notifications, enabled: false },
    digests: { ...base.digests, enabled: false },
    retention: { ...base.retention, enabled: false },
    // The outgoing-webhook worker looks at its queue at start and when a send wakes it; its
    // periodic look (for other processes' rows) would disturb query counts.
    outgoingWebhookIntervalMs: 3_600_000,
    dataDir: mkdtempSync(join(tmpdir(), 'parley-data-')),
    ...overrides,
  };
}

/**
 * Builds and starts a server on `config`; returns it with its URL. Links and realm_uri name the
 * port it got, unless the test fixed `externalUrl` itself.
 */
export async function listenApp(config: Config, fixedExternalUrl?: string): Promise<{ app: App; url: string }> {
  const app = await buildApp(config, { announce: () => undefined });
  await app.fastify.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.fastify.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  config.externalUrl = fixedExternalUrl ?? `http://localhost:${port}`;
  return { app, url: `http://127.0.0.1:${port}` };
}

export async function startServer(kind: DbKind, overrides: Partial<Config> = {}): Promise<TestServer> {
  const db = await freshDatabaseUrl(kind);
  const config = testConfig(db.url, overrides);
  const { app, url } = await listenApp(config, overrides.externalUrl);
  const services = app.services;
  const realm = (await fetchRealmByStringId(services.db.kysely, ''))!;
  const clientFor = (user: User): ApiClient => new ApiClient(url, user.email, user.api_key);

  const mk = async (email: string, fullName: string, role: number, extra: { isBot?: boolean; botOwnerId?: number } = {}) => {
    const user = await doCreateUser(services, realm, { email, fullName, password: PASSWORD, role, actingUser: null, ...extra });
    return { user, client: clientFor(user), password: PASSWORD };
  };
  const ownerUser = (await fetchUserByEmail(services.db.kysely, realm.id, OWNER_EMAIL))!;
  const hamlet = await mk('hamlet@example.com', 'King Hamlet', ROLE_MEMBER);
  const cast: Cast = {
    owner: { user: ownerUser, client: clientFor(ownerUser), password: PASSWORD },
    admin: await mk('iago@example.com', 'Iago', ROLE_ADMINISTRATOR),
    moderator: await mk('shiva@example.com', 'Shiva', ROLE_MODERATOR),
    hamlet,
    othello: await mk('othello@example.com', 'Othello, the Moor of Venice', ROLE_MEMBER),
    guest: await mk('polonius@example.com', 'Polonius', ROLE_GUEST),
    bot: await mk('welcome-bot@example.com', 'Welcome Bot', ROLE_MEMBER, { isBot: true, botOwnerId: hamlet.user.id }),
  };
  return {
    kind,
    url,
    app,
    config,
    realm,
    cast,
    anonymous: new ApiClient(url, null, null),
    clientFor,
    async close() {
      await app.close();
      await db.drop();
      rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `fn` once per test database, each with its own server started before and closed
 * after; `fn` gets an accessor because the server exists only once `before` has run.
 */
export function forEachDatabase(
  name: string,
  fn: (server: () => TestServer) => void,
  overrides: Partial<Config> = {},
): void {
  for (const kind of testDatabases()) {
    describe(`${name} [${kind}]`, () => {
      let server: TestServer | undefined;
      before(async () => {
        server = await startServer(kind, overrides);
      });
      after(async () => {
        await server?.close();
      });
      fn(() => {
        if (!server) throw new Error('server not started');
        return server;
      });
    });
  }
}

/**
 * Records what the server's actions log (info and warn, as JSON) while `run` runs, for tests
 * proving that logs name people and outcomes but never secrets.
 */
export async function captureLogs(server: TestServer, run: () => Promise<void>): Promise<string> {
  const log = server.app.services.log as unknown as Record<'info' | 'warn', (...args: unknown[]) => void>;
  const lines: string[] = [];
  const saved = { info: log.info, warn: log.warn };
  for (const level of ['info', 'warn'] as const) {
    log[level] = (...args: unknown[]) => {
      lines.push(JSON.stringify(args));
      saved[level].apply(log, args);
    };
  }
  try {
    await run();
  } finally {
    log.info = saved.info;
    log.warn = saved.warn;
  }
  return lines.join('\n');
}
