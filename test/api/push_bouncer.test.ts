import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { createHash, randomBytes } from 'node:crypto';
import nacl from 'tweetnacl';
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
  'push/e2ee/register': z.strictObject({ realm_uuid: uuid, token_id: z.string().min(1), encrypted_push_registration: z.string().min(1), bouncer_public_key: z.string().min(1) }),
  'push/e2ee/notify': z.strictObject({
    realm_uuid: uuid,
    push_requests: z.array(
      z.union([
        z.strictObject({ token_id: z.string(), fcm_priority: z.enum(['high', 'normal']), payload: z.strictObject({ push_key_id: z.number().int(), encrypted_data: z.string() }) }),
        z.strictObject({
          token_id: z.string(),
          http_headers: z.strictObject({ apns_priority: z.union([z.literal(5), z.literal(10)]), apns_push_type: z.enum(['alert', 'background']) }),
          payload: z.strictObject({ push_key_id: z.number().int(), encrypted_data: z.string(), aps: z.record(z.string(), z.unknown()) }),
        }),
      ]),
    ),
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
const nextNotify = { dropAndroid: [] as string[], canPush: true, deleteTokenIds: [] as string[] };

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
    const json = endpoint === 'push/notify' || endpoint === 'push/e2ee/notify';
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
    if (endpoint === 'push/e2ee/register' && raw.bouncer_public_key === 'retired-key') return reply(400, { result: 'error', msg: 'Invalid bouncer_public_key', code: 'INVALID_BOUNCER_PUBLIC_KEY' });
    if (endpoint === 'push/e2ee/notify') {
      const body = parsed.data as z.infer<(typeof SCHEMAS)['push/e2ee/notify']>;
      const deleted = body.push_requests.map((r) => r.token_id).filter((t) => nextNotify.deleteTokenIds.includes(t));
      return reply(200, { result: 'success', msg: '', apple_successfully_sent_count: 0, android_successfully_sent_count: body.push_requests.length - deleted.length, delete_token_ids: deleted });
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

    test('end-to-end encrypted push: the sealed registration goes to /remotes/push/e2ee/register; notifications are encrypted with the device\'s key', async () => {
      const { hamlet, othello } = s.cast;
      const device = ok(await othello.client.post('/register_client_device')).device_id as number;
      const key = Buffer.concat([Buffer.from([0x31]), randomBytes(32)]);
      const tokenId = createHash('sha256').update('fcm-e2ee-token').digest().subarray(0, 8).toString('base64');
      const reg = { device_id: device, push_key_id: 2408, push_key: key.toString('base64'), token_kind: 'fcm', token_id: tokenId, bouncer_public_key: 'current-key', encrypted_push_registration: 'c2VhbGVk' };
      // Each group of fields comes complete, and a first registration needs both.
      err(await othello.client.post('/mobile_push/register', { device_id: device, push_key_id: 2408, push_key: reg.push_key }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'token_kind' argument");
      err(await othello.client.post('/mobile_push/register', { ...reg, push_key: Buffer.concat([Buffer.from([0x32]), randomBytes(32)]).toString('base64') }), 400, 'BAD_REQUEST', 'Invalid push_key');
      err(await othello.client.post('/mobile_push/register', { ...reg, token_id: 'c2hvcnQ=' }), 400, 'BAD_REQUEST', 'Invalid token_id');
      err(await hamlet.client.post('/mobile_push/register', reg), 400, 'BAD_REQUEST', 'Invalid device ID');
      err(await othello.client.post('/mobile_push/e2ee/test_notification', { device_id: device }), 400, 'NO_ACTIVE_PUSH_DEVICE', 'No active registered push device');

      // The same phone's older registration of this token is replaced by the encrypted one.
      ok(await othello.client.post('/users/me/android_gcm_reg_id', { token: 'fcm-e2ee-token' }));
      ok(await othello.client.post('/mobile_push/register', reg));
      assert.ok(!(await fetchPushDevicesForUsers(s.app.services.db.kysely, [othello.user.id])).some((d) => d.token === 'fcm-e2ee-token'));
      assert.equal(of('push/unregister').at(-1)!.body.token, 'fcm-e2ee-token');
      const [forwarded] = of('push/e2ee/register');
      assert.deepEqual(forwarded!.body, { realm_uuid: of('push/register')[0]!.body.realm_uuid, token_id: tokenId, encrypted_push_registration: 'c2VhbGVk', bouncer_public_key: 'current-key' });
      assert.equal(forwarded!.auth, identity);
      const devices = ok(await othello.client.post('/register', { fetch_event_types: JSON.stringify(['device']) })).devices as Record<string, Record<string, unknown>>;
      assert.deepEqual({ ...devices[String(device)], push_token_last_updated_timestamp: 0 }, { push_key_id: 2408, push_token_id: tokenId, pending_push_token_id: null, push_token_last_updated_timestamp: 0, push_registration_error_code: null });

      const open = (encrypted: string) => {
        const raw = Buffer.from(encrypted, 'base64');
        const plain = nacl.secretbox.open(raw.subarray(24), raw.subarray(0, 24), key.subarray(1));
        assert.ok(plain, 'the device key opens the box');
        return JSON.parse(Buffer.from(plain).toString('utf8')) as Record<string, unknown>;
      };
      const id = ok(await hamlet.client.post('/messages', { type: 'private', to: JSON.stringify([othello.user.id]), content: 'secret plans' })).id as number;
      await waitFor('the encrypted notify request', () => of('push/e2ee/notify').length === 1);
      const notify = of('push/e2ee/notify')[0]!;
      const [request] = notify.body.push_requests as { token_id: string; fcm_priority: string; payload: { push_key_id: number; encrypted_data: string } }[];
      assert.deepEqual([request!.token_id, request!.fcm_priority, request!.payload.push_key_id], [tokenId, 'high', 2408]);
      assert.ok(!request!.payload.encrypted_data.includes('secret'));
      const data = open(request!.payload.encrypted_data);
      assert.deepEqual({ ...data, sender_avatar_url: typeof data.sender_avatar_url }, {
        realm_name: s.realm.name,
        realm_url: s.config.externalUrl,
        user_id: othello.user.id,
        type: 'message',
        message_id: id,
        time: data.time,
        content: 'secret plans',
        sender_id: hamlet.user.id,
        sender_full_name: 'King Hamlet',
        sender_avatar_url: 'string',
        recipient_type: 'direct',
      });

      ok(await othello.client.post('/messages/flags', { messages: JSON.stringify([id]), op: 'add', flag: 'read' }));
      await waitFor('the encrypted remove request', () => of('push/e2ee/notify').length === 2);
      const removal = (of('push/e2ee/notify')[1]!.body.push_requests as { fcm_priority: string; payload: { encrypted_data: string } }[])[0]!;
      assert.equal(removal.fcm_priority, 'normal');
      assert.deepEqual(open(removal.payload.encrypted_data), { realm_name: s.realm.name, realm_url: s.config.externalUrl, user_id: othello.user.id, type: 'remove', message_ids: [id] });

      ok(await othello.client.post('/mobile_push/e2ee/test_notification', { device_id: device }));
      const testData = open((of('push/e2ee/notify')[2]!.body.push_requests as { payload: { encrypted_data: string } }[])[0]!.payload.encrypted_data);
      assert.deepEqual([testData.type, testData.user_id], ['test', othello.user.id]);

      // A retired service key: the service's error code is left for the app to act on.
      ok(await othello.client.post('/mobile_push/register', { device_id: device, token_kind: 'fcm', token_id: 'AAAAAAAAAAA=', bouncer_public_key: 'retired-key', encrypted_push_registration: 'c2VhbGVk' }));
      const after = (ok(await othello.client.post('/register', { fetch_event_types: JSON.stringify(['device']) })).devices as Record<string, Record<string, unknown>>)[String(device)]!;
      assert.deepEqual([after.push_token_id, after.pending_push_token_id, after.push_registration_error_code], [tokenId, 'AAAAAAAAAAA=', 'INVALID_BOUNCER_PUBLIC_KEY']);
      err(await othello.client.post('/mobile_push/register', { device_id: device }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'push_key' argument");

      // The service reports the token expired: the device loses it.
      nextNotify.deleteTokenIds = [tokenId];
      ok(await othello.client.post('/mobile_push/e2ee/test_notification'));
      nextNotify.deleteTokenIds = [];
      const expired = (ok(await othello.client.post('/register', { fetch_event_types: JSON.stringify(['device']) })).devices as Record<string, Record<string, unknown>>)[String(device)]!;
      assert.equal(expired.push_token_id, null);
    });

    test('marking a topic, or everything, read takes the phone\'s notifications back', async () => {
      const { hamlet, othello } = s.cast;
      const before = of('push/notify').length;
      const dm = ok(await hamlet.client.post('/messages', { type: 'private', to: JSON.stringify([othello.user.id]), content: 'one' })).id as number;
      const mention = ok(await hamlet.client.post('/messages', { type: 'stream', to: 'bounced', topic: 'later', content: '@**Othello, the Moor of Venice** two' })).id as number;
      await waitFor('both notify requests', () => of('push/notify').length === before + 2);
      const removals = () => of('push/notify').slice(before + 2).map((r) => (r.body.gcm_payload as Record<string, unknown>).zulip_message_ids);
      const streamId = ok(await othello.client.get('/get_stream_id', { stream: 'bounced' })).stream_id as number;
      ok(await othello.client.post('/mark_topic_as_read', { stream_id: streamId, topic_name: 'later' }));
      await waitFor('the topic\'s removal', () => removals().length === 1);
      ok(await othello.client.post('/mark_all_as_read'));
      await waitFor('the removal of the rest', () => removals().length === 2);
      assert.equal(removals()[0], String(mention));
      // Everything still showing goes, earlier tests' unread notifications too.
      const rest = String(removals()[1]).split(',').map(Number);
      assert.ok(rest.includes(dm) && !rest.includes(mention), String(rest));
    });
  },
  { pushBouncer: { url: bouncerUrl, orgId: null, orgKey: null }, notifications: { ...base.notifications, enabled: true, intervalMs: 300 } },
);
