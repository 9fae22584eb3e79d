import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forEachDatabase, listenApp, testConfig, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { basicAuth, fetchRaw } from '../helpers/uploads.js';
import type { EventEnvelope } from '../../src/events/bus.js';
import { fetchHumanAdminIds, insertRealmExport, updateRealmExport } from '../../src/db/repos/realm_exports.js';
import { readZulipExport, type ZulipExport } from '../../src/lib/zulip_export/archive.js';
import type { RealmExportWorker } from '../../src/workers/realm_exports.js';

/**
 * Records realm_export events from now on; `done(id)` is the first in which export `id` is no
 * longer pending (the worker may finish before the request that queued it has answered).
 */
function watchExports(s: TestServer): { done(id: number): Promise<EventEnvelope>; stop(): void } {
  const seen: EventEnvelope[] = [];
  const waiters: { id: number; resolve: (e: EventEnvelope) => void }[] = [];
  const finished = (e: EventEnvelope, id: number) => (e.event.exports as { id: number; pending: boolean }[]).some((x) => x.id === id && !x.pending);
  const stop = s.app.services.events.subscribe((e) => {
    if (e.event.type !== 'realm_export') return;
    seen.push(e);
    for (const w of [...waiters]) if (finished(e, w.id)) w.resolve(e);
  });
  return {
    done: (id) =>
      new Promise((resolve) => {
        const hit = seen.find((e) => finished(e, id));
        if (hit) resolve(hit);
        else waiters.push({ id, resolve });
      }),
    stop,
  };
}

async function download(s: TestServer, url: string): Promise<ZulipExport> {
  const res = await fetchRaw(url.replace(/^http:\/\/localhost:\d+/, s.url), basicAuth(s.cast.owner.client));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/gzip');
  const dir = mkdtempSync(join(tmpdir(), 'parley-export-dl-'));
  try {
    writeFileSync(join(dir, 'export.tar.gz'), res.data);
    return await readZulipExport(join(dir, 'export.tar.gz'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

forEachDatabase('data exports', (server) => {
  test('POST /export/realm queues a public export; the worker writes it in Zulip\'s layout; administrators get realm_export events; GET lists it, DELETE removes it', async () => {
    const s = server();
    const { owner, admin, hamlet } = s.cast;
    const admins = await fetchHumanAdminIds(s.app.services.db.kysely, s.realm.id);
    const watch = watchExports(s);
    const { result, events } = await captureEvents(s, () => admin.client.post('/export/realm', {}));
    assertConforms(result, 'POST', '/export/realm');
    const id = ok(result).id as number;
    const queued = events.find((e) => e.event.type === 'realm_export')!;
    assert.deepEqual(recipientIds(queued), admins);
    const pending = (queued.event.exports as any[]).find((x) => x.id === id);
    assert.deepEqual({ ...pending, export_time: 0 }, {
      id, export_time: 0, acting_user_id: admin.user.id, export_url: null, deleted_timestamp: null, failed_timestamp: null, pending: true, export_type: 'public',
    });

    const finished = await watch.done(id);
    watch.stop();
    assert.deepEqual(recipientIds(finished), admins);
    const listed = ok(await owner.client.get('/export/realm'));
    assertConforms(await owner.client.get('/export/realm'), 'GET', '/export/realm');
    const row = listed.exports.find((x: any) => x.id === id);
    assert.equal(row.pending, false);
    assert.equal(row.failed_timestamp, null);
    assert.match(row.export_url, new RegExp(`^http://localhost:\\d+/user_avatars/exports/${s.realm.id}/[A-Za-z0-9_-]{24}/zulip-export-[a-z0-9-]*\\.tar\\.gz$`));
    assert.deepEqual(finished.event.exports, listed.exports);

    // The tarball: Zulip's realm.json tables, messages files, attachment.json.
    const data = await download(s, row.export_url);
    assert.equal(data.realm.zerver_realm![0]!.id, s.realm.id);
    for (const table of ['zerver_userprofile', 'zerver_stream', 'zerver_subscription', 'zerver_recipient', 'zerver_namedusergroup', 'zerver_usergroupmembership']) {
      assert.ok(Array.isArray(data.realm[table]), table);
    }
    assert.deepEqual(
      data.realm.zerver_userprofile!.map((u) => u.email).sort(),
      Object.values(s.cast).map((c) => c.user.email).sort(),
    );
    assert.ok(data.realm.zerver_userprofile!.every((u) => !('password' in u) && !('api_key' in u)));
    assert.ok(data.attachment.zerver_attachment);

    // Only administrators, of this organization, download it.
    const path = new URL(row.export_url).pathname;
    assert.equal((await fetchRaw(`${s.url}${path}`)).status, 401);
    assert.equal((await fetchRaw(`${s.url}${path}`, basicAuth(hamlet.client))).status, 404);

    err(await hamlet.client.get('/export/realm'), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    err(await hamlet.client.delete(`/export/realm/${id}`), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    const deleted = await captureEvents(s, () => owner.client.delete(`/export/realm/${id}`));
    ok(deleted.result);
    assertConforms(deleted.result, 'DELETE', '/export/realm/{export_id}');
    const after = (deleted.events[0]!.event.exports as any[]).find((x) => x.id === id);
    assert.equal(typeof after.deleted_timestamp, 'number');
    assert.equal(after.export_url, null);
    assert.equal((await fetchRaw(`${s.url}${path}`, basicAuth(owner.client))).status, 404);
    err(await owner.client.delete(`/export/realm/${id}`), 400, 'BAD_REQUEST', 'Invalid data export ID');
    err(await owner.client.delete('/export/realm/999999'), 400, 'BAD_REQUEST', 'Invalid data export ID');
  });

  test('who may ask for which export, and bad export types', async () => {
    const s = server();
    const { owner, admin, hamlet } = s.cast;
    err(await hamlet.client.post('/export/realm', {}), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    err(await admin.client.post('/export/realm', { export_type: 'full_with_consent' }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    err(await owner.client.post('/export/realm', { export_type: 'full_without_consent' }), 400, 'BAD_REQUEST', 'Full export without member consent is not allowed in this organization.');
    err(await owner.client.post('/export/realm', { export_type: 'everything' }), 400, 'BAD_REQUEST', 'Invalid export_type');
    err(await hamlet.client.get('/export/realm/consents'), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
  });

  test('a consent export holds private data only of consenting users; consent changes are realm_export_consent events', async () => {
    const s = server();
    const { owner, hamlet, othello, guest: polonius } = s.cast;
    const admins = await fetchHumanAdminIds(s.app.services.db.kysely, s.realm.id);
    const consent = await captureEvents(s, () => hamlet.client.patch('/settings', { allow_private_data_export: true }));
    ok(consent.result);
    const event = consent.events.find((e) => e.event.type === 'realm_export_consent')!;
    assert.deepEqual(event.event, { type: 'realm_export_consent', user_id: hamlet.user.id, consented: true });
    assert.deepEqual(recipientIds(event), admins);
    const consents = ok(await owner.client.get('/export/realm/consents'));
    assertConforms(await owner.client.get('/export/realm/consents'), 'GET', '/export/realm/consents');
    assert.deepEqual(consents.export_consents.find((c: any) => c.user_id === hamlet.user.id), { user_id: hamlet.user.id, consented: true, email_address_visibility: 1 });
    assert.equal(consents.export_consents.find((c: any) => c.user_id === othello.user.id).consented, false);

    const withHamlet = ok(await hamlet.client.post('/messages', { type: 'direct', to: JSON.stringify([othello.user.id]), content: 'hamlet to othello' })).id;
    const withoutHamlet = ok(await othello.client.post('/messages', { type: 'direct', to: JSON.stringify([polonius.user.id]), content: 'othello to polonius' })).id;
    ok(await othello.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'public room' }] }));
    const publicOne = ok(await othello.client.post('/messages', { type: 'stream', to: 'public room', topic: 't', content: 'in public' })).id;
    // Drafts, scheduled messages and saved snippets are private, as Zulip's consent export has them.
    const later = Math.floor(Date.now() / 1000) + 3600;
    for (const c of [hamlet, othello]) {
      ok(await c.client.post('/drafts', { drafts: [{ type: 'private', to: [polonius.user.id], topic: '', content: `draft of ${c.user.full_name}` }] }));
      ok(await c.client.post('/scheduled_messages', { type: 'direct', to: JSON.stringify([polonius.user.id]), content: `later from ${c.user.full_name}`, scheduled_delivery_timestamp: later }));
      ok(await c.client.post('/saved_snippets', { title: 'Mine', content: `snippet of ${c.user.full_name}` }));
    }
    const privateTables = (d: Awaited<ReturnType<typeof download>>) => ({
      drafts: d.realm.zerver_draft!.map((x) => [x.user_profile, x.content]),
      scheduled: d.realm.zerver_scheduledmessage!.map((x) => [x.sender, x.content, x.delivery_type, x.delivered, x.failed]),
      snippets: d.realm.zerver_savedsnippet!.map((x) => [x.user_profile, x.content]),
    });

    const watch = watchExports(s);
    const res = ok(await owner.client.post('/export/realm', { export_type: 'full_with_consent' }));
    const done = await watch.done(res.id);
    const row = (done.event.exports as any[]).find((x) => x.id === res.id);
    assert.equal(row.export_type, 'full_with_consent');
    const data = await download(s, row.export_url);
    const ids = new Set(data.messages.map((m) => m.id));
    assert.ok(ids.has(withHamlet) && ids.has(publicOne) && !ids.has(withoutHamlet));
    // Othello's flags travel only for public messages; Hamlet's for everything exported.
    const receipt = (user: number, message: number) => data.userMessages.some((um) => um.user_profile === user && um.message === message);
    assert.ok(receipt(hamlet.user.id, withHamlet) && !receipt(othello.user.id, withHamlet) && receipt(othello.user.id, publicOne));
    assert.deepEqual(privateTables(data), {
      drafts: [[hamlet.user.id, 'draft of King Hamlet']],
      scheduled: [[hamlet.user.id, 'later from King Hamlet', 1, false, false]],
      snippets: [[hamlet.user.id, 'snippet of King Hamlet']],
    });
    // Hamlet's draft and scheduled message name their recipient as Zulip does: Polonius's.
    const poloniusRecipient = data.realm.zerver_recipient!.find((r) => r.type === 1 && r.type_id === polonius.user.id)!.id;
    assert.equal(data.realm.zerver_draft![0]!.recipient, poloniusRecipient);
    assert.equal(data.realm.zerver_scheduledmessage![0]!.recipient, poloniusRecipient);

    const pub = ok(await owner.client.post('/export/realm', {}));
    const pubRow = ((await watch.done(pub.id)).event.exports as any[]).find((x) => x.id === pub.id);
    watch.stop();
    const pubData = await download(s, pubRow.export_url);
    const pubIds = new Set(pubData.messages.map((m) => m.id));
    assert.ok(pubIds.has(publicOne) && !pubIds.has(withHamlet) && !pubIds.has(withoutHamlet));
    assert.deepEqual(privateTables(pubData), { drafts: [], scheduled: [], snippets: [] });
  });

  test('exports survive a restart: queued and abandoned ones are written by the next server; at most 5 a week', async () => {
    const s = server();
    const db = s.app.services.db.kysely;
    // This server's worker stops, as at a shutdown: only the next server can write them.
    await (s.app.services.realmExports as RealmExportWorker).stop();
    // One accepted by a process that stopped before its worker ran, one whose writer died.
    const queued = await insertRealmExport(db, { realm_id: s.realm.id, acting_user_id: s.cast.owner.user.id, export_type: 'public', date_requested: Date.now() / 1000 });
    const abandoned = await insertRealmExport(db, { realm_id: s.realm.id, acting_user_id: s.cast.owner.user.id, export_type: 'public', date_requested: Date.now() / 1000 });
    await updateRealmExport(db, abandoned.id, { date_started: Date.now() / 1000 - 4000, claimed_until: Math.floor(Date.now() / 1000) - 60 });
    const config = testConfig(s.config.databaseUrl);
    const second = await listenApp(config);
    try {
      for (let i = 0; i < 600; i++) {
        const rows = ok(await s.cast.owner.client.get('/export/realm')).exports.filter((x: any) => [queued.id, abandoned.id].includes(x.id));
        if (rows.every((x: any) => !x.pending)) {
          assert.ok(rows.every((x: any) => x.export_url !== null && x.failed_timestamp === null));
          break;
        }
        assert.ok(i < 599, 'the exports were never written');
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await second.app.close();
      rmSync(config.dataDir, { recursive: true, force: true });
    }
    // Zulip's limit counts every export asked for in the last 7 days.
    const asked = ok(await s.cast.owner.client.get('/export/realm')).exports.length;
    for (let n = asked; n < 5; n++) ok(await s.cast.owner.client.post('/export/realm', {}));
    err(await s.cast.owner.client.post('/export/realm', {}), 400, 'BAD_REQUEST', 'Exceeded rate limit.');
  });
});
