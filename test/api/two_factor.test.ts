import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { generate } from 'otplib';
import { captureLogs, startServer, testDatabases, PASSWORD, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { loadConfig } from '../../src/config.js';
import { cliJson, cliRefused, parley } from '../helpers/cli.js';

/**
 * Two-factor authentication (TOTP) for browser password logins: enrolment from personal
 * settings, the login's second step, recovery codes, what stays ungated (API keys), and
 * PARLEY_TWO_FACTOR_AUTHENTICATION=required_for_admins.
 */

/** A browser's cookie jar and the login page's two requests. */
class Browser {
  cookies = new Map<string, string>();
  constructor(readonly base: string) {}
  async fetch(path: string, form?: Record<string, string>): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers.Cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (form) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      headers['X-CSRFToken'] = this.cookies.get('csrftoken') ?? '';
    }
    const res = await fetch(this.base + path, { method: form ? 'POST' : 'GET', headers, body: form && new URLSearchParams(form).toString(), redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return res;
  }
  async password(username: string, extra: Record<string, string> = {}): Promise<{ status: number; body: any }> {
    await this.fetch('/login');
    const res = await this.fetch('/accounts/login/', { username, password: PASSWORD, ...extra });
    return { status: res.status, body: await res.json() };
  }
  async code(token: string, code: string): Promise<{ status: number; body: any }> {
    const res = await this.fetch('/accounts/login/two_factor', { two_factor_token: token, code });
    return { status: res.status, body: await res.json() };
  }
}

/** The app's code for the time step `offset` steps from now (one step either way is accepted). */
const totp = (secret: string, offset = 0) => generate({ secret, epoch: Math.floor(Date.now() / 1000) + offset * 30 });

for (const kind of testDatabases()) {
  describe(`two-factor authentication [${kind}]`, () => {
    let s: TestServer;
    let secret = '';
    let recovery: string[] = [];
    let enrolmentCode = '';
    before(async () => {
      s = await startServer(kind, { twoFactor: 'required_for_admins' });
    });
    after(async () => s?.close());

    test('enrolment from personal settings: setup, a wrong code refused, confirm gives ten recovery codes', async () => {
      const hamlet = s.cast.hamlet.client;
      assert.deepEqual(ok(await hamlet.get('/users/me/two_factor')).two_factor, { enabled: false, recovery_codes_left: 0, required: false, available: true });
      const setup = ok(await hamlet.post('/users/me/two_factor/setup'));
      secret = setup.secret;
      assert.match(secret, /^[A-Z2-7]{32}$/);
      assert.match(setup.otpauth_uri, /^otpauth:\/\/totp\/.*hamlet%40example\.com.*secret=[A-Z2-7]{32}/);
      err(await hamlet.post('/users/me/two_factor/confirm', { code: '000000' }), 401, 'AUTHENTICATION_FAILED', 'The two-factor code is incorrect or was already used.');
      enrolmentCode = await totp(secret);
      recovery = ok(await hamlet.post('/users/me/two_factor/confirm', { code: enrolmentCode })).recovery_codes;
      assert.equal(recovery.length, 10);
      assert.equal(new Set(recovery).size, 10);
      for (const c of recovery) assert.match(c, /^[a-z2-9]{5}-[a-z2-9]{5}$/);
      assert.deepEqual(ok(await hamlet.get('/users/me/two_factor')).two_factor, { enabled: true, recovery_codes_left: 10, required: false, available: true });
      err(await hamlet.post('/users/me/two_factor/setup'), 400, 'BAD_REQUEST', 'Two-factor authentication is already on; turn it off first to use another app.');
      // Recovery codes are kept hashed, never as typed.
      const rows = await s.app.services.db.kysely.selectFrom('user_recovery_codes').select('code_hash').where('user_id', '=', s.cast.hamlet.user.id).execute();
      assert.equal(rows.length, 10);
      for (const r of rows) assert.ok(!recovery.includes(r.code_hash) && /^[0-9a-f]{64}$/.test(r.code_hash));
    });

    test('a password login then needs the code: no session before it, a wrong or replayed code refused, the right one logs in', async () => {
      const b = new Browser(s.url);
      const first = await b.password('hamlet@example.com', { next: '/#inbox' });
      assert.equal(first.status, 200);
      assert.equal(first.body.two_factor_required, true);
      assert.equal(first.body.enrolment, null);
      assert.equal(typeof first.body.two_factor_token, 'string');
      assert.equal(b.cookies.has('parley_session'), false);
      const wrong = await b.code(first.body.two_factor_token, '123456');
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.code, 'AUTHENTICATION_FAILED');
      // The code that confirmed the enrolment was used: it does not work twice.
      const replay = await b.code(first.body.two_factor_token, enrolmentCode);
      assert.equal(replay.status, 401);
      assert.equal(b.cookies.has('parley_session'), false);
      const right = await b.code(first.body.two_factor_token, await totp(secret, 1));
      assert.equal(right.status, 200, JSON.stringify(right.body));
      assert.equal(right.body.redirect_to, '/#inbox');
      assert.ok(b.cookies.get('parley_session'));
      // The token was used up with it.
      const again = await b.code(first.body.two_factor_token, recovery[9]!);
      assert.equal(again.status, 401);
      assert.equal(again.body.msg, 'This login has expired. Log in again.');
    });

    test('API keys are unaffected: fetch_api_key needs no second factor, as in Zulip', async () => {
      const body = ok(await s.anonymous.post('/fetch_api_key', { username: 'hamlet@example.com', password: PASSWORD }));
      assert.equal(body.api_key, s.cast.hamlet.user.api_key);
    });

    test('a recovery code works once only', async () => {
      const b = new Browser(s.url);
      const first = await b.password('hamlet@example.com');
      const used = await b.code(first.body.two_factor_token, recovery[0]!.toUpperCase());
      assert.equal(used.status, 200, JSON.stringify(used.body));
      const b2 = new Browser(s.url);
      const second = await b2.password('hamlet@example.com');
      const reused = await b2.code(second.body.two_factor_token, recovery[0]!);
      assert.equal(reused.status, 401);
      assert.equal(b2.cookies.has('parley_session'), false);
      assert.equal(ok(await s.cast.hamlet.client.get('/users/me/two_factor')).two_factor.recovery_codes_left, 9);
    });

    test('the mobile app flow through the login form also asks for the code, then redirects to zulip://', async () => {
      const pad = randomBytes(32).toString('hex');
      const b = new Browser(s.url);
      const first = await b.password('hamlet@example.com', { mobile_flow_otp: pad });
      assert.equal(first.body.two_factor_required, true);
      const done = await b.code(first.body.two_factor_token, recovery[1]!);
      assert.match(done.body.redirect_to, /^zulip:\/\/login\?otp_encrypted_api_key=[0-9a-f]{64}&/);
    });

    test('required for administrators: an administrator enrols during the login, and cannot turn it off', async () => {
      const b = new Browser(s.url);
      const first = await b.password('iago@example.com');
      assert.equal(first.body.two_factor_required, true);
      const { secret: adminSecret, otpauth_uri } = first.body.enrolment;
      assert.match(otpauth_uri, /^otpauth:\/\/totp\//);
      assert.equal(b.cookies.has('parley_session'), false);
      const done = await b.code(first.body.two_factor_token, await totp(adminSecret));
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.body.recovery_codes.length, 10);
      assert.ok(b.cookies.get('parley_session'));
      const iago = s.cast.admin.client;
      assert.deepEqual(ok(await iago.get('/users/me/two_factor')).two_factor, { enabled: true, recovery_codes_left: 10, required: true, available: true });
      err(await iago.delete('/users/me/two_factor', { code: done.body.recovery_codes[0] }), 400, 'BAD_REQUEST', 'Two-factor authentication is required for administrators on this server.');
    });

    test('logs say who passed or failed the second factor, never the codes, the secret or the token', async () => {
      let token = '';
      const good = recovery[3]!;
      const logs = await captureLogs(s, async () => {
        const b = new Browser(s.url);
        token = (await b.password('hamlet@example.com')).body.two_factor_token;
        assert.equal((await b.code(token, '654321')).status, 401);
        assert.equal((await b.code(token, good)).status, 200);
      });
      assert.match(logs, /"code":"TWO_FACTOR_FAILED"\},"login refused"/);
      assert.match(logs, /"method":"password\+two_factor"\},"login"/);
      for (const x of ['654321', good, token, secret, PASSWORD]) assert.equal(logs.includes(x), false, x);
    });

    test('npx parley disable-two-factor resets someone who lost phone and codes; an administrator enrols again at the next login', async () => {
      const env = { DATABASE_URL: s.config.databaseUrl, PARLEY_DATA_DIR: s.config.dataDir };
      assert.deepEqual(cliJson(await parley(env, 'disable-two-factor', '--email', 'iago@example.com')), { user_id: s.cast.admin.user.id, email: 'iago@example.com', two_factor: false });
      cliRefused(await parley(env, 'disable-two-factor', '--email', 'iago@example.com'), "User 'iago@example.com' does not use two-factor authentication");
      const login = await new Browser(s.url).password('iago@example.com');
      assert.equal(login.body.two_factor_required, true);
      assert.match(login.body.enrolment.secret, /^[A-Z2-7]{32}$/);
    });

    test('a member turns it off with a current code; then the password alone logs in again', async () => {
      const hamlet = s.cast.hamlet.client;
      err(await hamlet.delete('/users/me/two_factor', { code: recovery[0]! }), 401, 'AUTHENTICATION_FAILED');
      ok(await hamlet.delete('/users/me/two_factor', { code: recovery[2]! }));
      const b = new Browser(s.url);
      const login = await b.password('hamlet@example.com');
      assert.equal(login.body.two_factor_required, undefined);
      assert.equal(login.body.redirect_to, '/');
      assert.ok(b.cookies.get('parley_session'));
    });
  });
}

describe('two-factor codes are rate-limited per person, like passwords', () => {
  let s: TestServer;
  before(async () => {
    const base = loadConfig({}, { PARLEY_ENV_FILE: '/nonexistent' });
    s = await startServer('sqlite', { twoFactor: 'required_for_admins', rateLimits: { ...base.rateLimits, enabled: true, authAttempts: 3, authWindowSeconds: 600 } });
  });
  after(async () => s?.close());

  test('after three wrong codes the fourth attempt is refused with 429, even with the right code', async () => {
    const b = new Browser(s.url);
    const first = await b.password('iago@example.com');
    const secret = first.body.enrolment.secret as string;
    for (let i = 0; i < 3; i++) assert.equal((await b.code(first.body.two_factor_token, '000000')).status, 401);
    const limited = await b.code(first.body.two_factor_token, await totp(secret));
    assert.equal(limited.status, 429);
    assert.equal(limited.body.code, 'RATE_LIMIT_HIT');
    assert.equal(b.cookies.has('parley_session'), false);
  });
});
