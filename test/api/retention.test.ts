import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { cliJson, parley } from '../helpers/cli.js';
import { postFiles } from '../helpers/uploads.js';
import { captureEvents } from '../helpers/bus.js';
import { createChannel, sendDirect, sendStream, uniqueName } from './messages_send.fixtures.js';

const DAY = 86_400;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function backdate(s: TestServer, ids: number[], days: number): Promise<void> {
  await s.app.services.db.kysely.updateTable('messages').set({ date_sent: Math.floor(Date.now() / 1000) - days * DAY }).where('id', 'in', ids).execute();
}

async function liveIds(s: TestServer, ids: number[]): Promise<number[]> {
  const rows = await s.app.services.db.kysely.selectFrom('messages').select('id').where('id', 'in', ids).orderBy('id').execute();
  return rows.map((r) => r.id);
}

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

forEachDatabase(
  'message retention',
  (server) => {
    test('expired messages leave every read path after the background pass, and an administrator restores them', async () => {
      const s = server();
      const { owner, hamlet, othello } = s.cast;
      const db = s.app.services.db.kysely;
      const env = { DATABASE_URL: s.config.databaseUrl, PARLEY_DATA_DIR: s.config.dataDir };
      const name = uniqueName('Ephemeral');
      const keptName = uniqueName('Lasting');
      const foreverName = uniqueName('Forever');
      const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
      const kept = await createChannel(s, keptName, { subscribers: [hamlet.user, othello.user] });
      const forever = await createChannel(s, foreverName, { subscribers: [hamlet.user, othello.user] });

      const upload = ok(await postFiles(hamlet.client, '/user_uploads', [{ field: 'file', name: 'plan.txt', data: Buffer.from('the plan\n'), type: 'text/plain' }]));
      const expired = [
        await sendStream(hamlet.client, name, 'old news', `zebracrossing [plan](${upload.url})`),
        await sendStream(hamlet.client, name, 'old news', 'zebracrossing again'),
        await sendDirect(hamlet.client, [othello.user.id], 'zebracrossing in private'),
      ];
      const fresh = await sendStream(hamlet.client, name, 'new news', 'zebracrossing today');
      const inRealmWindow = await sendStream(hamlet.client, keptName, 'old news', 'zebracrossing kept by the realm policy');
      const unlimited = await sendStream(hamlet.client, foreverName, 'old news', 'zebracrossing kept forever');
      ok(await othello.client.post(`/messages/${expired[0]}/reactions`, { emoji_name: 'octopus' }));
      ok(await othello.client.post('/messages/flags', { messages: [expired[1]], op: 'add', flag: 'starred' }));

      // Channel: 1 day; organization (and so direct messages and the channel without a policy): 30 days; one channel unlimited.
      ok(await owner.client.patch('/realm', { message_retention_days: 30 }));
      ok(await owner.client.patch(`/streams/${stream.id}`, { message_retention_days: 1 }));
      ok(await owner.client.patch(`/streams/${forever.id}`, { message_retention_days: JSON.stringify('unlimited') }));
      await backdate(s, expired.slice(0, 2), 2);
      await backdate(s, [expired[2]!, unlimited], 40);
      await backdate(s, [inRealmWindow], 2);

      const { events } = await captureEvents(s, async () => {
        await waitUntil('the retention pass', async () => (await liveIds(s, expired)).length === 0);
      });
      // Zulip's archive_messages sends no events.
      assert.deepEqual(events.filter((e) => e.event.type === 'delete_message'), []);
      assert.deepEqual(await liveIds(s, [fresh, inRealmWindow, unlimited]), [fresh, inRealmWindow, unlimited]);

      const search = ok(await othello.client.get('/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow: [{ operator: 'search', operand: 'zebracrossing' }] }));
      assert.deepEqual(search.messages.map((m: { id: number }) => m.id), [fresh, inRealmWindow, unlimited].sort((a, b) => a - b));
      const inChannel = ok(await othello.client.get('/messages', { anchor: 'oldest', num_before: 0, num_after: 50, narrow: [{ operator: 'channel', operand: stream.id }] }));
      assert.deepEqual(inChannel.messages.map((m: { id: number }) => m.id), [fresh]);
      const dms = ok(await othello.client.get('/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow: [{ operator: 'dm', operand: [hamlet.user.id] }] }));
      assert.deepEqual(dms.messages, []);
      err(await othello.client.get(`/messages/${expired[0]}`), 400, 'BAD_REQUEST', 'Invalid message(s)');
      err(await othello.client.post(`/messages/${expired[0]}/reactions`, { emoji_name: 'smile' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
      err(await othello.client.post('/messages/flags', { messages: [expired[0]], op: 'add', flag: 'starred' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
      const topics = ok(await othello.client.get(`/users/me/${stream.id}/topics`)).topics.map((t: { name: string }) => t.name);
      assert.deepEqual(topics, ['new news']);
      const state = ok(await othello.client.post('/register', { fetch_event_types: ['message', 'update_message_flags'] }));
      const unread = state.unread_msgs;
      assert.deepEqual(unread.pms, []);
      assert.deepEqual(unread.streams.filter((c: { stream_id: number }) => c.stream_id === stream.id).flatMap((c: { unread_message_ids: number[] }) => c.unread_message_ids), [fresh]);
      assert.equal(unread.count, 3);
      err(await hamlet.client.get(upload.url), 404, 'NOT_FOUND');
      const attachments = ok(await hamlet.client.get('/attachments')).attachments;
      assert.equal(attachments.length, 0);

      // The archive: two transactions (the channel's batch, the direct messages'), listed newest first.
      const listed = cliJson(await parley(env, 'list-archived'));
      assert.deepEqual(
        listed.map((t: { type: string; message_count: number; stream_ids: number[]; restored: boolean }) => [t.type, t.message_count, t.stream_ids, t.restored]),
        [['retention_policy', 1, [], false], ['retention_policy', 2, [stream.id], false]],
      );
      assert.equal(cliJson(await parley(env, 'check')).ok, true);
      const refused = await parley(env, 'restore-archived', '--transaction', '999999');
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /No archive transaction 999999 in this organization/);

      // Restoring while the policy still applies would be undone by the next pass: lift it first.
      ok(await owner.client.patch(`/streams/${stream.id}`, { message_retention_days: JSON.stringify('unlimited') }));
      assert.deepEqual(cliJson(await parley(env, 'restore-archived', '--channel', name)), { transactions: [listed[1].id], restored_messages: 2 });
      assert.deepEqual(await liveIds(s, expired), expired.slice(0, 2));
      const again = await parley(env, 'restore-archived', '--transaction', String(listed[1].id));
      assert.match(again.stderr, new RegExp(`Archive transaction ${listed[1].id} was restored already`));
      const restored = ok(await othello.client.get('/messages', { anchor: 'oldest', num_before: 0, num_after: 50, narrow: [{ operator: 'channel', operand: stream.id }] }));
      assert.deepEqual(restored.messages.map((m: { id: number }) => m.id), [expired[0], expired[1], fresh]);
      assert.deepEqual(restored.messages[0].reactions.map((r: { emoji_name: string; user_id: number }) => [r.emoji_name, r.user_id]), [['octopus', othello.user.id]]);
      assert.deepEqual(restored.messages[1].flags, ['starred']);
      const found = ok(await othello.client.get('/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow: [{ operator: 'search', operand: 'zebracrossing' }] }));
      assert.equal(found.messages.length, 5);
      assert.equal((await hamlet.client.get(upload.url)).status, 200);
      assert.deepEqual(ok(await hamlet.client.get('/attachments')).attachments.map((a: { message_ids: number[] }) => a.message_ids), [[expired[0]]]);

      // The direct messages stay archived until the archive is purged; then they and their rows are gone for good.
      await db.updateTable('archive_transactions').set({ timestamp: Math.floor(Date.now() / 1000) - 31 * DAY }).execute();
      await waitUntil('the purge', async () => (await db.selectFrom('archive_transactions').select('id').execute()).length === 0);
      assert.deepEqual(cliJson(await parley(env, 'list-archived')), []);
      for (const table of ['archived_messages', 'archived_user_messages', 'archived_reactions', 'archived_attachments', 'archived_attachment_messages'] as const) {
        assert.equal((await db.selectFrom(table).selectAll().execute()).length, 0, table);
      }
      ok(await owner.client.patch('/realm', { message_retention_days: 'unlimited' }));
    });

    test('an upload only expired messages linked is deleted with its bytes once the archive is purged', async () => {
      const s = server();
      const { owner, hamlet } = s.cast;
      const env = { DATABASE_URL: s.config.databaseUrl, PARLEY_DATA_DIR: s.config.dataDir };
      const name = uniqueName('Shortlived');
      const stream = await createChannel(s, name, { subscribers: [hamlet.user] });
      const upload = ok(await postFiles(hamlet.client, '/user_uploads', [{ field: 'file', name: 'gone.txt', data: Buffer.from('bye\n'), type: 'text/plain' }]));
      const shared = ok(await postFiles(hamlet.client, '/user_uploads', [{ field: 'file', name: 'shared.txt', data: Buffer.from('hi\n'), type: 'text/plain' }]));
      const old = await sendStream(hamlet.client, name, 't', `[gone](${upload.url}) [shared](${shared.url})`);
      await sendStream(hamlet.client, name, 't', `[shared](${shared.url}) still linked`);
      ok(await owner.client.patch(`/streams/${stream.id}`, { message_retention_days: 3 }));
      await backdate(s, [old], 4);
      const db = s.app.services.db.kysely;
      await waitUntil('the retention pass', async () => (await liveIds(s, [old])).length === 0);
      err(await hamlet.client.get(upload.url), 404, 'NOT_FOUND');
      assert.equal((await hamlet.client.get(shared.url)).status, 200);
      const path = `uploads/${String(upload.url).slice('/user_uploads/'.length)}`;
      assert.equal((await db.selectFrom('stored_files').select('path').where('path', '=', path).execute()).length, 1, 'bytes kept while restorable');
      await db.updateTable('archive_transactions').set({ timestamp: Math.floor(Date.now() / 1000) - 31 * DAY }).execute();
      await waitUntil('the purge', async () => (await db.selectFrom('stored_files').select('path').where('path', '=', path).execute()).length === 0);
      assert.deepEqual(await db.selectFrom('archived_attachments').selectAll().execute(), []);
      assert.equal((await hamlet.client.get(shared.url)).status, 200);
      assert.equal(cliJson(await parley(env, 'check')).ok, true);
      // What an operator's own run reports (the worker has left nothing to do).
      assert.deepEqual(cliJson(await parley(env, 'archive-messages')), { archived_messages: 0, archive_transactions: 0, purged_transactions: 0, deleted_uploads: 0 });
    });
  },
  // A pass every 100 ms (the lease's next run is then "now"), with Zulip's batch sizes.
  { retention: { enabled: true, intervalMs: 100, batchSize: 1000, channelBatchSize: 100, archiveDays: 30 } },
);
