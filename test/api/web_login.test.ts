import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createDecipheriv, randomBytes } from 'node:crypto';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { loadConfig } from '../../src/config.js';

/** A browser's cookie jar, reduced to what these pages set: name=value pairs. */
class Browser {
  cookies = new Map<string, string>();
  constructor(readonly base: string) {}

  private remember(res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/Max-Age=0/.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async fetch(path: string, init: { method?: string; form?: Record<string, string>; csrf?: boolean; headers?: Record<string, string> } = {}): Promise<Response> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.cookies.size) headers.Cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (init.csrf && this.cookies.has('csrftoken')) headers['X-CSRFToken'] = this.cookies.get('csrftoken')!;
    let body: string | undefined;
    if (init.form) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const res = await fetch(this.base + path, { method: init.method ?? 'GET', headers, body, redirect: 'manual' });
    this.remember(res);
    return res;
  }

  /** Opens the login page (which sets the CSRF cookie) and submits the form as the page does. */
  async logIn(username: string, password: string, extra: Record<string, string> = {}): Promise<Response> {
    await this.fetch('/login');
    return this.fetch('/accounts/login/', { method: 'POST', form: { username, password, ...extra }, csrf: true });
  }
}

const otp = () => randomBytes(32).toString('hex');

function otpDecrypt(hex: string, pad: string): string {
  let out = '';
  for (let i = 0; i < hex.length; i++) out += (parseInt(hex[i]!, 16) ^ parseInt(pad[i]!, 16)).toString(16);
  return Buffer.from(out, 'hex').toString('ascii');
}

async function errorOf(res: Response): Promise<{ status: number; code: string; msg: string }> {
  const body = (await res.json()) as { result: string; code: string; msg: string };
  assert.equal(body.result, 'error');
  return { status: res.status, code: body.code, msg: body.msg };
}

forEachDatabase('web login', (server) => {
  const browser = (s: TestServer) => new Browser(s.url);

  test('an unauthenticated visit to / goes to /login, which sets the CSRF cookie', async () => {
    const b = browser(server());
    const home = await b.fetch('/');
    assert.equal(home.status, 302);
    assert.equal(home.headers.get('location'), '/login');
    const login = await b.fetch('/login');
    assert.ok(login.status === 200 || login.status === 503, `status ${login.status}`);
    assert.match(login.headers.get('content-type') ?? '', /text\/html/);
    assert.match(b.cookies.get('csrftoken') ?? '', /^[0-9a-f]{48}$/);
    const setCookie = login.headers.getSetCookie().join('\n');
    assert.doesNotMatch(setCookie, /HttpOnly/, 'the page script reads the CSRF token');
  });

  test('built assets are served with immutable caching; nothing else under /static/app/', async () => {
    const s = server();
    const page = await fetch(`${s.url}/login`);
    if (page.status === 503) return; // web/ not built in this checkout: the 503 page says so
    const asset = /\/static\/app\/assets\/[^"]+\.js/.exec(await page.text())![0];
    const res = await fetch(`${s.url}${asset}`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.match(res.headers.get('content-type') ?? '', /^text\/javascript/);
    for (const path of ['/static/app/index.html', '/static/app/.build-inputs', '/static/app/assets/../index.html', '/static/app/assets/missing.js']) {
      assert.equal((await fetch(`${s.url}${path}`)).status, 404, path);
    }
  });

  test('log in: session cookie attributes, next, /json authenticated, CSRF required for changes', async () => {
    const s = server();
    const b = browser(s);
    const res = await b.logIn(s.cast.hamlet.user.email, s.cast.hamlet.password, { next: '/#narrow/is/starred' });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { result: 'success', msg: '', redirect_to: '/#narrow/is/starred' });
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('parley_session='))!;
    assert.match(cookie, /; HttpOnly/);
    assert.match(cookie, /; SameSite=Lax/);
    assert.doesNotMatch(cookie, /Secure/, 'EXTERNAL_URL is http here');

    const me = await b.fetch('/json/users/me');
    assert.equal(me.status, 200);
    assert.equal(((await me.json()) as { user_id: number }).user_id, s.cast.hamlet.user.id);
    // Logged in, /login and / lead into the app.
    assert.equal((await b.fetch('/login?next=/%23inbox')).headers.get('location'), '/#inbox');
    assert.equal((await b.fetch('/login?next=//evil.example/')).headers.get('location'), '/');
    assert.ok([200, 503].includes((await b.fetch('/')).status));

    const change = { method: 'POST', form: { type: 'stream', to: 'Verona', topic: 'csrf', content: 'hello' } };
    const noToken = await errorOf(await b.fetch('/json/messages', change));
    assert.deepEqual(noToken, { status: 403, code: 'CSRF_FAILED', msg: 'CSRF error: CSRF token missing.' });
    const wrongToken = await errorOf(await b.fetch('/json/messages', { ...change, headers: { 'X-CSRFToken': 'a'.repeat(48) } }));
    assert.deepEqual(wrongToken, { status: 403, code: 'CSRF_FAILED', msg: 'CSRF error: CSRF token incorrect.' });
    const subscribed = await b.fetch('/json/users/me/subscriptions', { method: 'POST', form: { subscriptions: '[{"name":"web login"}]' }, csrf: true });
    assert.equal(subscribed.status, 200, await subscribed.clone().text());
    // Basic auth under /json is not a browser session: no CSRF token needed.
    const basic = `Basic ${Buffer.from(`${s.cast.hamlet.user.email}:${s.cast.hamlet.user.api_key}`).toString('base64')}`;
    const viaBasic = await fetch(`${s.url}/json/users/me/subscriptions`, {
      method: 'POST',
      headers: { Authorization: basic, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'subscriptions=[{"name":"web login"}]',
    });
    assert.equal(viaBasic.status, 200);
  });

  test('wrong password and missing CSRF token: errors the page shows in place', async () => {
    const s = server();
    const b = browser(s);
    assert.deepEqual(await errorOf(await b.logIn(s.cast.hamlet.user.email, 'wrong')), {
      status: 401,
      code: 'AUTHENTICATION_FAILED',
      msg: 'Your username or password is incorrect',
    });
    assert.equal(b.cookies.has('parley_session'), false);
    // "Session", not "Basic": a browser must not answer with its own password dialog.
    assert.equal((await b.logIn(s.cast.hamlet.user.email, 'wrong')).headers.get('www-authenticate'), 'Session realm="zulip"');
    assert.equal((await b.fetch('/json/users/me')).headers.get('www-authenticate'), 'Session realm="zulip"');
    const forged = await fetch(`${s.url}/accounts/login/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username: s.cast.hamlet.user.email, password: s.cast.hamlet.password }).toString(),
    });
    assert.deepEqual(await errorOf(forged), { status: 403, code: 'CSRF_FAILED', msg: 'CSRF error: CSRF cookie not set.' });
    const missing = await b.fetch('/accounts/login/', { method: 'POST', form: { username: s.cast.hamlet.user.email }, csrf: true });
    assert.equal((await errorOf(missing)).code, 'REQUEST_VARIABLE_MISSING');
  });

  test('log out ends the session on the server', async () => {
    const s = server();
    const b = browser(s);
    await b.logIn(s.cast.othello.user.email, s.cast.othello.password);
    const session = b.cookies.get('parley_session')!;
    assert.equal((await b.fetch('/json/users/me')).status, 200);
    assert.equal((await errorOf(await b.fetch('/accounts/logout/', { method: 'POST' }))).code, 'CSRF_FAILED');
    const out = await b.fetch('/accounts/logout/', { method: 'POST', csrf: true });
    assert.equal(out.status, 200);
    assert.equal(b.cookies.has('parley_session'), false);
    // The old cookie, replayed, no longer works: the session is gone from the server.
    const replay = await fetch(`${s.url}/json/users/me`, { headers: { Cookie: `parley_session=${session}` } });
    assert.equal(replay.status, 401);
    assert.equal((await b.fetch('/')).headers.get('location'), '/login');
  });

  test('mobile_flow_otp: redirect to zulip://login with the API key encrypted by the pad', async () => {
    const s = server();
    const pad = otp();
    const b = browser(s);
    const page = await b.fetch(`/accounts/login/?mobile_flow_otp=${pad}`);
    assert.ok([200, 503].includes(page.status));
    const res = await b.logIn(s.cast.hamlet.user.email, s.cast.hamlet.password, { mobile_flow_otp: pad });
    const body = (await res.json()) as { redirect_to: string };
    const url = new URL(body.redirect_to);
    assert.equal(url.protocol, 'zulip:');
    assert.equal(url.host, 'login');
    assert.deepEqual([...url.searchParams.keys()], ['otp_encrypted_api_key', 'email', 'user_id', 'realm']);
    assert.equal(url.searchParams.get('email'), s.cast.hamlet.user.delivery_email);
    assert.equal(url.searchParams.get('user_id'), String(s.cast.hamlet.user.id));
    assert.equal(url.searchParams.get('realm'), s.app.services.config.externalUrl);
    assert.equal(otpDecrypt(url.searchParams.get('otp_encrypted_api_key')!, pad), s.cast.hamlet.user.api_key);
    assert.equal(b.cookies.has('parley_session'), false, 'the app gets a key, the browser no session');
  });

  test('an invalid OTP is a clear error', async () => {
    const s = server();
    const b = browser(s);
    const page = await b.fetch('/login?mobile_flow_otp=1234');
    assert.equal(page.status, 400);
    assert.match(await page.text(), /Invalid OTP/);
    assert.deepEqual(await errorOf(await b.logIn(s.cast.hamlet.user.email, s.cast.hamlet.password, { mobile_flow_otp: 'xyz' })), {
      status: 400,
      code: 'BAD_REQUEST',
      msg: 'Invalid OTP',
    });
    const both = await b.logIn(s.cast.hamlet.user.email, s.cast.hamlet.password, { mobile_flow_otp: otp(), desktop_flow_otp: otp() });
    assert.equal((await errorOf(both)).msg, "Can't use both mobile_flow_otp and desktop_flow_otp together.");
  });

  test('desktop_flow_otp: an AES-GCM sealed one-time token that logs the desktop app in', async () => {
    const s = server();
    const pad = otp();
    const b = browser(s);
    const res = await b.logIn(s.cast.hamlet.user.email, s.cast.hamlet.password, { desktop_flow_otp: pad });
    const { desktop_data } = (await res.json()) as { desktop_data: string };
    const raw = Buffer.from(desktop_data, 'hex');
    const decipher = createDecipheriv('aes-256-gcm', Buffer.from(pad, 'hex'), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    const token = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8');
    assert.match(token, /^[A-Za-z0-9]{32}$/);

    const app = new Browser(s.url);
    const redeemed = await app.fetch(`/accounts/login/subdomain/${token}`);
    assert.equal(redeemed.status, 302);
    assert.equal(redeemed.headers.get('location'), '/');
    assert.equal((await app.fetch('/json/users/me')).status, 200);
    // Once only.
    assert.equal((await new Browser(s.url).fetch(`/accounts/login/subdomain/${token}`)).status, 400);
  });
});

forEachDatabase('web login over https', (server) => {
  test('the session cookie is Secure when EXTERNAL_URL is https', async () => {
    const s = server();
    const res = await new Browser(s.url).logIn(s.cast.hamlet.user.email, s.cast.hamlet.password);
    assert.match(res.headers.getSetCookie().find((c) => c.startsWith('parley_session='))!, /; Secure/);
  });
}, { externalUrl: 'https://localhost' });

const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent' });
forEachDatabase('web login rate limit', (server) => {
  test('password attempts are limited per username, as fetch_api_key', async () => {
    const s = server();
    const b = new Browser(s.url);
    const username = s.cast.moderator.user.email;
    for (let i = 0; i < 3; i++) assert.equal((await errorOf(await b.logIn(username, `guess${i}`))).code, 'AUTHENTICATION_FAILED');
    assert.equal((await errorOf(await b.logIn(username, s.cast.moderator.password))).code, 'RATE_LIMIT_HIT');
  });
}, { rateLimits: { ...base.rateLimits, enabled: true, apiPerMinute: 100, ipPerMinute: 100, authAttempts: 3, authWindowSeconds: 600 } });
