import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { createSecureServer, type IncomingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { z } from 'zod';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { loadConfig } from '../../src/config.js';
import { fetchPushDevicesForUsers } from '../../src/db/repos/push_devices.js';

/**
 * Direct delivery for an operator's own app build, against real protocol peers on loopback:
 * an HTTP/2 server with a test certificate speaking APNs' provider API (it verifies the ES256
 * provider token against the .p8 key's public half and checks the headers), and an HTTP server
 * speaking FCM's HTTP v1 API and Google's OAuth2 token endpoint (it verifies the service
 * account's RS256 assertion before issuing the access token the send requests must carry).
 */

const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!hasOpenssl) test('direct FCM/APNs delivery', { skip: 'openssl is not installed: it makes the APNs test server\'s certificate' }, () => {});

const dir = mkdtempSync(join(tmpdir(), 'parley-push-direct-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const TEAM_ID = 'TEAM123456';
const KEY_ID = 'KEY7654321';
const APP_ID = 'org.example.chat';
const PROJECT = 'parley-test';
const CLIENT_EMAIL = 'push@parley-test.iam.gserviceaccount.com';

// The .p8 key Apple would issue (an ES256 key in PKCS#8), and the service account Google would.
const apnsKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
writeFileSync(join(dir, 'AuthKey.p8'), apnsKey.privateKey.export({ type: 'pkcs8', format: 'pem' }));
const fcmKey = generateKeyPairSync('rsa', { modulusLength: 2048 });

async function readBody(req: AsyncIterable<unknown>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

// ---- APNs ----------------------------------------------------------------------------------
interface ApnsReceived {
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}
const apnsReceived: ApnsReceived[] = [];
/** How the APNs double answers per device token; tokens not listed are accepted. */
const APNS_ANSWERS: Record<string, [number, string]> = {
  dead00: [410, 'Unregistered'],
  baadf00d: [400, 'BadDeviceToken'],
  eeee: [500, 'InternalServerError'],
};
let apnsUrl = '';
let certPath = '';
if (hasOpenssl) {
  certPath = join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', certPath], { stdio: 'ignore' });
  const apns = createSecureServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(certPath) }, (req, res) => {
    void (async () => {
      const text = await readBody(req);
      const reply = (status: number, reason?: string) => {
        res.writeHead(status, { 'apns-id': '00000000-0000-0000-0000-000000000001' });
        if (reason) res.end(JSON.stringify({ reason }));
        else res.end();
      };
      const auth = String(req.headers.authorization ?? '');
      if (!auth.startsWith('bearer ')) return reply(403, 'MissingProviderToken');
      const jwt = auth.slice('bearer '.length);
      const header = decodeProtectedHeader(jwt);
      if (header.alg !== 'ES256' || header.kid !== KEY_ID) return reply(403, 'InvalidProviderToken');
      try {
        const { payload } = await jwtVerify(jwt, apnsKey.publicKey, { issuer: TEAM_ID, algorithms: ['ES256'] });
        if (typeof payload.iat !== 'number' || Math.abs(payload.iat - Date.now() / 1000) > 60) return reply(403, 'ExpiredProviderToken');
      } catch {
        return reply(403, 'InvalidProviderToken');
      }
      if (req.headers[':method'] !== 'POST' || !String(req.headers[':path']).startsWith('/3/device/')) return reply(405, 'MethodNotAllowed');
      if (req.headers['apns-topic'] !== APP_ID) return reply(400, 'DeviceTokenNotForTopic');
      apnsReceived.push({ headers: req.headers, body: JSON.parse(text) });
      const answer = APNS_ANSWERS[String(req.headers[':path']).slice('/3/device/'.length)];
      return answer ? reply(answer[0], answer[1]) : reply(200);
    })().catch((e: unknown) => res.writeHead(500).end(String(e)));
  });
  await new Promise<void>((r) => apns.listen(0, '127.0.0.1', r));
  after(() => apns.close());
  apnsUrl = `https://127.0.0.1:${(apns.address() as AddressInfo).port}`;
}

// ---- FCM -----------------------------------------------------------------------------------
const FcmSend = z.strictObject({
  message: z.strictObject({
    token: z.string().min(1),
    data: z.record(z.string(), z.string()),
    android: z.strictObject({ priority: z.enum(['HIGH', 'NORMAL']) }),
  }),
});
const fcmReceived: z.infer<typeof FcmSend>['message'][] = [];
const tokenRequests: Record<string, unknown>[] = [];
const issued = new Set<string>();
let flakyFailures = 1;

const fcm = createServer((req: IncomingMessage, res) => {
  void (async () => {
    const text = await readBody(req);
    const json = (status: number, body: unknown) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    const fcmError = (status: number, state: string, errorCode: string) =>
      json(status, { error: { code: status, message: errorCode, status: state, details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }] } });
    if (req.method === 'POST' && req.url === '/token') {
      assert.equal(req.headers['content-type'], 'application/x-www-form-urlencoded');
      const form = Object.fromEntries(new URLSearchParams(text));
      if (form.grant_type !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return json(400, { error: 'unsupported_grant_type' });
      try {
        const { payload, protectedHeader } = await jwtVerify(String(form.assertion), fcmKey.publicKey, { issuer: CLIENT_EMAIL, audience: `${fcmUrl}/token`, algorithms: ['RS256'] });
        assert.equal(protectedHeader.kid, 'key-1');
        tokenRequests.push(payload);
        if (payload.scope !== 'https://www.googleapis.com/auth/firebase.messaging') return json(400, { error: 'invalid_scope' });
      } catch {
        return json(400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
      }
      const token = `ya29.test-${issued.size + 1}`;
      issued.add(token);
      return json(200, { access_token: token, expires_in: 3599, token_type: 'Bearer' });
    }
    if (req.method !== 'POST' || req.url !== `/v1/projects/${PROJECT}/messages:send`) return fcmError(404, 'NOT_FOUND', 'NOT_FOUND');
    if (!issued.has(String(req.headers.authorization).replace(/^Bearer /, ''))) return fcmError(401, 'UNAUTHENTICATED', 'THIRD_PARTY_AUTH_ERROR');
    const parsed = FcmSend.safeParse(JSON.parse(text));
    if (!parsed.success) return fcmError(400, 'INVALID_ARGUMENT', 'INVALID_ARGUMENT');
    fcmReceived.push(parsed.data.message);
    const { token } = parsed.data.message;
    if (token === 'fcm-dead') return fcmError(404, 'NOT_FOUND', 'UNREGISTERED');
    if (token === 'fcm-flaky' && flakyFailures > 0) {
      flakyFailures--;
      return fcmError(503, 'UNAVAILABLE', 'UNAVAILABLE');
    }
    return json(200, { name: `projects/${PROJECT}/messages/${fcmReceived.length}` });
  })().catch((e: unknown) => res.writeHead(500).end(String(e)));
});
await new Promise<void>((r) => fcm.listen(0, '127.0.0.1', r));
after(() => fcm.close());
const fcmUrl = `http://127.0.0.1:${(fcm.address() as AddressInfo).port}`;
writeFileSync(
  join(dir, 'service-account.json'),
  JSON.stringify({
    type: 'service_account',
    project_id: PROJECT,
    private_key_id: 'key-1',
    private_key: fcmKey.privateKey.export({ type: 'pkcs8', format: 'pem' }),
    client_email: CLIENT_EMAIL,
    client_id: '1',
    token_uri: `${fcmUrl}/token`,
  }),
);

const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

if (hasOpenssl) {
  forEachDatabase(
    'push straight to FCM and APNs',
    (server) => {
      let s: TestServer;
      const APPLE = ['c0ffee01', 'dead00', 'baadf00d', 'eeee'];
      const ANDROID = ['fcm-good', 'fcm-dead', 'fcm-flaky'];

      test('a direct message reaches every device; dead tokens are dropped, failures retried, none blocks another', async () => {
        s = server();
        apnsReceived.length = 0;
        fcmReceived.length = 0;
        tokenRequests.length = 0;
        flakyFailures = 1;
        const { hamlet, othello } = s.cast;
        assert.equal(ok(await s.anonymous.get('/server_settings')).push_notifications_enabled, true);
        for (const token of APPLE) ok(await othello.client.post('/users/me/apns_device_token', { token, appid: APP_ID }));
        for (const token of ANDROID) ok(await othello.client.post('/users/me/android_gcm_reg_id', { token }));

        const sentAt = Math.floor(Date.now() / 1000);
        const id = ok(await hamlet.client.post('/messages', { type: 'private', to: JSON.stringify([othello.user.id]), content: 'are you there?' })).id as number;
        // eeee fails three times (500), fcm-flaky once (503) then succeeds.
        await waitFor('every APNs and FCM request', () => apnsReceived.length === 6 && fcmReceived.length === 4);
        // The worker forgets dropped tokens once every device has answered.
        await sleep(300);

        const apnsPaths = apnsReceived.map((r) => String(r.headers[':path']).slice('/3/device/'.length)).sort();
        assert.deepEqual(apnsPaths, ['baadf00d', 'c0ffee01', 'dead00', 'eeee', 'eeee', 'eeee']);
        const good = apnsReceived.find((r) => r.headers[':path'] === '/3/device/c0ffee01')!;
        assert.equal(good.headers['apns-topic'], APP_ID);
        assert.equal(good.headers['apns-push-type'], 'alert');
        assert.equal(good.headers['apns-priority'], '10');
        assert.ok(Math.abs(Number(good.headers['apns-expiration']) - (sentAt + 24 * 3600)) < 60);
        // Zulip's APNs message: aps beside the custom `zulip` key.
        const body = good.body as { aps: Record<string, unknown>; zulip: Record<string, unknown> };
        assert.deepEqual(Object.keys(body).sort(), ['aps', 'zulip']);
        assert.deepEqual(body.aps, { alert: { title: 'King Hamlet', subtitle: '', body: 'are you there?' }, sound: 'default', badge: 0 });
        assert.deepEqual(body.zulip.message_ids, [id]);
        assert.equal(body.zulip.sender_email, hamlet.user.email);
        assert.equal(body.zulip.recipient_type, 'private');

        // One OAuth exchange serves every send.
        assert.equal(tokenRequests.length, 1);
        assert.deepEqual(fcmReceived.map((m) => m.token).sort(), ['fcm-dead', 'fcm-flaky', 'fcm-flaky', 'fcm-good']);
        const data = fcmReceived.find((m) => m.token === 'fcm-good')!;
        assert.equal(data.android.priority, 'HIGH');
        assert.equal(data.data.event, 'message');
        assert.equal(data.data.zulip_message_id, String(id));
        assert.equal(data.data.content, 'are you there?');
        assert.equal(data.data.content_truncated, 'False');
        assert.equal(data.data.sender_id, String(hamlet.user.id));
        assert.equal(data.data.recipient_type, 'private');
        assert.equal(data.data.realm_url, s.config.externalUrl);

        const left = (await fetchPushDevicesForUsers(s.app.services.db.kysely, [othello.user.id])).map((d) => d.token).sort();
        assert.deepEqual(left, ['c0ffee01', 'eeee', 'fcm-flaky', 'fcm-good']);

        // Read elsewhere: the notification is taken back on the devices that remain.
        apnsReceived.length = 0;
        fcmReceived.length = 0;
        ok(await othello.client.post('/messages/flags', { messages: JSON.stringify([id]), op: 'add', flag: 'read' }));
        await waitFor('the remove pushes', () => apnsReceived.filter((r) => r.headers[':path'] === '/3/device/c0ffee01').length === 1 && fcmReceived.length === 2);
        const remove = apnsReceived.find((r) => r.headers[':path'] === '/3/device/c0ffee01')!;
        assert.equal(remove.headers['apns-priority'], '5');
        assert.deepEqual(remove.body, { aps: { badge: 0 }, zulip: { ...(remove.body.zulip as object), event: 'remove', zulip_message_ids: String(id) } });
        const fcmRemove = fcmReceived.find((m) => m.token === 'fcm-good')!;
        assert.equal(fcmRemove.android.priority, 'NORMAL');
        assert.deepEqual([fcmRemove.data.event, fcmRemove.data.zulip_message_ids, fcmRemove.data.zulip_message_id], ['remove', String(id), String(id)]);
      });
    },
    {
      fcm: { credentialsPath: join(dir, 'service-account.json'), tokenUri: null, url: fcmUrl },
      apns: { keyFile: join(dir, 'AuthKey.p8'), keyId: KEY_ID, teamId: TEAM_ID, url: apnsUrl, caFile: certPath },
      notifications: { ...base.notifications, enabled: true, intervalMs: 300 },
    },
  );
}
