import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabaseUrl, testDatabases } from './helpers/server.js';
import { ApiClient } from './helpers/client.js';
import { err, ok } from './helpers/assert.js';
import { loadConfig } from '../src/config.js';
import { buildApp, type App } from '../src/app.js';
import { main } from '../src/cli/main.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `parley <args>` in this process with its environment set to `env` (only), capturing
 * what it prints. The command opens the database itself, as the real CLI does; one test
 * below also runs the installed entry point as a separate process.
 */
async function parley(env: Record<string, string>, ...args: string[]): Promise<Run> {
  const saved = process.env;
  const out: string[] = [];
  const errOut: string[] = [];
  process.env = { PATH: saved.PATH ?? '', PARLEY_ENV_FILE: '/nonexistent', ...env };
  try {
    const code = await main(['node', 'parley', ...args], { out: (t) => out.push(t), err: (t) => errOut.push(t) });
    return { code, stdout: out.join(''), stderr: errOut.join('') };
  } finally {
    process.env = saved;
  }
}

/** The real entry point (bin/parley.js), as `npx parley` runs it. */
function parleyProcess(env: Record<string, string>, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bin/parley.js', ...args],
      { env: { PATH: process.env.PATH ?? '', PARLEY_ENV_FILE: '/nonexistent', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

function json(run: Run): any {
  assert.equal(run.code, 0, `exit ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

for (const kind of testDatabases()) {
  describe(`admin CLI [${kind}]`, () => {
    let env: Record<string, string>;
    let drop: () => Promise<void>;
    let dataDir: string;
    let app: App | undefined;
    let api: (email: string, key: string) => ApiClient;
    let anonymous: ApiClient;

    before(async () => {
      const db = await freshDatabaseUrl(kind);
      drop = db.drop;
      dataDir = mkdtempSync(join(tmpdir(), 'parley-cli-'));
      env = { DATABASE_URL: db.url, PARLEY_DATA_DIR: dataDir, PARLEY_OWNER_EMAIL: 'boss@example.com', PARLEY_OWNER_PASSWORD: 'boss-password' };
    });

    after(async () => {
      await app?.close();
      await drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    /** A server on the same database, started after the CLI created it. */
    async function server(): Promise<void> {
      if (app) return;
      const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent', ...env });
      app = await buildApp({ ...base, logLevel: 'silent', rateLimits: { ...base.rateLimits, enabled: false } });
      await app.fastify.listen({ port: 0, host: '127.0.0.1' });
      const addr = app.fastify.server.address();
      const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
      api = (email, key) => new ApiClient(url, email, key);
      anonymous = new ApiClient(url, null, null);
    }

    test('create-user prints {user_id, email, api_key}; the key works against the server', async () => {
      const created = json(await parleyProcess(env, 'create-user', '--email', 'ada@example.com', '--full-name', 'Ada Lovelace', '--password', 'analytical-engine', '--role', 'admin'));
      assert.deepEqual(Object.keys(created).sort(), ['api_key', 'email', 'user_id']);
      assert.equal(created.email, 'ada@example.com');
      assert.match(created.api_key, /^[A-Za-z0-9]{32}$/);
      await server();
      const me = ok(await api(created.email, created.api_key).get('/users/me'));
      assert.equal(me.user_id, created.user_id);
      assert.equal(me.full_name, 'Ada Lovelace');
      assert.equal(me.role, 200);
      assert.equal(ok(await anonymous.post('/fetch_api_key', { username: 'ada@example.com', password: 'analytical-engine' })).api_key, created.api_key);
      // The first run bootstrapped the organization with the configured owner.
      ok(await anonymous.post('/fetch_api_key', { username: 'boss@example.com', password: 'boss-password' }));
    });

    test('create-user --bot and roles; refusals exit non-zero with a clear message', async () => {
      const bot = json(await parley(env, 'create-user', '--email', 'robot-bot@example.com', '--full-name', 'Robot', '--bot'));
      await server();
      const u = ok(await api(bot.email, bot.api_key).get('/users/me'));
      assert.equal(u.is_bot, true);
      const guest = json(await parley(env, 'create-user', '--email', 'visitor@example.com', '--full-name', 'Visitor', '--role', 'guest'));
      assert.equal(ok(await api(guest.email, guest.api_key).get('/users/me')).role, 600);

      const dup = await parley(env, 'create-user', '--email', 'ADA@example.com', '--full-name', 'Again');
      assert.equal(dup.code, 1);
      assert.equal(dup.stderr.trim(), "Error: Email 'ADA@example.com' already in use");
      assert.equal(dup.stdout, '');
      const role = await parley(env, 'create-user', '--email', 'x@example.com', '--full-name', 'X', '--role', 'king');
      assert.equal(role.code, 1);
      assert.match(role.stderr, /Error: Invalid role 'king'/);
      const missing = await parley(env, 'create-user', '--email', 'x@example.com');
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /required option '--full-name <name>' not specified/);
      const badEmail = await parley(env, 'create-user', '--email', 'not-an-email', '--full-name', 'X');
      assert.equal(badEmail.code, 1);
      assert.match(badEmail.stderr, /Error: Invalid email address 'not-an-email'/);
      const unknown = await parley(env, 'frobnicate');
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /unknown command 'frobnicate'/);
    });

    test('change-password and api-key', async () => {
      await server();
      json(await parley(env, 'change-password', '--email', 'ada@example.com', '--password', 'difference-engine'));
      err(await anonymous.post('/fetch_api_key', { username: 'ada@example.com', password: 'analytical-engine' }), 401, 'AUTHENTICATION_FAILED');
      const login = ok(await anonymous.post('/fetch_api_key', { username: 'ada@example.com', password: 'difference-engine' }));
      const key = json(await parley(env, 'api-key', '--email', 'Ada@Example.com'));
      assert.deepEqual(key, { user_id: login.user_id, email: 'ada@example.com', api_key: login.api_key });
      const missing = await parley(env, 'api-key', '--email', 'nobody@example.com');
      assert.equal(missing.code, 1);
      assert.equal(missing.stderr.trim(), "Error: No user with email 'nobody@example.com'");
    });

    test('grant --permission can_change_user_emails lets an owner change emails', async () => {
      await server();
      const owner = json(await parley(env, 'api-key', '--email', 'boss@example.com'));
      const target = json(await parley(env, 'create-user', '--email', 'old@example.com', '--full-name', 'Old Address'));
      const boss = api(owner.email, owner.api_key);
      err(await boss.patch(`/users/${target.user_id}`, { new_email: 'new@example.com' }), 400, 'BAD_REQUEST', 'User not authorized to change user emails');
      const granted = json(await parley(env, 'grant', '--email', 'boss@example.com', '--permission', 'can_change_user_emails'));
      assert.deepEqual(granted, { user_id: owner.user_id, email: 'boss@example.com', permission: 'can_change_user_emails', value: true });
      ok(await boss.patch(`/users/${target.user_id}`, { new_email: 'new@example.com' }));
      assert.equal(ok(await boss.get(`/users/${target.user_id}`)).user.delivery_email, 'new@example.com');
      json(await parley(env, 'grant', '--email', 'boss@example.com', '--permission', 'can_change_user_emails', '--revoke'));
      err(await boss.patch(`/users/${target.user_id}`, { new_email: 'newer@example.com' }), 400, 'BAD_REQUEST', 'User not authorized to change user emails');
      const bad = await parley(env, 'grant', '--email', 'boss@example.com', '--permission', 'can_fly');
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /Error: Unknown permission 'can_fly'/);
    });

    test('demo adds users, channels and messages that clients can use', async () => {
      const demo = json(await parley(env, 'demo', '--password', 'demo-secret'));
      assert.deepEqual(demo.channels, ['general', 'design', 'random', 'core team']);
      assert.equal(demo.messages, 13);
      assert.equal(demo.users.length, 6);
      await server();
      const hamlet = demo.users.find((u: { email: string }) => u.email === 'hamlet@example.com');
      const login = ok(await anonymous.post('/fetch_api_key', { username: 'hamlet@example.com', password: 'demo-secret' }));
      assert.equal(login.user_id, hamlet.user_id);
      const client = api(login.email, login.api_key);
      const names = ok(await client.get('/users/me/subscriptions')).subscriptions.map((s: { name: string }) => s.name).sort();
      assert.deepEqual(names, ['design', 'general', 'random']);
      const db = app!.services.db.kysely;
      const count = await db.selectFrom('messages').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      assert.equal(Number(count.n), 13);
      // Running it again reuses the users and channels.
      const again = json(await parley(env, 'demo', '--password', 'demo-secret'));
      assert.deepEqual(again.users.map((u: { user_id: number }) => u.user_id), demo.users.map((u: { user_id: number }) => u.user_id));
    });
  });
}
