import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { PASSWORD, startServer, testDatabases, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { loopbackSmtp } from '../helpers/smtp.js';
import { chromiumMissing, launch } from './helpers.js';
import { now } from '../../src/db/index.js';
import { updateUserRow } from '../../src/db/repos/users.js';
import { passwordResetToken } from '../../src/actions/password_reset.js';

/** Every email the server sends, as a real SMTP server on loopback receives it. */
const { url: smtpUrl, inbox } = await loopbackSmtp();

async function nextMail(to: string, subject: RegExp, since: number): Promise<{ text: string; subject: string }> {
  for (let i = 0; i < 200; i++) {
    const m = inbox.slice(since).find((x) => x.to === to && subject.test(x.mail.subject ?? ''));
    if (m) return { text: m.mail.text ?? '', subject: m.mail.subject ?? '' };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no email "${subject}" to ${to}`);
}

for (const kind of testDatabases()) {
  describe(`password reset by email, in Chromium [${kind}]`, { skip: chromiumMissing }, () => {
    let s: TestServer;
    let browser: Browser;
    before(async () => {
      s = await startServer(kind, { smtpUrl });
      browser = await launch();
    });
    after(async () => {
      await browser?.close();
      await s?.close();
    });

    /** The link's path on the test server (the email names EXTERNAL_URL's host). */
    const onServer = (link: string) => `${s.url}${new URL(link).pathname}`;

    test('request form -> email -> link -> new password; the link then fails; the old password fails, the new works', async () => {
      const hamlet = s.cast.hamlet.user;
      const page = await browser.newPage();
      await page.goto(`${s.url}/accounts/password/reset`);
      const since = inbox.length;
      await page.getByLabel('Email').fill(hamlet.delivery_email);
      await page.getByRole('button', { name: 'Send reset link' }).click();
      await page.getByRole('heading', { name: 'Check your email' }).waitFor();

      const mail = await nextMail(hamlet.delivery_email, /^Reset your password for /, since);
      const link = /(http:\/\/\S+\/accounts\/password\/reset\/\S+)/.exec(mail.text)![1]!;
      await page.goto(onServer(link));
      await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
      // Too weak (zxcvbn: a keyboard pattern), then not matching: the form says why and stays.
      await page.getByLabel('New password').fill('qwerty12');
      await page.getByLabel('Confirm password').fill('qwerty12');
      await page.getByRole('button', { name: 'Change my password' }).click();
      assert.match(await page.getByRole('alert').innerText(), /^The new password is too weak/);
      await page.getByLabel('New password').fill('violet kestrel under a slate roof');
      await page.getByLabel('Confirm password').fill('violet kestrel under a slate rooF');
      await page.getByRole('button', { name: 'Change my password' }).click();
      assert.equal(await page.getByRole('alert').innerText(), "The two password fields didn't match.");
      await page.getByLabel('New password').fill('violet kestrel under a slate roof');
      await page.getByLabel('Confirm password').fill('violet kestrel under a slate roof');
      await page.getByRole('button', { name: 'Change my password' }).click();
      await page.getByRole('heading', { name: 'Password changed' }).waitFor();

      // Single use: the same link is now refused.
      await page.goto(onServer(link));
      await page.getByRole('heading', { name: 'Invalid link' }).waitFor();
      await page.close();
      err(await s.anonymous.post('/fetch_api_key', { username: hamlet.delivery_email, password: PASSWORD }), 401, 'AUTHENTICATION_FAILED');
      assert.equal(ok(await s.anonymous.post('/fetch_api_key', { username: hamlet.delivery_email, password: 'violet kestrel under a slate roof' })).user_id, hamlet.id);
    });

    test('an expired or altered link fails; an unknown address gets the same answer and no email', async () => {
      const othello = s.cast.othello.user;
      const expired = await passwordResetToken(s.app.services, othello, now() - 1);
      const res = await fetch(`${s.url}/accounts/password/reset/${expired}`);
      assert.equal(res.status, 400);
      assert.match(await res.text(), /This password reset link is invalid, was already used, or has expired/);
      const valid = await passwordResetToken(s.app.services, othello, now() + 600);
      assert.equal((await fetch(`${s.url}/accounts/password/reset/${valid}`)).status, 200);
      assert.equal((await fetch(`${s.url}/accounts/password/reset/${valid.replace(/-\d+-/, `-${now() + 9999}-`)}`)).status, 400);

      const page = await browser.newPage();
      await page.goto(`${s.url}/accounts/password/reset`);
      const since = inbox.length;
      await page.getByLabel('Email').fill('nobody@example.com');
      await page.getByRole('button', { name: 'Send reset link' }).click();
      await page.getByRole('heading', { name: 'Check your email' }).waitFor();
      // A reset for a real account marks the end: it is the only email since.
      const admin = s.cast.admin.user.delivery_email;
      await page.goto(`${s.url}/accounts/password/reset`);
      await page.getByLabel('Email').fill(admin);
      await page.getByRole('button', { name: 'Send reset link' }).click();
      await nextMail(admin, /^Reset your password/, since);
      await page.close();
      assert.deepEqual(inbox.slice(since).map((m) => m.to), [admin]);
    });

    test('a new login sends a notice unless the person turned enable_login_emails off', async () => {
      const othello = s.cast.othello.user;
      // Accounts made in the last minute are spared the notice (their first login is the sign-up).
      await updateUserRow(s.app.services.db.kysely, othello.id, { date_joined: now() - 3600 });
      let since = inbox.length;
      ok(await s.anonymous.post('/fetch_api_key', { username: othello.delivery_email, password: PASSWORD }));
      const notice = await nextMail(othello.delivery_email, /^New login to /, since);
      assert.match(notice.text, /was just logged into/);
      assert.doesNotMatch(notice.text, new RegExp(PASSWORD));

      ok(await s.cast.othello.client.patch('/settings', { enable_login_emails: false }));
      since = inbox.length;
      ok(await s.anonymous.post('/fetch_api_key', { username: othello.delivery_email, password: PASSWORD }));
      // A notice for another login marks the end: it is the only email since.
      const moderator = s.cast.moderator.user;
      await updateUserRow(s.app.services.db.kysely, moderator.id, { date_joined: now() - 3600 });
      ok(await s.anonymous.post('/fetch_api_key', { username: moderator.delivery_email, password: PASSWORD }));
      await nextMail(moderator.delivery_email, /^New login to /, since);
      assert.deepEqual(inbox.slice(since).map((m) => m.to), [moderator.delivery_email]);
    });
  });
}
