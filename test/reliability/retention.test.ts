import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { ApiClient } from '../helpers/client.js';
import { ok } from '../helpers/assert.js';
import { OWNER_EMAIL } from '../helpers/server.js';
import { fetchRealmByStringId } from '../../src/db/repos/realms.js';
import { fetchUserByEmail } from '../../src/db/repos/users.js';
import { childDeployment, type ChildServer } from './child_server.js';

/**
 * Message retention with two server processes on PostgreSQL + Redis, both looking for work
 * every 100 ms: every expired message is archived exactly once, in the batches one pass makes
 * (a second pass running beside the first would leave more, smaller archive transactions).
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const scaledOut = process.env.TEST_POSTGRES_URL && process.env.TEST_REDIS_URL;
const MESSAGES = 150;
const BATCH = 7;

describe('message retention with two processes on PostgreSQL + Redis', () => {
  test(
    'each expired message is archived once, by one pass',
    { skip: scaledOut ? false : 'needs TEST_POSTGRES_URL and TEST_REDIS_URL (two processes share PostgreSQL and Redis)' },
    async () => {
      const d = await childDeployment('postgres');
      const secondDataDir = mkdtempSync(join(tmpdir(), 'parley-child-b-'));
      const servers: ChildServer[] = [];
      try {
        const env = { REDIS_URL: process.env.TEST_REDIS_URL!, PARLEY_REDIS_PREFIX: `parley-retention-${process.pid}:` };
        const owner = await d.setup(async (app) => {
          const db = app.services.db.kysely;
          const realm = (await fetchRealmByStringId(db, ''))!;
          return (await fetchUserByEmail(db, realm.id, OWNER_EMAIL))!;
        });
        const first = await d.start({ ...env, PARLEY_RETENTION: 'off' });
        servers.push(first);
        const api = new ApiClient(first.url, owner.email, owner.api_key);
        ok(await api.post('/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'archive me' }]) }));
        const streamId = ok(await api.get('/get_stream_id', { stream: 'archive me' })).stream_id as number;
        for (let i = 0; i < MESSAGES; i++) ok(await api.post('/messages', { type: 'stream', to: streamId, topic: 't', content: `m${i}` }));
        ok(await api.patch(`/streams/${streamId}`, { message_retention_days: 1 }));
        first.process.kill('SIGTERM');
        await first.exited;
        servers.length = 0;
        await d.setup(async (app) => {
          await app.services.db.kysely.updateTable('messages').set({ date_sent: sql<number>`date_sent - 2 * 86400` }).where('stream_id', '=', streamId).execute();
        });

        const retentionEnv = { ...env, PARLEY_RETENTION_INTERVAL_MS: '100', PARLEY_RETENTION_CHANNEL_BATCH_SIZE: String(BATCH) };
        servers.push(await d.start(retentionEnv), await d.start({ ...retentionEnv, PARLEY_DATA_DIR: secondDataDir }));
        const counts = await d.setup(async (app) => {
          const db = app.services.db.kysely;
          const deadline = Date.now() + 30_000;
          for (;;) {
            const left = await db.selectFrom('messages').select('id').where('stream_id', '=', streamId).execute();
            if (left.length === 0) break;
            if (Date.now() > deadline) assert.fail(`${left.length} messages still live`);
            await sleep(100);
          }
          // Further passes of both processes find nothing more to do.
          await sleep(1000);
          const archived = await db.selectFrom('archived_messages').select(['id', 'archive_transaction_id']).where('stream_id', '=', streamId).execute();
          const transactions = await db.selectFrom('archive_transactions').select('id').execute();
          const receipts = await db.selectFrom('archived_user_messages').select('message_id').execute();
          return { archived: archived.length, distinct: new Set(archived.map((r) => r.id)).size, transactions: transactions.length, receipts: receipts.length };
        });
        assert.deepEqual(counts, { archived: MESSAGES, distinct: MESSAGES, transactions: Math.ceil(MESSAGES / BATCH), receipts: MESSAGES });
        for (const s of servers) assert.doesNotMatch(s.output(), /retention pass failed/i);
      } finally {
        for (const s of servers) s.process.kill('SIGTERM');
        await Promise.all(servers.map((s) => s.exited));
        await d.drop();
        rmSync(secondDataDir, { recursive: true, force: true });
      }
    },
  );
});
