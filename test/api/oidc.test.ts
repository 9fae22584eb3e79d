import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDecipheriv, randomBytes } from 'node:crypto';
import { captureLogs, startServer, testDatabases, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc_provider.js';
import { fetchUserByDeliveryEmail } from '../../src/db/repos/users.js';
import { loadConfig } from '../../src/config.js';
import { assertConforms } from '../helpers/openapi.js';

/**
 * Single sign-on against a real OpenID Connect provider on loopback (oidc-provider): the
 * authorization code flow end to end over HTTP, as a browser follows it, with the provider's
 * login form filled in. The browser test (test/browser/oidc.test.ts) does the same in Chromium.
 */

/** A browser reduced to a cookie jar and manual redirects. Cookies are per host, not per port, as in browsers. */
class Jar {
  cookies = new Map<string, string>();
  async fetch(url: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers.Cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const res = await fetch(url, { method: init.method ?? 'GET', headers, body, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(c)) this.cookies.delete(pair!.slice(0, eq));
      else this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return res;
  }
}

/**
 * Opens Parley's login URL and follows the flow through the provider's login form (signing in
 * as `email`) up to the provider's redirect back to Parley; returns that callback URL unopened.
 */
async function toCallback(jar: Jar, startUrl: string, email: string): Promise<URL> {
  let url = startUrl;
  for (let i = 0; i < 12; i++) {
    const res = await jar.fetch(url);
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location')!, url);
      if (next.pathname === '/complete/oidc/') return next;
      url = next.href;
      continue;
    }
    const page = await res.text();
    assert.equal(res.status, 200, page);
    const action = /action="([^"]+)"/.exec(page)![1]!;
    const posted = await jar.fetch(new URL(action, url).href, { method: 'POST', form: { login: email } });
    assert.ok(posted.status >= 300 && posted.status < 400, `login form answered ${posted.status}`);
    url = new URL(posted.headers.get('location')!, url).href;
  }
  throw new Error('the flow did not come back to Parley');
}

function otpDecrypt(hex: string, pad: string): string {
  let out = '';
  for (let i = 0; i < hex.length; i++) out += (parseInt(hex[i]!, 16) ^ parseInt(pad[i]!, 16)).toString(16);
  return Buffer.from(out, 'hex').toString('ascii');
}

for (const kind of testDatabases()) {
  describe(`single sign-on with OpenID Connect [${kind}]`, () => {
    let s: TestServer;
    let idp: TestOidcProvider;
    before(async () => {
      idp = await startOidcProvider([
        { email: 'hamlet@example.com', emailVerified: true, name: 'King Hamlet' },
        { email: 'unverified@example.com', emailVerified: false, name: 'Not Verified' },
        { email: 'newcomer@example.com', emailVerified: true, name: 'Rosencrantz' },
      ]);
      s = await startServer(kind, { oidc: [idp.config('testidp', 'Test IdP')] });
      // The callback URL the provider knows must be the one the cookies were set for.
      s.config.externalUrl = s.url;
      idp.register(s.url);
    });
    after(async () => {
      await s?.close();
      await idp?.close();
    });

    test('server_settings lists the provider as Zulip lists its external methods; register has the switch', async () => {
      const res = await s.anonymous.get('/server_settings');
      assertConforms(res, 'GET', '/server_settings');
      const body = ok(res);
      assert.equal(body.authentication_methods['openid connect'], true);
      assert.deepEqual(body.external_authentication_methods, [
        {
          name: 'oidc:testidp',
          display_name: 'Test IdP',
          display_icon: null,
          login_url: '/accounts/login/social/oidc/testidp',
          signup_url: '/accounts/register/social/oidc/testidp',
        },
      ]);
      const reg = ok(await s.cast.hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) }));
      assert.deepEqual(reg.realm_authentication_methods['OpenID Connect'], { enabled: true, available: true });
    });

    test('mobile_flow_otp through SSO ends at zulip://login with the API key encrypted to the pad', async () => {
      const pad = randomBytes(32).toString('hex');
      const jar = new Jar();
      const callback = await toCallback(jar, `${s.url}/accounts/login/social/oidc/testidp?mobile_flow_otp=${pad}`, 'hamlet@example.com');
      assert.ok(callback.searchParams.get('code'));
      const res = await jar.fetch(callback.href);
      assert.equal(res.status, 302);
      const to = new URL(res.headers.get('location')!);
      assert.equal(to.protocol, 'zulip:');
      assert.equal(to.host + to.pathname, 'login');
      const hamlet = s.cast.hamlet.user;
      assert.equal(otpDecrypt(to.searchParams.get('otp_encrypted_api_key')!, pad), hamlet.api_key);
      assert.equal(to.searchParams.get('email'), hamlet.delivery_email);
      assert.equal(to.searchParams.get('user_id'), String(hamlet.id));
      assert.equal(to.searchParams.get('realm'), s.url);
      assert.equal(jar.cookies.has('parley_session'), false, 'the app flow starts no browser session');
      // The code and state were used up: the same callback again is refused.
      jar.cookies.set('parley_oidc_state', callback.searchParams.get('state')!);
      const again = await jar.fetch(callback.href);
      assert.equal(again.status, 401);
      assert.match(await again.text(), /state does not match/);
    });

    test('desktop_flow_otp through SSO ends on a page with the sealed one-time token, which logs the desktop app in', async () => {
      const pad = randomBytes(32).toString('hex');
      const jar = new Jar();
      const callback = await toCallback(jar, `${s.url}/accounts/login/social/oidc/testidp?desktop_flow_otp=${pad}`, 'hamlet@example.com');
      const res = await jar.fetch(callback.href);
      assert.equal(res.status, 200);
      const sealed = Buffer.from(/aria-label="Login token" value="([0-9a-f]+)"/.exec(await res.text())![1]!, 'hex');
      const decipher = createDecipheriv('aes-256-gcm', Buffer.from(pad, 'hex'), sealed.subarray(0, 12));
      decipher.setAuthTag(sealed.subarray(sealed.length - 16));
      const token = Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]).toString('utf8');
      assert.equal(jar.cookies.has('parley_session'), false);
      const app = new Jar();
      const redeemed = await app.fetch(`${s.url}/accounts/login/subdomain/${token}`);
      assert.equal(redeemed.status, 302);
      const me = await app.fetch(`${s.url}/json/users/me`);
      assert.equal(((await me.json()) as { user_id: number }).user_id, s.cast.hamlet.user.id);
    });

    test('a wrong state is refused, and no session starts', async () => {
      const jar = new Jar();
      const callback = await toCallback(jar, `${s.url}/accounts/login/social/oidc/testidp`, 'hamlet@example.com');
      callback.searchParams.set('state', 'not-the-state-parley-sent');
      const res = await jar.fetch(callback.href);
      assert.equal(res.status, 401);
      assert.match(await res.text(), /This login attempt is invalid or has expired \(the state does not match\)/);
      assert.equal(jar.cookies.has('parley_session'), false);
    });

    test('a callback made for another browser (state not in this browser cookie) is refused', async () => {
      const victim = new Jar();
      const callback = await toCallback(new Jar(), `${s.url}/accounts/login/social/oidc/testidp`, 'hamlet@example.com');
      const res = await victim.fetch(callback.href);
      assert.equal(res.status, 401);
      assert.equal(victim.cookies.has('parley_session'), false);
    });

    test('an email the provider has not verified is refused with a clear message', async () => {
      const jar = new Jar();
      const callback = await toCallback(jar, `${s.url}/accounts/login/social/oidc/testidp`, 'unverified@example.com');
      const res = await jar.fetch(callback.href);
      assert.equal(res.status, 401);
      assert.match(await res.text(), /Test IdP has not verified your email address unverified@example.com/);
      assert.equal(jar.cookies.has('parley_session'), false);
      assert.equal(await fetchUserByDeliveryEmail(s.app.services.db.kysely, s.realm.id, 'unverified@example.com'), undefined);
    });

    test('a verified newcomer gets an account under the sign-up rules and a browser session, then lands on next', async () => {
      const refused = new Jar();
      const first = await refused.fetch((await toCallback(refused, `${s.url}/accounts/login/social/oidc/testidp`, 'newcomer@example.com')).href);
      assert.equal(first.status, 401);
      assert.match(await first.text(), /You need an invitation to join this organization/);
      ok(await s.cast.owner.client.patch('/realm', { invite_required: 'false' }));
      const jar = new Jar();
      const callback = await toCallback(jar, `${s.url}/accounts/login/social/oidc/testidp?next=/%23narrow/channel/1`, 'newcomer@example.com');
      const res = await jar.fetch(callback.href);
      assert.equal(res.status, 302);
      assert.equal(res.headers.get('location'), '/#narrow/channel/1');
      assert.ok(jar.cookies.get('parley_session'));
      const user = (await fetchUserByDeliveryEmail(s.app.services.db.kysely, s.realm.id, 'newcomer@example.com'))!;
      assert.equal(user.full_name, 'Rosencrantz');
      assert.equal(user.password_hash, null);
      const me = await jar.fetch(`${s.url}/json/users/me`);
      assert.equal(((await me.json()) as { email: string }).email, user.email);
    });

    test('owners switch OpenID Connect off per organization: no buttons, and its login URL refuses', async () => {
      const owner = s.cast.owner.client;
      err(await s.cast.admin.client.patch('/realm', { authentication_methods: JSON.stringify({ 'OpenID Connect': false }) }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
      ok(await owner.patch('/realm', { authentication_methods: JSON.stringify({ 'OpenID Connect': false }) }));
      const body = ok(await s.anonymous.get('/server_settings'));
      assert.equal(body.authentication_methods['openid connect'], false);
      assert.deepEqual(body.external_authentication_methods, []);
      const res = await new Jar().fetch(`${s.url}/accounts/login/social/oidc/testidp`);
      assert.equal(res.status, 403);
      assert.match(await res.text(), /Single sign-on with OpenID Connect is disabled in this organization/);
      ok(await owner.patch('/realm', { authentication_methods: JSON.stringify({ 'OpenID Connect': true }) }));
    });

    test('logs name the person, the provider and the outcome, never the code, state, pad or key', async () => {
      const pad = randomBytes(32).toString('hex');
      let callback: URL | undefined;
      const logs = await captureLogs(s, async () => {
        const jar = new Jar();
        callback = await toCallback(jar, `${s.url}/accounts/login/social/oidc/testidp?mobile_flow_otp=${pad}`, 'hamlet@example.com');
        assert.equal((await jar.fetch(callback.href)).status, 302);
        const refused = new Jar();
        await refused.fetch((await toCallback(refused, `${s.url}/accounts/login/social/oidc/testidp`, 'unverified@example.com')).href);
      });
      assert.match(logs, /"method":"oidc","provider":"testidp"\},"login"/);
      assert.match(logs, /"code":"EMAIL_NOT_VERIFIED"\},"login refused"/);
      for (const secret of [callback!.searchParams.get('code')!, callback!.searchParams.get('state')!, pad, s.cast.hamlet.user.api_key]) {
        assert.equal(logs.includes(secret), false);
      }
    });

    test('an unknown provider is a 404 page', async () => {
      const res = await new Jar().fetch(`${s.url}/accounts/login/social/oidc/nosuch`);
      assert.equal(res.status, 404);
    });
  });
}

describe('single sign-on is rate-limited per address like fetch_api_key', () => {
  let s: TestServer;
  let idp: TestOidcProvider;
  before(async () => {
    idp = await startOidcProvider([]);
    const base = loadConfig({}, { PARLEY_ENV_FILE: '/nonexistent' });
    s = await startServer('sqlite', { oidc: [idp.config('testidp', 'Test IdP')], rateLimits: { ...base.rateLimits, enabled: true, ipPerMinute: 3 } });
    idp.register(s.url);
  });
  after(async () => {
    await s?.close();
    await idp?.close();
  });

  test('the fourth start from one address within a minute is refused with 429', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await fetch(`${s.url}/accounts/login/social/oidc/testidp`, { redirect: 'manual' })).status, 302);
    const res = await fetch(`${s.url}/accounts/login/social/oidc/testidp`, { redirect: 'manual' });
    assert.equal(res.status, 429);
    assert.equal(((await res.json()) as { code: string }).code, 'RATE_LIMIT_HIT');
    assert.ok(Number(res.headers.get('retry-after')) > 0);
  });
});

describe('a provider that cannot be reached', () => {
  let s: TestServer;
  before(async () => {
    const down = { key: 'down', issuer: 'http://127.0.0.1:9', clientId: 'x', clientSecret: 'y', displayName: 'Down IdP', displayIcon: null };
    s = await startServer('sqlite', { oidc: [down] });
  });
  after(async () => s?.close());

  test('gives a clear 503 page, never a 500, and lets nobody in', async () => {
    const jar = new Jar();
    const res = await jar.fetch(`${s.url}/accounts/login/social/oidc/down`);
    assert.equal(res.status, 503);
    assert.match(await res.text(), /Down IdP cannot be reached, so logging in with it is not possible right now/);
    assert.equal(jar.cookies.has('parley_session'), false);
  });
});
