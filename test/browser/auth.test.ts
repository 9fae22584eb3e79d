import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { startServer, type TestServer } from '../helpers/server.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc_provider.js';
import { buildWeb, chromiumMissing, launch } from './helpers.js';

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
});
