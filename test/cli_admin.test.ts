import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabaseUrl, testDatabases } from './helpers/server.js';
import { ApiClient } from './helpers/client.js';
import { err, ok } from './helpers/assert.js';
import { registerQueue } from './helpers/events.js';
import { postFiles } from './helpers/uploads.js';
import { cliJson as json, cliRefused, parley, parleyProcess } from './helpers/cli.js';
import { loadConfig } from '../src/config.js';
import { buildApp, type App } from '../src/app.js';

for (const kind of testDatabases()) {
  // On PostgreSQL with Redis, the CLI's events reach the server's clients (cli/context.ts).
  const redis = kind === 'postgres' ? process.env.TEST_REDIS_URL : undefined;
  describe(`admin CLI: users, organizations, messages, check [${kind}${redis ? '+redis' : ''}]`, () => {
    let env: Record<string, string>;
    let drop: () => Promise<void>;
    let dataDir: string;
    let app: App;
    let url: string;
    let boss: ApiClient;
    const api = (email: string, key: string) => new ApiClient(url, email, key);

    before(async () => {
      const db = await freshDatabaseUrl(kind);
      drop = db.drop;
      dataDir = mkdtempSync(join(tmpdir(), 'parley-cli-admin-'));
      env = { DATABASE_URL: db.url, PARLEY_DATA_DIR: dataDir, PARLEY_OWNER_EMAIL: 'boss@example.com', PARLEY_OWNER_PASSWORD: 'boss-password' };
      if (redis) Object.assign(env, { REDIS_URL: redis, PARLEY_REDIS_PREFIX: `cli-admin-${randomBytes(4).toString('hex')}:` });
      const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent', ...env });
      app = await buildApp({ ...base, logLevel: 'silent', rateLimits: { ...base.rateLimits, enabled: false } });
      await app.fastify.listen({ port: 0, host: '127.0.0.1' });
      const addr = app.fastify.server.address();
      url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
      const owner = json(await parley(env, 'api-key', '--email', 'boss@example.com'));
      boss = api(owner.email, owner.api_key);
    });

    after(async () => {
      await app.close();
      await drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    const auditRows = (userId: number, eventType: string) =>
      app.services.db.kysely.selectFrom('audit_log').select(['acting_user_id', 'event_type']).where('modified_user_id', '=', userId).where('event_type', '=', eventType).execute();

    test('list-users, set-role, change-email, deactivate-user and reactivate-user act through the actions', async () => {
      const ada = json(await parley(env, 'create-user', '--email', 'ada@example.com', '--full-name', 'Ada', '--password', 'ada-password'));
      const queue = redis ? await registerQueue(boss, { event_types: ['realm_user'] }) : null;

      const listed = json(await parleyProcess(env, 'list-users'));
      const adaRow = listed.find((u: { email: string }) => u.email === 'ada@example.com');
      assert.deepEqual(Object.keys(adaRow).sort(), ['date_joined', 'delivery_email', 'email', 'full_name', 'is_active', 'is_bot', 'role', 'user_id']);
      assert.equal(adaRow.role, 'member');
      assert.equal(adaRow.is_active, true);
      assert.equal(listed.find((u: { email: string }) => u.email === 'boss@example.com').role, 'owner');

      assert.deepEqual(json(await parley(env, 'set-role', '--email', 'ada@example.com', '--role', 'moderator')), { user_id: ada.user_id, email: 'ada@example.com', role: 'moderator' });
      assert.equal(ok(await boss.get(`/users/${ada.user_id}`)).user.role, 300);
      if (queue) await queue.next((e) => e.type === 'realm_user' && e.person.role === 300);

      const changed = json(await parley(env, 'change-email', '--email', 'ada@example.com', '--new-email', 'lovelace@example.com'));
      assert.equal(changed.delivery_email, 'lovelace@example.com');
      assert.equal(ok(await boss.get(`/users/${ada.user_id}`)).user.delivery_email, 'lovelace@example.com');
      assert.deepEqual(await auditRows(ada.user_id, 'user_email_changed'), [{ acting_user_id: null, event_type: 'user_email_changed' }]);
      if (queue) await queue.next((e) => e.type === 'realm_user' && e.person.delivery_email === 'lovelace@example.com');

      assert.deepEqual(json(await parley(env, 'deactivate-user', '--email', 'lovelace@example.com')), { user_id: ada.user_id, email: changed.email, is_active: false });
      err(await api(changed.email, ada.api_key).get('/users/me'), 401, 'USER_DEACTIVATED', 'Account is deactivated');
      if (queue) await queue.next((e) => e.type === 'realm_user' && e.person.user_id === ada.user_id && e.person.is_active === false);
      assert.equal(json(await parley(env, 'list-users')).some((u: { user_id: number }) => u.user_id === ada.user_id), false);
      assert.equal(json(await parley(env, 'list-users', '--all')).find((u: { user_id: number }) => u.user_id === ada.user_id).is_active, false);
      cliRefused(await parley(env, 'deactivate-user', '--email', 'lovelace@example.com'), "User 'lovelace@example.com' is already deactivated");

      json(await parley(env, 'reactivate-user', '--email', 'lovelace@example.com'));
      assert.equal(ok(await api(changed.email, ada.api_key).get('/users/me')).user_id, ada.user_id);
      assert.deepEqual(await auditRows(ada.user_id, 'user_reactivated'), [{ acting_user_id: null, event_type: 'user_reactivated' }]);
      cliRefused(await parley(env, 'reactivate-user', '--email', 'lovelace@example.com'), "User 'lovelace@example.com' is already active");

      // Refusals.
      cliRefused(await parley(env, 'deactivate-user', '--email', 'boss@example.com'), 'Cannot deactivate the only organization owner');
      cliRefused(await parley(env, 'set-role', '--email', 'boss@example.com', '--role', 'member'), 'The owner permission cannot be removed from the only organization owner');
      cliRefused(await parley(env, 'set-role', '--email', 'lovelace@example.com', '--role', 'emperor'), /^Error: Invalid role 'emperor'/);
      cliRefused(await parley(env, 'change-email', '--email', 'lovelace@example.com', '--new-email', 'boss@example.com'), "Email 'boss@example.com' already in use");
      cliRefused(await parley(env, 'change-email', '--email', 'lovelace@example.com', '--new-email', 'nope'), "Invalid email address 'nope'");
      cliRefused(await parley(env, 'deactivate-user', '--email', 'ghost@example.com'), "No user with email 'ghost@example.com'");
      cliRefused(await parley(env, '--realm', 'nowhere', 'list-users'), "No organization with string_id 'nowhere'");
    });

    test('create-organization and list-organizations: a second organization by subdomain', async () => {
      const created = json(await parley(env, 'create-organization', '--subdomain', 'acme', '--name', 'Acme Corp', '--owner-email', 'wile@acme.example', '--owner-password', 'beep-beep'));
      assert.equal(created.string_id, 'acme');
      assert.equal(created.name, 'Acme Corp');
      assert.match(created.url, /^http:\/\/acme\.localhost(:\d+)?$/);
      const auth = `Basic ${Buffer.from(`${created.owner.email}:${created.owner.api_key}`).toString('base64')}`;
      const me = await app.fastify.inject({ method: 'GET', url: '/api/v1/users/me', headers: { host: new URL(created.url).host, authorization: auth } });
      assert.equal(me.statusCode, 200);
      assert.equal(me.json().role, 100);
      // The key is the Acme owner's: the default organization does not know it.
      err(await api(created.owner.email, created.owner.api_key).get('/users/me'), 401, 'INVALID_API_KEY', 'Invalid API key');

      const orgs = json(await parleyProcess(env, 'list-organizations'));
      assert.deepEqual(
        orgs.map((o: { string_id: string; name: string; active_users: number; deactivated: boolean }) => [o.string_id, o.active_users, o.deactivated]),
        [['', orgs[0].active_users, false], ['acme', 1, false]],
      );
      assert.equal(json(await parley(env, '--realm', 'acme', 'list-users')).map((u: { email: string }) => u.email).join(), 'wile@acme.example');

      cliRefused(await parley(env, 'create-organization', '--subdomain', 'acme', '--name', 'Again', '--owner-email', 'x@acme.example'), "Subdomain 'acme' is already in use. Please choose a different one.");
      cliRefused(await parley(env, 'create-organization', '--subdomain', 'Bad_Name', '--name', 'X', '--owner-email', 'x@acme.example'), /^Error: Subdomains can only have lowercase letters/);
      cliRefused(await parley(env, 'create-organization', '--subdomain', 'www', '--name', 'X', '--owner-email', 'x@acme.example'), "Subdomain 'www' is reserved. Please choose a different one.");
    });

    test('send-message and delete-topic', async () => {
      const queue = redis ? await registerQueue(boss, { event_types: ['message', 'delete_message'], client_capabilities: { bulk_message_deletion: true } }) : null;
      ok(await boss.post('/users/me/subscriptions', { subscriptions: [{ name: 'ops' }] }));
      const sent = [];
      for (const n of [1, 2, 3]) {
        sent.push(json(await parley(env, 'send-message', '--sender', 'boss@example.com', '--type', 'channel', '--to', 'ops', '--topic', 'nightly', '--content', `run **${n}** done`)));
      }
      assert.match(sent[0].message_url, /#narrow\/channel\/\d+-ops\/topic\/nightly\/near\/\d+$/);
      const m = ok(await boss.get(`/messages/${sent[0].id}`)).message;
      assert.equal(m.content, '<p>run <strong>1</strong> done</p>');
      assert.equal(m.client, 'ParleyCLI');
      assert.equal(m.subject, 'nightly');
      if (queue) assert.equal((await queue.next('message')).message.id, sent[0].id);

      const dm = json(await parley(env, 'send-message', '--sender', 'boss@example.com', '--type', 'direct', '--to', 'lovelace@example.com', '--content', 'hello'));
      const ada = json(await parley(env, 'api-key', '--email', 'lovelace@example.com'));
      assert.equal(ok(await api(ada.email, ada.api_key).get(`/messages/${dm.id}`)).message.content, '<p>hello</p>');

      cliRefused(await parley(env, 'send-message', '--sender', 'boss@example.com', '--type', 'channel', '--to', 'nowhere', '--topic', 't', '--content', 'x'), /^Error: Channel 'nowhere' does not exist\n$/);
      cliRefused(await parley(env, 'send-message', '--sender', 'boss@example.com', '--type', 'channel', '--to', 'ops', '--content', 'x'), 'A channel message needs --topic');
      cliRefused(await parley(env, 'send-message', '--sender', 'boss@example.com', '--type', 'carrier-pigeon', '--to', 'ops', '--content', 'x'), "Invalid type 'carrier-pigeon': use channel or direct");

      const deleted = json(await parley(env, 'delete-topic', '--channel', 'ops', '--topic', 'nightly'));
      assert.equal(deleted.deleted_messages, 3);
      for (const s of sent) err(await boss.get(`/messages/${s.id}`), 400, 'BAD_REQUEST', 'Invalid message(s)');
      if (queue) assert.deepEqual((await queue.next('delete_message')).message_ids.sort(), sent.map((s) => s.id).sort());
      cliRefused(await parley(env, 'delete-topic', '--channel', 'ops', '--topic', 'nightly'), "Channel 'ops' has no topic 'nightly'");
      cliRefused(await parley(env, 'delete-topic', '--channel', 'nope', '--topic', 'nightly'), "No channel named 'nope'");
    });

    test('check compares the database with its stored files and fails on a missing one', async () => {
      const up = ok(await postFiles(boss, '/user_uploads', [{ name: 'report.txt', data: Buffer.from('quarterly numbers') }]));
      json(await parley(env, 'send-message', '--sender', 'boss@example.com', '--type', 'channel', '--to', 'ops', '--topic', 'files', '--content', `[report](${up.url})`));
      const clean = json(await parleyProcess(env, 'check'));
      assert.equal(clean.ok, true);
      assert.deepEqual(clean.problems, []);
      assert.ok(clean.counts.attachments >= 1 && clean.counts.stored_files >= 1);

      const pathId = up.url.replace('/user_uploads/', '');
      await app.services.db.kysely.deleteFrom('stored_files').where('path', '=', `uploads/${pathId}`).execute();
      const broken = await parley(env, 'check');
      assert.equal(broken.code, 1);
      assert.equal(broken.stderr, 'Error: 1 problem(s) found\n');
      const report = JSON.parse(broken.stdout);
      assert.equal(report.ok, false);
      assert.equal(report.problems.length, 1);
      assert.equal(report.problems[0].kind, 'attachment_file_missing');
      assert.match(report.problems[0].detail, new RegExp(`no stored file for ${pathId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    });
  });
}
