import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { captureEvents } from '../helpers/bus.js';
import { loadConfig } from '../../src/config.js';

/** A video-call provider and a BigBlueButton server speaking real HTTP on loopback. */
const BBB_SECRET = 'bbb-secret';
const seen: { meetings: { auth: string; body: any }[]; tokenRequests: Record<string, string>[] } = { meetings: [], tokenRequests: [] };
const revoked = new Set<string>();
let meetingsFail = false;

async function readBody(req: IncomingMessage): Promise<string> {
  let s = '';
  for await (const c of req) s += c;
  return s;
}

const double = createServer(async (req, res) => {
  const url = new URL(req.url!, 'http://x');
  const json = (status: number, body: unknown) => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.method === 'POST' && url.pathname === '/v1/access_token') {
    const form = Object.fromEntries(new URLSearchParams(await readBody(req)));
    seen.tokenRequests.push(form);
    if (form.client_id !== 'cid' || form.client_secret !== 'csecret') return json(401, { error: 'invalid_client' });
    if (form.grant_type === 'authorization_code' && form.code === 'good-code') return json(200, { access_token: 'tok-1', refresh_token: 'ref-1', expires_in: 3600 });
    if (form.grant_type === 'authorization_code' && form.code === 'expiring-code') return json(200, { access_token: 'tok-old', refresh_token: 'ref-1', expires_in: 0 });
    if (form.grant_type === 'refresh_token' && form.refresh_token === 'ref-1') return json(200, { access_token: 'tok-2', expires_in: 3600 });
    return json(400, { error: 'invalid_grant' });
  }
  if (req.method === 'POST' && url.pathname === '/v1/meetings') {
    const auth = req.headers.authorization ?? '';
    const body = JSON.parse(await readBody(req));
    if (revoked.has(auth.replace('Bearer ', ''))) return json(401, { message: 'token revoked' });
    if (meetingsFail) return json(500, { message: 'down' });
    seen.meetings.push({ auth, body });
    return json(200, { webLink: `https://meet.example/j/${seen.meetings.length}` });
  }
  if (req.method === 'GET' && url.pathname === '/bigbluebutton/api/create') {
    const q = req.url!.split('?')[1]!;
    const params = q.replace(/&checksum=[0-9a-f]+$/, '');
    const expected = createHash('sha256').update(`create${params}${BBB_SECRET}`).digest('hex');
    res.writeHead(200, { 'Content-Type': 'text/xml' });
    if (!q.endsWith(`checksum=${expected}`)) return res.end('<response><returncode>FAILED</returncode><messageKey>checksumError</messageKey></response>');
    return res.end('<response><returncode>SUCCESS</returncode><createTime>1700000000000</createTime></response>');
  }
  json(404, {});
});
await new Promise<void>((r) => double.listen(0, '127.0.0.1', r));
const doubleUrl = `http://127.0.0.1:${(double.address() as AddressInfo).port}`;
after(() => double.close());

const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent' });
const overrides = {
  vidcall: { clientId: 'cid', clientSecret: 'csecret', authorizeUrl: null, tokenUrl: null, apiUrl: doubleUrl },
  bigBlueButton: { url: `${doubleUrl}/bigbluebutton/`, secret: BBB_SECRET },
  jitsiServerUrl: base.jitsiServerUrl,
};

function basicAuth(s: TestServer, who: keyof TestServer['cast']): string {
  const u = s.cast[who].user;
  return `Basic ${Buffer.from(`${u.email}:${u.api_key}`).toString('base64')}`;
}

/** Walks the OAuth flow as a browser would: register (redirect to the provider), then the provider's redirect back. */
async function connect(s: TestServer, who: keyof TestServer['cast'], code: string): Promise<Response> {
  const start = await fetch(`${s.url}/calls/vidcall/register`, { headers: { Authorization: basicAuth(s, who) }, redirect: 'manual' });
  assert.equal(start.status, 302);
  const location = new URL(start.headers.get('location')!);
  assert.equal(location.origin + location.pathname, `${doubleUrl}/v1/authorize`);
  assert.equal(location.searchParams.get('client_id'), 'cid');
  assert.equal(location.searchParams.get('response_type'), 'code');
  assert.equal(location.searchParams.get('redirect_uri'), `${s.config.externalUrl}/calls/webex/complete`);
  const state = location.searchParams.get('state')!;
  return fetch(`${s.url}/calls/webex/complete?code=${code}&state=${encodeURIComponent(state)}`, { redirect: 'manual' });
}

forEachDatabase('video calls (OAuth provider double)', (server) => {
  test('without a token: INVALID_VIDEO_CALL_PROVIDER_TOKEN under both names', async () => {
    const s = server();
    for (const path of ['/calls/vidcall/create', '/calls/webex/create']) {
      err(await s.cast.othello.client.post(path), 400, 'INVALID_VIDEO_CALL_PROVIDER_TOKEN', 'Invalid Webex access token');
    }
  });

  test('OAuth flow stores the token, announces it, and meetings are created with it', async () => {
    const s = server();
    const { result, events } = await captureEvents(s, () => connect(s, 'hamlet', 'good-code'));
    assert.equal(result.status, 200);
    assert.match(await result.text(), /close this window/);
    const types = events.map((e) => [e.event.type, e.event.value, e.users]);
    assert.deepEqual(types, [
      ['has_webex_token', true, [s.cast.hamlet.user.id]],
      ['has_vidcall_token', true, [s.cast.hamlet.user.id]],
    ]);
    const res = await s.cast.hamlet.client.post('/calls/vidcall/create');
    const body = ok(res);
    assertConforms(res, 'POST', '/calls/webex/create');
    assert.match(body.url, /^https:\/\/meet\.example\/j\/\d+$/);
    const last = seen.meetings.at(-1)!;
    assert.equal(last.auth, 'Bearer tok-1');
    assert.equal(last.body.title, 'Webex meeting');
    assert.equal(typeof last.body.start, 'string');
    ok(await s.cast.hamlet.client.post('/calls/webex/create'));
  });

  test('a tampered state or a bad code is refused', async () => {
    const s = server();
    const r1 = await fetch(`${s.url}/calls/vidcall/complete?code=good-code&state=forged.state`);
    assert.equal(r1.status, 400);
    assert.equal(((await r1.json()) as { msg: string }).msg, 'Invalid Webex session identifier');
    const r2 = await connect(s, 'othello', 'wrong-code');
    assert.equal(r2.status, 400);
    assert.equal(((await r2.json()) as { msg: string }).msg, 'Invalid Webex credentials');
    err(await s.cast.othello.client.post('/calls/vidcall/create'), 400, 'INVALID_VIDEO_CALL_PROVIDER_TOKEN');
  });

  test('an expired token is refreshed; a revoked one is forgotten and announced', async () => {
    const s = server();
    assert.equal((await connect(s, 'moderator', 'expiring-code')).status, 200);
    ok(await s.cast.moderator.client.post('/calls/vidcall/create'));
    assert.equal(seen.meetings.at(-1)!.auth, 'Bearer tok-2');
    revoked.add('tok-2');
    try {
      const { result, events } = await captureEvents(s, () => s.cast.moderator.client.post('/calls/vidcall/create'));
      err(result, 400, 'INVALID_VIDEO_CALL_PROVIDER_TOKEN');
      assert.deepEqual(events.map((e) => [e.event.type, e.event.value]), [['has_webex_token', false], ['has_vidcall_token', false]]);
      err(await s.cast.moderator.client.post('/calls/vidcall/create'), 400, 'INVALID_VIDEO_CALL_PROVIDER_TOKEN');
    } finally {
      revoked.delete('tok-2');
    }
  });

  test('a provider failure is a clear error, not a 500', async () => {
    const s = server();
    assert.equal((await connect(s, 'admin', 'good-code')).status, 200);
    meetingsFail = true;
    try {
      err(await s.cast.admin.client.post('/calls/vidcall/create'), 400, 'BAD_REQUEST', 'Failed to create Webex call');
    } finally {
      meetingsFail = false;
    }
  });

  test('BigBlueButton: signed join links; tampering is refused; the creator moderates', async () => {
    const s = server();
    const res = await s.cast.hamlet.client.get('/calls/bigbluebutton/create', { meeting_name: 'standup', voice_only: true });
    const body = ok(res);
    assertConforms(res, 'GET', '/calls/bigbluebutton/create');
    assert.match(body.url, /^\/calls\/bigbluebutton\/join\?bigbluebutton=/);
    const join = await fetch(`${s.url}${body.url}`, { headers: { Authorization: basicAuth(s, 'hamlet') }, redirect: 'manual' });
    assert.equal(join.status, 302);
    const target = new URL(join.headers.get('location')!);
    assert.equal(target.pathname, '/bigbluebutton/api/join');
    assert.equal(target.searchParams.get('role'), 'MODERATOR');
    assert.equal(target.searchParams.get('fullName'), 'King Hamlet');
    const viewer = await fetch(`${s.url}${body.url}`, { headers: { Authorization: basicAuth(s, 'othello') }, redirect: 'manual' });
    assert.equal(new URL(viewer.headers.get('location')!).searchParams.get('role'), 'VIEWER');
    const tampered = await fetch(`${s.url}${body.url.replace(/.$/, (c: string) => (c === 'A' ? 'B' : 'A'))}`, { headers: { Authorization: basicAuth(s, 'hamlet') }, redirect: 'manual' });
    assert.equal(tampered.status, 400);
    assert.equal(((await tampered.json()) as { msg: string }).msg, 'Invalid signature.');
  });

  test('Jitsi links come from the realm or server Jitsi URL', async () => {
    const s = server();
    const body = ok(await s.cast.hamlet.client.post('/calls/jitsi/create'));
    assert.match(body.url, /^https:\/\/meet\.jit\.si\/[0-9a-f]{16}$/);
  });
}, overrides);

forEachDatabase('video calls (provider not configured)', (server) => {
  test('creating a call says the provider is not configured', async () => {
    const s = server();
    err(await s.cast.hamlet.client.post('/calls/vidcall/create'), 400, 'BAD_REQUEST', 'Webex credentials have not been configured');
    const r = await fetch(`${s.url}/calls/vidcall/register`, { headers: { Authorization: basicAuth(s, 'hamlet') }, redirect: 'manual' });
    assert.equal(r.status, 400);
  });
});
