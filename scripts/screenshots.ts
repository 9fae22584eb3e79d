// Screenshots of the web app's main views, at desktop and phone width, light and dark, from a
// `npx parley demo` organization, into docs/screenshots/. Needs /usr/bin/chromium.
// Usage: npm run screenshots
/// <reference lib="dom" />
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/app.js';
import { fetchRealmByStringId } from '../src/db/repos/realms.js';
import { runDemo } from '../src/cli/demo.js';
import { freePort } from '../bench/lib/util.js';
import { buildWeb, launch, scratchServerEnv } from '../test/browser/helpers.js';
import { generate } from 'otplib';
import { doConfirmTotpEnrolment, doStartTotpEnrolment } from '../src/actions/two_factor.js';
import { fetchUserByEmail } from '../src/db/repos/users.js';

const OUT = 'docs/screenshots';

buildWeb();

const port = await freePort();
const { dir, env } = scratchServerEnv('parley-screenshots-', port, {
  PARLEY_OWNER_EMAIL: 'owner@example.com',
  PARLEY_OWNER_PASSWORD: 'parley-demo',
  PARLEY_REALM_NAME: 'Elsinore',
  // A single sign-on button on the login page (the provider is only asked when it is clicked).
  PARLEY_OIDC_PROVIDERS: JSON.stringify({ company: { oidc_url: 'https://sso.example.com', client_id: 'parley', secret: 'unused', display_name: 'Company SSO' } }),
});
const app = await buildApp(loadConfig({}, env), { announce: () => undefined });
await app.fastify.listen({ port, host: '127.0.0.1' });
const realm = (await fetchRealmByStringId(app.services.db.kysely, ''))!;
await runDemo(app.services, realm, { domain: 'example.com', password: 'parley-demo' });
// Cordelia uses two-factor authentication, for the login's second step.
const cordelia = (await fetchUserByEmail(app.services.db.kysely, realm.id, 'cordelia@example.com'))!;
const { secret } = await doStartTotpEnrolment(app.services, realm, cordelia);
await doConfirmTotpEnrolment(app.services, realm, cordelia, await generate({ secret }));
const base = `http://localhost:${port}`;
const browser = await launch();
mkdirSync(OUT, { recursive: true });

async function logIn(page: Page, email = 'hamlet@example.com'): Promise<void> {
  await page.goto(`${base}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('parley-demo');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Channels' }).waitFor();
}

try {
  for (const scheme of ['light', 'dark'] as const) {
    for (const [device, viewport] of [
      ['desktop', { width: 1280, height: 800 }],
      ['phone', { width: 390, height: 844 }],
    ] as const) {
      const context = await browser.newContext({ viewport, colorScheme: scheme, deviceScaleFactor: 1 });
      const page = await context.newPage();
      const shot = async (name: string) => {
        // Avatars are Gravatar images, out of reach here; wait for their fallbacks.
        await page.waitForTimeout(300);
        await page.screenshot({ path: join(OUT, `${name}-${device}-${scheme}.png`) });
      };
      await page.goto(`${base}/login`);
      await page.getByRole('button', { name: 'Log in' }).waitFor();
      await shot('login');
      await page.getByLabel('Email').fill('cordelia@example.com');
      await page.getByLabel('Password').fill('parley-demo');
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
      await shot('login-two-factor');
      await page.context().clearCookies();
      await logIn(page);
      await shot('inbox');
      await page.goto(`${base}/#narrow/channel/1-general/topic/welcome`);
      await page.getByRole('article').first().waitFor();
      await shot('topic');
      await page.goto(`${base}/#feed`);
      await page.getByRole('article').first().waitFor();
      await shot('feed');
      if (device === 'phone') {
        await page.getByRole('button', { name: 'Show channels and views' }).click();
        await shot('sidebar');
      }
      // Viewing the feed read everything; unread again for the next set's inbox.
      await page.evaluate(async () => {
        const token = /csrftoken=([^;]+)/.exec(document.cookie)![1]!;
        const body = new URLSearchParams({ anchor: 'oldest', num_before: '0', num_after: '1000', narrow: '[]', op: 'remove', flag: 'read' });
        await fetch('/json/messages/flags/narrow', { method: 'POST', headers: { 'X-CSRFToken': token }, body });
      });
      // Settings (issue 16): a member's own, the channels, and an owner's organization screens.
      await page.goto(`${base}/#settings/profile`);
      await page.getByRole('dialog', { name: 'Settings' }).getByRole('heading', { name: 'Profile', exact: true }).waitFor();
      await shot('settings-profile');
      // A new picture being cropped: a wide one, the square chosen at its right.
      const picture = await page.evaluate(() => {
        const c = document.createElement('canvas');
        c.width = 640;
        c.height = 360;
        const g = c.getContext('2d')!;
        const sky = g.createLinearGradient(0, 0, 640, 360);
        sky.addColorStop(0, '#3b5bdb');
        sky.addColorStop(1, '#f59f00');
        g.fillStyle = sky;
        g.fillRect(0, 0, 640, 360);
        g.fillStyle = '#ffffff';
        g.beginPath();
        g.arc(470, 170, 90, 0, Math.PI * 2);
        g.fill();
        return c.toDataURL('image/png').split(',')[1]!;
      });
      await page.getByLabel('Upload new profile picture').setInputFiles({ name: 'me.png', mimeType: 'image/png', buffer: Buffer.from(picture, 'base64') });
      const crop = page.getByRole('group', { name: 'Crop your profile picture' });
      await crop.getByLabel('Zoom').fill('70');
      await crop.getByLabel('Horizontal position').fill('85');
      await shot('settings-avatar-crop');
      await crop.getByRole('button', { name: 'Cancel' }).click();
      await page.goto(`${base}/#channels/all`);
      await page.getByRole('list', { name: 'Channels' }).getByRole('listitem').first().waitFor();
      await shot('settings-channels');
      await context.close();
      const ownerContext = await browser.newContext({ viewport, colorScheme: scheme, deviceScaleFactor: 1 });
      const ownerPage = await ownerContext.newPage();
      await logIn(ownerPage, 'owner@example.com');
      for (const [name, hash, heading] of [
        ['organization-settings', '#organization/organization-settings', 'Organization settings'],
        ['organization-users', '#organization/users', 'Users'],
        ['organization-invitations', '#organization/invites-list', 'Invitations'],
      ] as const) {
        await ownerPage.goto(`${base}/${hash}`);
        await ownerPage.getByRole('dialog', { name: 'Settings' }).getByRole('heading', { name: heading, exact: true }).waitFor();
        await ownerPage.waitForTimeout(300);
        await ownerPage.screenshot({ path: join(OUT, `${name}-${device}-${scheme}.png`) });
      }
      await ownerContext.close();
    }
  }
  console.log(`screenshots in ${OUT}/`);
} finally {
  await browser.close();
  await app.close();
  rmSync(dir, { recursive: true, force: true });
}
