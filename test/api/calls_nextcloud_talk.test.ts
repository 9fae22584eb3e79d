import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';

/** A Nextcloud server's Talk OCS endpoint on loopback, recording what it is asked. */
const seen: { auth: string; ocs: string; body: any }[] = [];
let failNext = false;

async function readBody(req: IncomingMessage): Promise<string> {
  let s = '';
  for await (const c of req) s += c;
  return s;
}

const nextcloud = createServer(async (req, res) => {
  if (req.method !== 'POST' || req.url !== '/ocs/v2.php/apps/spreed/api/v4/room') {
    res.writeHead(404).end();
    return;
  }
  const body = JSON.parse(await readBody(req));
  seen.push({ auth: req.headers.authorization ?? '', ocs: String(req.headers['ocs-apirequest']), body });
  if (failNext) {
    failNext = false;
    res.writeHead(403, { 'Content-Type': 'application/json' }).end(JSON.stringify({ ocs: { meta: { status: 'failure', statuscode: 403 }, data: [] } }));
    return;
  }
  res.writeHead(201, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ ocs: { meta: { status: 'ok', statuscode: 201 }, data: { token: `tok${seen.length}`, name: body.roomName, type: body.roomType } } }));
});
await new Promise<void>((r) => nextcloud.listen(0, '127.0.0.1', r));
const nextcloudUrl = `http://127.0.0.1:${(nextcloud.address() as AddressInfo).port}`;
after(() => nextcloud.close());

forEachDatabase('POST /calls/nextcloud_talk/create', (server) => {
  const realmState = async (s: ReturnType<typeof server>) => ok(await s.cast.hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) }));

  test('unconfigured: refused, not offered as a provider, and not choosable', async () => {
    const s = server();
    err(await s.cast.hamlet.client.post('/calls/nextcloud_talk/create', { room_name: 'x' }), 400, 'BAD_REQUEST', 'Nextcloud Talk is not configured.');
    assert.equal((await realmState(s)).realm_available_video_chat_providers.nextcloud_talk, undefined);
    err(await s.cast.admin.client.patch('/realm', { video_chat_provider: 7 }), 400, 'BAD_REQUEST', 'Invalid video_chat_provider 7');
    // An account without its password is not a configuration either.
    s.config.nextcloudTalk = { url: nextcloudUrl, username: 'zulip-bot', password: null };
    assert.equal((await realmState(s)).realm_available_video_chat_providers.nextcloud_talk, undefined);
    err(await s.cast.admin.client.patch('/realm', { video_chat_provider: 7 }), 400, 'BAD_REQUEST', 'Invalid video_chat_provider 7');
  });

  test('configured: offered as a provider, and an administrator may choose it', async () => {
    const s = server();
    s.config.nextcloudTalk = { url: nextcloudUrl, username: 'zulip-bot', password: 'app-password' };
    assert.deepEqual((await realmState(s)).realm_available_video_chat_providers.nextcloud_talk, { name: 'Nextcloud Talk', id: 7 });
    ok(await s.cast.admin.client.patch('/realm', { video_chat_provider: 7 }));
    assert.equal((await realmState(s)).realm_video_chat_provider, 7);
    ok(await s.cast.admin.client.patch('/realm', { video_chat_provider: 1 }));
  });

  test('creates a public Talk conversation with the configured account and answers its call URL', async () => {
    const s = server();
    s.config.nextcloudTalk = { url: nextcloudUrl, username: 'zulip-bot', password: 'app-password' };
    const res = await s.cast.hamlet.client.post('/calls/nextcloud_talk/create', { room_name: '#Test > team check-in' });
    const body = ok(res);
    assertConforms(res, 'POST', '/calls/nextcloud_talk/create');
    assert.equal(body.url, `${nextcloudUrl}/index.php/call/tok${seen.length}`);
    const last = seen.at(-1)!;
    assert.equal(last.auth, `Basic ${Buffer.from('zulip-bot:app-password').toString('base64')}`);
    assert.equal(last.ocs, 'true');
    assert.deepEqual(last.body, { roomType: 3, roomName: '#Test > team check-in' });
    err(await s.cast.hamlet.client.post('/calls/nextcloud_talk/create', {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'room_name' argument");
    failNext = true;
    err(await s.cast.hamlet.client.post('/calls/nextcloud_talk/create', { room_name: 'y' }), 400, 'BAD_REQUEST', 'Failed to create Nextcloud Talk conversation.');
    s.config.nextcloudTalk = { url: 'http://127.0.0.1:1', username: 'a', password: 'b' };
    err(await s.cast.hamlet.client.post('/calls/nextcloud_talk/create', { room_name: 'z' }), 400, 'BAD_REQUEST', 'Failed to create Nextcloud Talk conversation.');
  });
});
