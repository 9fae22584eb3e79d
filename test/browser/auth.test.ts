import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { generate } from 'otplib';
import { PASSWORD, startServer, type TestServer } from '../helpers/server.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc_provider.js';
import { buildWeb, chromiumMissing, launch, loggedIn } from './helpers.js';
import { ok } from '../helpers/assert.js';

const totp = (secret: string, offset = 0) => generate({ secret, epoch: Math.floor(Date.now() / 1000) + offset * 30 });

/**
 * Issue 18 in Chromium: single sign-on through a real OpenID Connect provider on loopback, and
 * a password login that asks for its second factor.
 */
describe('single sign-on and two-factor login in Chromium', { skip: chromiumMissing }, () => {
  let s: TestServer;
  let idp: TestOidcProvider;
  let browser: Browser;

  before(async () => {
    buildWeb();
    idp = await startOidcProvider([{ email: 'othello@example.com', emailVerified: true, name: 'Othello' }]);
    s = await startServer('sqlite', { oidc: [idp.config('testidp', 'Test IdP')] });
    s.config.externalUrl = s.url;
    idp.register(s.url);
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await s?.close();
    await idp?.close();
  });

  test('"Log in with Test IdP" on /login goes through the provider and back into the app', async () => {
    const context = await browser.newContext();
    context.setDefaultTimeout(60_000);
    const page = await context.newPage();
    await page.goto(`${s.url}/login`);
    await page.getByRole('link', { name: 'Log in with Test IdP' }).click();
    await page.getByRole('heading', { name: 'Sign in to the test identity provider' }).waitFor();
    assert.ok(page.url().startsWith(idp.issuer), page.url());
    await page.getByLabel('Email').fill('othello@example.com');
    const registered = page.waitForResponse((r) => r.url().endsWith('/json/register'));
    await page.getByRole('button', { name: 'Sign in' }).click();
    const reg = (await (await registered).json()) as { user_id: number };
    assert.equal(reg.user_id, s.cast.othello.user.id);
    await page.getByRole('navigation', { name: 'Channels' }).waitFor();
    assert.equal(new URL(page.url()).origin, s.url);
    await context.close();
  });

  test('with passwords switched off, /login offers only the single sign-on button', async () => {
    const owner = s.cast.owner.client;
    ok(await owner.patch('/realm', { authentication_methods: JSON.stringify({ Email: false }) }));
    const page = await browser.newPage();
    await page.goto(`${s.url}/login`);
    await page.getByRole('link', { name: 'Log in with Test IdP' }).waitFor();
    assert.equal(await page.getByLabel('Password').count(), 0);
    assert.equal(await page.getByText('or', { exact: true }).count(), 0);
    await page.close();
    ok(await owner.patch('/realm', { authentication_methods: JSON.stringify({ Email: true }) }));
  });

  test('enrol in Account & privacy, then a password login asks for the code: a wrong one is shown in place, the right one gets in', async () => {
    const { context, page } = await loggedIn(browser, s.url, 'hamlet@example.com', PASSWORD, '#settings/account-and-privacy');
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    await dialog.getByRole('button', { name: 'Set up two-factor authentication' }).click();
    const key = ((await dialog.getByLabel('Setup key').textContent()) ?? '').replace(/\s+/g, '');
    assert.match(key, /^[A-Z2-7]{32}$/);
    await dialog.getByLabel('Code from the app').fill(await totp(key));
    await dialog.getByRole('button', { name: 'Turn on' }).click();
    await dialog.getByRole('list', { name: 'Recovery codes' }).waitFor();
    assert.equal(await dialog.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem').count(), 10);
    await dialog.getByText(/On\. Logging in with your password also asks for a code/).waitFor();
    await context.close();

    const login = await browser.newContext();
    login.setDefaultTimeout(60_000);
    const p = await login.newPage();
    await p.goto(`${s.url}/login`);
    await p.getByLabel('Email').fill('hamlet@example.com');
    await p.getByLabel('Password').fill(PASSWORD);
    await p.getByRole('button', { name: 'Log in' }).click();
    await p.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
    await p.getByLabel('Code').fill('000000');
    await p.getByRole('button', { name: 'Verify' }).click();
    assert.equal(await p.getByRole('alert').textContent(), 'The two-factor code is incorrect or was already used.');
    await p.getByLabel('Code').fill(await totp(key, 1));
    await p.getByRole('button', { name: 'Verify' }).click();
    await p.getByRole('navigation', { name: 'Channels' }).waitFor();
    await login.close();
  });
});
