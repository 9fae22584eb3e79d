import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { loadConfig } from '../../src/config.js';
import { fetchPushDevicesForUsers } from '../../src/db/repos/push_devices.js';
import type { BouncerPushSender } from '../../src/lib/push/bouncer.js';

/**
 * Parley as a self-hosted server of Zulip's push notification service: an HTTP double of the
 * service on loopback checks every request against the shape of the remote-server API as
 * Zulip's server calls it (zilencer's views: form-encoded registrations, a JSON notify body,
 * HTTP Basic with the server's UUID and key) and answers as the service does.
 */

const uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
const SCHEMAS = {
  'server/register': z.strictObject({ zulip_org_id: uuid, zulip_org_key: z.string().length(64), hostname: z.string().min(1), contact_email: z.email() }),
  'push/register': z.strictObject({
    server_uuid: uuid,
    user_uuid: uuid,
    realm_uuid: uuid,
    user_id: z.string().regex(/^\d+$/),
    token: z.string().min(1),
    token_kind: z.enum(['1', '2']),
    ios_app_id: z.string().optional(),
  }),
  'push/unregister': z.strictObject({ server_uuid: uuid, realm_uuid: uuid, user_uuid: uuid, user_id: z.string().regex(/^\d+$/), token: z.string().min(1), token_kind: z.enum(['1', '2']) }),
  'push/notify': z.strictObject({
    user_uuid: uuid,
    user_id: z.number().int(),
    realm_uuid: uuid,
    apns_payload: z.record(z.string(), z.unknown()),
    gcm_payload: z.record(z.string(), z.unknown()),
    gcm_options: z.strictObject({ priority: z.enum(['high', 'normal']) }),
    android_devices: z.array(z.string()),
    apple_devices: z.array(z.string()),
  }),
} as const;
type Endpoint = keyof typeof SCHEMAS;

interface Received {
  endpoint: Endpoint;
  auth: string;
  body: Record<string, unknown>;
}

const received: Received[] = [];
/** What the double answers to the next notify: tokens to report dropped, and can_push. */
const nextNotify = { dropAndroid: [] as string[], canPush: true };

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const double = createServer((req, res) => {
  void (async () => {
    const text = await readBody(req);
    const endpoint = (req.url ?? '').replace(/^\/api\/v1\/remotes\//, '') as Endpoint;
    const reply = (status: number, body: unknown) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    const schema = SCHEMAS[endpoint];
    if (req.method !== 'POST' || !schema) return reply(404, { result: 'error', msg: 'Not found', code: 'BAD_REQUEST' });
    const json = endpoint === 'push/notify';
    assert.equal(req.headers['content-type'], json ? 'application/json' : 'application/x-www-form-urlencoded', endpoint);
    assert.match(String(req.headers['user-agent']), /^ZulipServer\//);
    const raw = json ? JSON.parse(text) : Object.fromEntries(new URLSearchParams(text));
    const parsed = schema.safeParse(raw);
    if (!parsed.success) return reply(400, { result: 'error', msg: `${endpoint}: ${parsed.error.message}`, code: 'BAD_REQUEST' });
    const auth = Buffer.from(String(req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString('utf8');
    received.push({ endpoint, auth, body: raw });
    if (endpoint === 'push/notify') {
      const body = parsed.data as z.infer<(typeof SCHEMAS)['push/notify']>;
      const dropped = body.android_devices.filter((t) => nextNotify.dropAndroid.includes(t));
      return reply(200, {
        result: 'success',
        msg: '',
        total_android_devices: body.android_devices.length - dropped.length,
        total_apple_devices: body.apple_devices.length,
        deleted_devices: { android_devices: dropped, apple_devices: [] },
        realm: { can_push: nextNotify.canPush, expected_end_timestamp: null },
      });
    }
    return reply(200, endpoint === 'server/register' ? { result: 'success', msg: '', created: true } : { result: 'success', msg: '' });
  })().catch((e: unknown) => res.writeHead(500).end(String(e)));
});
await new Promise<void>((r) => double.listen(0, '127.0.0.1', r));
after(() => double.close());
const bouncerUrl = `http://127.0.0.1:${(double.address() as AddressInfo).port}`;
const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent' });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 8000;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
const of = (endpoint: Endpoint) => received.filter((r) => r.endpoint === endpoint);

forEachDatabase(
  'push through Zulip\'s push notification service',
  (server) => {
    let s: TestServer;
    let identity: string;

    test('the server registers with its UUID and key, and reports push notifications enabled', async () => {
      s = server();
      received.length = 0;
      const sender = s.app.services.push as BouncerPushSender;
      assert.equal((await sender.registerServer('chat.example.com', 'admin@example.com')).created, true);
      const [reg] = of('server/register');
      assert.equal(reg!.body.hostname, 'chat.example.com');
      assert.equal(reg!.body.contact_email, 'admin@example.com');
      identity = `${reg!.body.zulip_org_id}:${reg!.body.zulip_org_key}`;
      assert.equal(reg!.auth, identity);
      assert.equal(ok(await s.anonymous.get('/server_settings')).push_notifications_enabled, true);
      assert.equal(ok(await s.cast.othello.client.post('/register', {})).realm_push_notifications_enabled, true);
    });

    test('device registrations are forwarded to /remotes/push/register', async () => {
      const { othello } = s.cast;
      ok(await othello.client.post('/users/me/apns_device_token', { token: 'abcdef01', appid: 'org.zulip.Zulip' }));
      ok(await othello.client.post('/users/me/android_gcm_reg_id', { token: 'fcm-othello' }));
      const regs = of('push/register');
      assert.deepEqual(regs.map((r) => [r.body.token, r.body.token_kind, r.body.ios_app_id, r.body.user_id]), [
        ['abcdef01', '1', 'org.zulip.Zulip', String(othello.user.id)],
        ['fcm-othello', '2', undefined, String(othello.user.id)],
      ]);
      assert.ok(regs.every((r) => r.auth === identity && r.body.server_uuid === identity.split(':')[0]));
      assert.equal(regs[0]!.body.user_uuid, regs[1]!.body.user_uuid, 'one UUID per user');
    });

    test('a direct message to someone away reaches /remotes/push/notify with Zulip\'s payloads; tokens the service drops are forgotten', async () => {
      const { hamlet, othello } = s.cast;
      nextNotify.dropAndroid = ['fcm-othello'];
      const id = ok(await hamlet.client.post('/messages', { type: 'private', to: JSON.stringify([othello.user.id]), content: 'are you there?' })).id as number;
      await waitFor('the notify request', () => of('push/notify').length === 1);
      const { body, auth } = of('push/notify')[0]!;
      assert.equal(auth, identity);
      assert.equal(body.user_id, othello.user.id);
      assert.equal(body.user_uuid, of('push/register')[0]!.body.user_uuid);
      assert.equal(body.realm_uuid, of('push/register')[0]!.body.realm_uuid);
      assert.deepEqual(body.android_devices, ['fcm-othello']);
      assert.deepEqual(body.apple_devices, ['abcdef01']);
      assert.deepEqual(body.gcm_options, { priority: 'high' });
      const gcm = body.gcm_payload as Record<string, unknown>;
      assert.deepEqual(
        { event: gcm.event, zulip_message_id: gcm.zulip_message_id, content: gcm.content, recipient_type: gcm.recipient_type, sender_id: gcm.sender_id, user_id: gcm.user_id, sender_full_name: gcm.sender_full_name },
        { event: 'message', zulip_message_id: id, content: 'are you there?', recipient_type: 'private', sender_id: hamlet.user.id, user_id: othello.user.id, sender_full_name: 'King Hamlet' },
      );
      assert.equal(gcm.realm_url, s.config.externalUrl);
      const apns = body.apns_payload as { alert: Record<string, string>; sound: string; badge: number; custom: { zulip: Record<string, unknown> } };
      assert.deepEqual(apns.alert, { title: 'King Hamlet', subtitle: '', body: 'are you there?' });
      assert.equal(apns.sound, 'default');
      assert.deepEqual(apns.custom.zulip.message_ids, [id]);
      assert.equal(apns.custom.zulip.sender_email, hamlet.user.email);
      await sleep(200);
      const tokens = (await fetchPushDevicesForUsers(s.app.services.db.kysely, [othello.user.id])).map((d) => d.token);
      assert.deepEqual(tokens, ['abcdef01']);
      nextNotify.dropAndroid = [];

      // Read elsewhere: the phone's notification is taken back (Zulip's `remove`).
      ok(await othello.client.post('/messages/flags', { messages: JSON.stringify([id]), op: 'add', flag: 'read' }));
      await waitFor('the remove request', () => of('push/notify').length === 2);
      const remove = of('push/notify')[1]!.body;
      assert.deepEqual(remove.gcm_options, { priority: 'normal' });
      assert.deepEqual(remove.apple_devices, ['abcdef01']);
      const rg = remove.gcm_payload as Record<string, unknown>;
      assert.deepEqual([rg.event, rg.zulip_message_ids, rg.zulip_message_id], ['remove', String(id), id]);
      const ra = remove.apns_payload as { custom: { zulip: Record<string, unknown> } };
      assert.deepEqual([ra.custom.zulip.event, ra.custom.zulip.zulip_message_ids], ['remove', String(id)]);
      // Read again: nothing is showing any more, nothing is sent.
      ok(await othello.client.post('/messages/flags', { messages: JSON.stringify([id]), op: 'add', flag: 'read' }));
      await sleep(1000);
      assert.equal(of('push/notify').length, 2);
    });

    test('a channel mention: title names the conversation, subtitle the reason', async () => {
      const { hamlet, othello } = s.cast;
      ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'bounced' }]), principals: JSON.stringify([hamlet.user.id, othello.user.id]) }));
      ok(await hamlet.client.post('/messages', { type: 'stream', to: 'bounced', topic: 'news', content: '@**Othello, the Moor of Venice** look' }));
      await waitFor('the notify request', () => of('push/notify').length === 3);
      const apns = of('push/notify')[2]!.body.apns_payload as { alert: Record<string, string>; custom: { zulip: Record<string, unknown> } };
      assert.deepEqual([apns.alert.title, apns.alert.subtitle], ['#bounced > news', 'King Hamlet mentioned you:']);
      assert.deepEqual([apns.custom.zulip.recipient_type, apns.custom.zulip.stream, apns.custom.zulip.topic], ['stream', 'bounced', 'news']);
    });

    test('removing a device is forwarded to /remotes/push/unregister; the service saying no push turns push_notifications_enabled off', async () => {
      const { hamlet, othello } = s.cast;
      ok(await othello.client.delete('/users/me/apns_device_token', { token: 'abcdef01' }));
      const [un] = of('push/unregister');
      assert.deepEqual([un!.body.token, un!.body.token_kind, un!.body.user_id], ['abcdef01', '1', String(othello.user.id)]);
      ok(await othello.client.post('/users/me/android_gcm_reg_id', { token: 'fcm-new' }));
      nextNotify.canPush = false;
      const before = of('push/notify').length;
      ok(await hamlet.client.post('/messages', { type: 'private', to: JSON.stringify([othello.user.id]), content: 'once more' }));
      await waitFor('the notify request', () => of('push/notify').length === before + 1);
      await sleep(200);
      assert.equal(ok(await s.anonymous.get('/server_settings')).push_notifications_enabled, false);
      nextNotify.canPush = true;
    });
  },
  { pushBouncer: { url: bouncerUrl, orgId: null, orgKey: null }, notifications: { ...base.notifications, enabled: true, intervalMs: 300 } },
);
