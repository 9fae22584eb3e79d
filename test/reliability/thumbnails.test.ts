import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { ApiClient } from '../helpers/client.js';
import { ok } from '../helpers/assert.js';
import { OWNER_EMAIL, testDatabases } from '../helpers/server.js';
import { basicAuth, fetchRaw, postFiles } from '../helpers/uploads.js';
import { fetchRealmByStringId } from '../../src/db/repos/realms.js';
import { fetchUserByEmail } from '../../src/db/repos/users.js';
import { childDeployment, type ChildDeployment, type ChildServer } from './child_server.js';

/**
 * The thumbnail worker in real server processes: its queue is the database, so an image
 * uploaded while no worker ran (and its process then killed) is thumbnailed after the restart,
 * and with two processes on PostgreSQL + Redis each image is made once (one rendering-only
 * update per message).
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function owner(d: ChildDeployment): Promise<{ email: string; apiKey: string }> {
  return d.setup(async (app) => {
    const db = app.services.db.kysely;
    const realm = (await fetchRealmByStringId(db, ''))!;
    const o = (await fetchUserByEmail(db, realm.id, OWNER_EMAIL))!;
    return { email: o.email, apiKey: o.api_key };
  });
}

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

const picture = (i: number) => sharp({ create: { width: 900 + i, height: 700, channels: 3, background: '#4a8' } }).png().toBuffer();

async function uploadAndSend(c: ApiClient, i: number): Promise<{ pathId: string; messageId: number }> {
  const pathId = ok(await postFiles(c, '/user_uploads', [{ field: 'file', name: `p${i}.png`, data: await picture(i), type: 'image/png' }])).url.slice('/user_uploads/'.length);
  const messageId = ok(await c.post('/messages', { type: 'stream', to: 'pictures', topic: 't', content: `[p${i}](/user_uploads/${pathId})` })).id;
  return { pathId, messageId };
}

const contentOf = async (c: ApiClient, id: number): Promise<string> => ok(await c.get(`/messages/${id}`)).message.content;

for (const kind of testDatabases()) {
  describe(`thumbnails across a SIGKILL [${kind}]`, () => {
    test('an image waiting for its thumbnail when the process is killed is thumbnailed after the restart', async () => {
      const d = await childDeployment(kind);
      let server: ChildServer | undefined;
      try {
        const o = await owner(d);
        server = await d.start({ PARLEY_THUMBNAILER: 'off' });
        let c = new ApiClient(server.url, o.email, o.apiKey);
        ok(await c.post('/users/me/subscriptions', { subscriptions: [{ name: 'pictures' }] }));
        const { pathId, messageId } = await uploadAndSend(c, 0);
        assert.match(await contentOf(c, messageId), /image-loading-placeholder/);
        server.process.kill('SIGKILL');
        await server.exited;

        server = await d.start();
        c = new ApiClient(server.url, o.email, o.apiKey);
        await waitFor('the thumbnail', 15_000, async () => (await contentOf(c, messageId)).includes(`src="/user_uploads/thumbnail/${pathId}/840x560.webp"`));
        const thumb = await fetchRaw(`${server.url}/user_uploads/thumbnail/${pathId}/840x560.webp`, basicAuth(c));
        assert.equal(thumb.status, 200);
        const meta = await sharp(thumb.data).metadata();
        assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 720, 560]);
      } finally {
        server?.process.kill('SIGTERM');
        await server?.exited;
        await d.drop();
      }
    });
  });
}

const scaledOut = process.env.TEST_POSTGRES_URL && process.env.TEST_REDIS_URL;

describe('thumbnails with two processes on PostgreSQL + Redis', () => {
  test(
    'each image is thumbnailed once',
    { skip: scaledOut ? false : 'needs TEST_POSTGRES_URL and TEST_REDIS_URL (two processes share PostgreSQL and Redis)' },
    async () => {
      const d = await childDeployment('postgres');
      const dataDirs = [mkdtempSync(join(tmpdir(), 'parley-child-b-')), mkdtempSync(join(tmpdir(), 'parley-child-c-'))];
      const servers: ChildServer[] = [];
      try {
        const o = await owner(d);
        const env = { REDIS_URL: process.env.TEST_REDIS_URL!, PARLEY_REDIS_PREFIX: `parley-thumb-${process.pid}:` };
        // The images are uploaded through a process that makes no thumbnails, and its event queue
        // sees every update; then two workers that look every 100 ms race for every row.
        const uploader = await d.start({ ...env, PARLEY_THUMBNAILER: 'off' });
        servers.push(uploader);
        const c = new ApiClient(uploader.url, o.email, o.apiKey);
        ok(await c.post('/users/me/subscriptions', { subscriptions: [{ name: 'pictures' }] }));
        const queue = ok(await c.post('/register', { event_types: JSON.stringify(['update_message']) }));
        const N = 8;
        const sent: { pathId: string; messageId: number }[] = [];
        for (let i = 0; i < N; i++) sent.push(await uploadAndSend(c, i));
        for (const dir of dataDirs) servers.push(await d.start({ ...env, PARLEY_THUMBNAILER_INTERVAL_MS: '100', PARLEY_DATA_DIR: dir }));
        await waitFor('every thumbnail', 30_000, async () => {
          for (const s of sent) if ((await contentOf(c, s.messageId)).includes('image-loading-placeholder')) return false;
          return true;
        });
        await sleep(1000);
        const events = ok(await c.get('/events', { queue_id: queue.queue_id, last_event_id: -1, dont_block: 'true' })).events.filter(
          (e: { type: string }) => e.type === 'update_message',
        );
        assert.deepEqual(events.map((e: { message_id: number }) => e.message_id).sort((x: number, y: number) => x - y), sent.map((s) => s.messageId));
        assert.ok(events.every((e: { rendering_only: boolean }) => e.rendering_only));
      } finally {
        for (const s of servers) {
          s.process.kill('SIGTERM');
          await s.exited;
        }
        await d.drop();
        for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
