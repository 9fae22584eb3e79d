import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createReadStream, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGunzip, gunzipSync, gzipSync } from 'node:zlib';
import { freshDatabaseUrl, testDatabases } from './helpers/server.js';
import { ApiClient } from './helpers/client.js';
import { ok } from './helpers/assert.js';
import { basicAuth, fetchRaw, postFiles } from './helpers/uploads.js';
import { loadConfig } from '../src/config.js';
import { buildApp, type App } from '../src/app.js';
import { cliJson as json, parley, parleyProcess } from './helpers/cli.js';
import { TAR_END, readTar, tarHeader, tarPadding } from '../src/lib/tar.js';

/** A copy of the backup `file` whose manifest `edit` has changed (checksums stay those of the data). */
async function withEditedManifest(file: string, to: string, edit: (manifest: any) => void): Promise<void> {
  const parts: Buffer[] = [];
  await readTar(createReadStream(file).pipe(createGunzip()), ({ name }) => {
    const data: Buffer[] = [];
    return {
      write: (chunk) => void data.push(chunk),
      end: () => {
        let body = Buffer.concat(data);
        if (name === 'manifest.json') {
          const manifest = JSON.parse(body.toString('utf8'));
          edit(manifest);
          body = Buffer.from(JSON.stringify(manifest));
        }
        parts.push(tarHeader(name, body.length, 0), body, tarPadding(body.length));
      },
    };
  });
  writeFileSync(to, gzipSync(Buffer.concat([...parts, TAR_END])));
}

for (const kind of testDatabases()) {
  describe(`backup and restore [${kind}]`, () => {
    const databases: { url: string; drop: () => Promise<void> }[] = [];
    const apps: App[] = [];
    let work: string;

    const database = async (): Promise<string> => {
      const db = await freshDatabaseUrl(kind);
      databases.push(db);
      return db.url;
    };
    const envFor = (url: string): Record<string, string> => ({ DATABASE_URL: url, PARLEY_DATA_DIR: work, PARLEY_OWNER_EMAIL: 'boss@example.com', PARLEY_OWNER_PASSWORD: 'boss-password' });

    async function server(url: string): Promise<{ app: App; url: string }> {
      const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent', ...envFor(url) });
      const app = await buildApp({ ...base, logLevel: 'silent', rateLimits: { ...base.rateLimits, enabled: false } });
      apps.push(app);
      await app.fastify.listen({ port: 0, host: '127.0.0.1' });
      const addr = app.fastify.server.address();
      return { app, url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}` };
    }

    before(() => {
      work = mkdtempSync(join(tmpdir(), 'parley-backup-'));
    });

    after(async () => {
      for (const app of apps) await app.close();
      for (const db of databases) await db.drop();
      rmSync(work, { recursive: true, force: true });
    });

    test('a backup taken during a send load restores to the same messages, receipts and uploads; damaged or newer backups are refused', async () => {
      const sourceUrl = await database();
      const source = await server(sourceUrl);
      const env = envFor(sourceUrl);
      const people = [];
      for (const name of ['alice', 'bob', 'carol']) {
        const u = json(await parley(env, 'create-user', '--email', `${name}@example.com`, '--full-name', name));
        people.push(new ApiClient(source.url, u.email, u.api_key));
      }
      const [alice, bob, carol] = people as [ApiClient, ApiClient, ApiClient];
      ok(await alice.post('/users/me/subscriptions', { subscriptions: [{ name: 'load' }], principals: ['alice@example.com', 'bob@example.com', 'carol@example.com'] }));

      const countMessages = async (app: App): Promise<number> =>
        Number((await app.services.db.kysely.selectFrom('messages').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
      const initial = await countMessages(source.app);

      // The load: each sender posts channel messages and direct messages, some with a fresh upload.
      let stop = false;
      let sent = 0;
      const uploads = new Map<string, Buffer>();
      const sender = async (me: ApiClient, other: string, n: number): Promise<void> => {
        for (let i = 0; !stop; i++) {
          let content = `message ${n}.${i}`;
          if (i % 4 === 0) {
            const data = randomBytes(2000 + i);
            const up = ok(await postFiles(me, '/user_uploads', [{ name: `file-${n}-${i}.bin`, data }]));
            uploads.set(up.url, data);
            content += ` [file](${up.url})`;
          }
          const params = i % 3 === 0 ? { type: 'private', to: JSON.stringify([other]), content } : { type: 'stream', to: 'load', topic: `topic ${i % 5}`, content };
          ok(await me.post('/messages', params));
          sent++;
        }
      };
      const load = Promise.all([sender(alice, 'bob@example.com', 1), sender(bob, 'carol@example.com', 2), sender(carol, 'alice@example.com', 3)]);
      while (sent < 30) await new Promise((r) => setTimeout(r, 20));
      const sentBefore = sent;
      const file = join(work, 'during-load.tar.gz');
      const backup = json(await parleyProcess(env, 'backup', '--to', file));
      const sentAfter = sent;
      while (sent < sentAfter + 15) await new Promise((r) => setTimeout(r, 20));
      stop = true;
      await load;

      assert.equal(backup.dialect, kind);
      assert.equal(backup.format, 'parley-backup');
      assert.ok(backup.migrations.includes('0001_initial'));
      // The snapshot fell inside the load: more than before the backup began, fewer than in the end
      // (give or take the three sends in flight as it ended).
      const messagesInBackup: number = backup.tables.messages;
      const loadInBackup = messagesInBackup - initial;
      assert.ok(loadInBackup >= sentBefore && loadInBackup <= sentAfter + 3, `${sentBefore} <= ${loadInBackup} <= ${sentAfter}`);
      assert.ok(messagesInBackup < (await countMessages(source.app)));
      assert.ok(backup.uploads.files > 0);

      const targetUrl = await database();
      const restored = json(await parley(envFor(targetUrl), 'restore', file));
      assert.deepEqual(restored.tables, backup.tables);
      assert.deepEqual(restored.uploads, backup.uploads);
      const target = await server(targetUrl);

      // GET /messages on the restored server: the messages of the snapshot, with the same flags.
      for (const me of people) {
        const narrow = { anchor: 'newest', num_before: 5000, num_after: 0, narrow: '[]' };
        const after = ok(await new ApiClient(target.url, me.email, me.apiKey).get('/messages', narrow)).messages;
        const original = ok(await me.get('/messages', narrow)).messages;
        const ids = new Set(after.map((m: { id: number }) => m.id));
        assert.ok(after.length > 0);
        assert.deepEqual(after, original.filter((m: { id: number }) => ids.has(m.id)));
      }
      // Receipts: every user_messages row of the restored messages, as in the source.
      const receipts = async (app: App, ids: number[]) =>
        app.services.db.kysely.selectFrom('user_messages').select(['user_id', 'message_id', 'flags']).where('message_id', 'in', ids).orderBy('message_id').orderBy('user_id').execute();
      const restoredIds = (await target.app.services.db.kysely.selectFrom('messages').select('id').execute()).map((r) => r.id);
      assert.equal(restoredIds.length, messagesInBackup);
      assert.deepEqual(await receipts(target.app, restoredIds), await receipts(source.app, restoredIds));
      // Uploads: every attachment of the snapshot is served with the bytes that were uploaded.
      const attachments = await target.app.services.db.kysely.selectFrom('attachments').innerJoin('users', 'users.id', 'attachments.owner_id').select(['path_id', 'users.email']).execute();
      assert.equal(attachments.length, backup.uploads.files);
      for (const a of attachments) {
        const owner = people.find((p) => p.email === a.email)!;
        const got = await fetchRaw(`${target.url}/user_uploads/${a.path_id}`, basicAuth(owner));
        assert.equal(got.status, 200);
        assert.ok(got.data.equals(uploads.get(`/user_uploads/${a.path_id}`)!), a.path_id);
      }

      // Refusals, each leaving the target database as empty as it was.
      const truncated = join(work, 'truncated.tar.gz');
      const whole = readFileSync(file);
      writeFileSync(truncated, whole.subarray(0, Math.floor(whole.length / 2)));
      const emptyUrl = await database();
      const cut = await parley(envFor(emptyUrl), 'restore', truncated);
      assert.equal(cut.code, 1);
      assert.equal(cut.stdout, '');
      assert.equal(cut.stderr, 'Error: The backup file is damaged or truncated (unexpected end of file); it cannot be restored\n');

      const newer = join(work, 'newer.tar.gz');
      await withEditedManifest(file, newer, (m) => m.migrations.push('9999_future_feature'));
      const future = await parley(envFor(emptyUrl), 'restore', newer);
      assert.equal(future.code, 1);
      assert.match(future.stderr, /^Error: The backup's schema is newer than this Parley \(0\.1\.0\): it has migrations this version does not know \(9999_future_feature\)/);

      const tampered = join(work, 'tampered.tar.gz');
      await withEditedManifest(file, tampered, (m) => (m.tables.messages += 1));
      const counted = await parley(envFor(emptyUrl), 'restore', tampered);
      assert.equal(counted.code, 1);
      assert.equal(counted.stderr, `Error: The backup file is damaged: the number of rows of messages (${messagesInBackup}, expected ${messagesInBackup + 1}) does not match its manifest\n`);

      const notEmpty = await parley(envFor(targetUrl), 'restore', file);
      assert.equal(notEmpty.code, 1);
      assert.match(notEmpty.stderr, /^Error: The (PostgreSQL )?database .*is not empty: restore only into a new database/);

      if (kind === 'sqlite') assert.equal(existsSync(emptyUrl.slice('sqlite:'.length)), false);
      // The refused restores left it empty: the intact backup still goes in.
      assert.deepEqual(json(await parley(envFor(emptyUrl), 'restore', file)).tables, backup.tables);
      assert.ok(gunzipSync(whole).subarray(0, 13).toString() === 'manifest.json');
    });
  });
}
