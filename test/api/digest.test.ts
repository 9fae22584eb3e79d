import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loopbackSmtp } from '../helpers/smtp.js';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { loadConfig } from '../../src/config.js';
import { now } from '../../src/db/index.js';
import { fetchUserById } from '../../src/db/repos/users.js';
import { sendDueDigests, zulipWeekday } from '../../src/lib/digest.js';
import { createMailer } from '../../src/lib/email.js';
import { userSettings } from '../../src/lib/user_settings.js';
import { DigestWorker } from '../../src/workers/digests.js';

/**
 * Digest emails end to end: an organization with digests on for today, conversations sent
 * through the API, and the emails read by a real SMTP server on loopback.
 */

const { url: smtpUrl, inbox } = await loopbackSmtp();
const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent' });
const mailsTo = (email: string) => inbox.filter((m) => m.to === email).map((m) => m.mail);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

forEachDatabase(
  'digest emails',
  (server) => {
    let s: TestServer;

    test('on the digest day, each inactive user gets one digest of hot conversations and new channels, however many run it at once', async () => {
      s = server();
      inbox.length = 0;
      const { owner, hamlet, othello, moderator } = s.cast;
      const services = s.app.services;
      // Off for the organization: nothing.
      assert.equal(await sendDueDigests(services, createMailer(s.config, services.log), now()), 0);
      ok(await owner.client.patch('/realm', { digest_emails_enabled: true, digest_weekday: zulipWeekday(now()) }));
      ok(await othello.client.patch('/settings', { enable_digest_emails: false }));
      ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'digest-news' }]), principals: JSON.stringify([hamlet.user.id, moderator.user.id, othello.user.id]) }));
      const send = async (who: typeof hamlet, topic: string, content: string) => ok(await who.client.post('/messages', { type: 'stream', to: 'digest-news', topic, content }));
      await send(hamlet, 'launch', 'When do we launch?');
      await send(moderator, 'launch', 'Friday');
      await send(hamlet, 'launch', 'Good');
      await send(moderator, 'launch', 'I will tell marketing');
      await send(hamlet, 'launch', 'Thanks');
      await send(hamlet, 'misc', 'Lunch?');

      // Two workers at once (two processes): each user's digest is sent by one of them.
      const at = now();
      const [a, b] = await Promise.all([sendDueDigests(services, createMailer(s.config, services.log), at), sendDueDigests(services, createMailer(s.config, services.log), at)]);
      assert.ok(a + b > 0);
      await sleep(500);
      assert.equal(inbox.length, a + b);
      const recipients = inbox.map((m) => m.to);
      assert.equal(new Set(recipients).size, recipients.length, `one digest each: ${recipients.join(', ')}`);
      assert.equal(mailsTo(othello.user.delivery_email).length, 0, 'digests turned off by the user');

      const [mail] = mailsTo(hamlet.user.delivery_email);
      assert.ok(mail, 'hamlet gets a digest');
      assert.equal(mail.subject, `Zulip digest for ${s.realm.name}`);
      const text = mail.text!;
      assert.match(text, /#digest-news > launch\n\nKing Hamlet: When do we launch\?\nShiva: Friday\n\+ 3 more messages by King Hamlet and Shiva\./);
      assert.match(text, /#digest-news > misc\n\nKing Hamlet: Lunch\?/);
      assert.match(text, /\*\* New channels \*\*\n {4}.*digest-news/);
      assert.match(mail.html as string, /<a href="[^"]+\/#narrow\/channel\/\d+-digest-news\/topic\/launch"/);
      // Someone not subscribed hears of the new channel only.
      const [ownerMail] = mailsTo(owner.user.delivery_email);
      assert.ok(ownerMail);
      assert.doesNotMatch(ownerMail.text!, /launch/);
      assert.match(ownerMail.text!, /digest-news/);

      // Run again the same day: nobody gets a second one.
      assert.equal(await sendDueDigests(services, createMailer(s.config, services.log), now()), 0);

      // The unsubscribe link turns digests off.
      const line = mail.headerLines.find((h) => h.key === 'list-unsubscribe')!;
      const link = /<([^>]+)>/.exec(line.line)![1]!;
      assert.match(link, /\/accounts\/unsubscribe\/digest\//);
      const res = await fetch(link, { method: 'POST' });
      assert.equal(res.status, 200);
      assert.equal(userSettings((await fetchUserById(services.db.kysely, s.realm.id, hamlet.user.id))!).enable_digest_emails, false);
    });

    test('the background worker sends them on its own, and not to someone active in the last five days', async () => {
      const { moderator, admin } = s.cast;
      const services = s.app.services;
      inbox.length = 0;
      await services.db.kysely.deleteFrom('digest_emails_sent').execute();
      ok(await admin.client.post('/users/me/presence', { status: 'active' }));
      const worker = new DigestWorker(services, 200);
      worker.start();
      try {
        const deadline = Date.now() + 8000;
        while (mailsTo(moderator.user.delivery_email).length === 0 && Date.now() < deadline) await sleep(50);
        await sleep(600);
      } finally {
        await worker.stop();
      }
      assert.equal(mailsTo(moderator.user.delivery_email).length, 1);
      assert.equal(mailsTo(admin.user.delivery_email).length, 0);
    });
  },
  { smtpUrl, digests: { ...base.digests, enabled: false } },
);
