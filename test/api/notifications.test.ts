import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ParsedMail } from 'mailparser';
import { loopbackSmtp } from '../helpers/smtp.js';
import { forEachDatabase, type CastMember, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { loadConfig } from '../../src/config.js';
import { fetchUserById } from '../../src/db/repos/users.js';
import { userSettings } from '../../src/lib/user_settings.js';
import type { PushNotification } from '../../src/lib/push/sender.js';

/**
 * Notifications end to end: messages sent through the API, the notification worker of the
 * server deciding as Zulip does, push notifications handed to the configured sender and
 * missed-message emails read by a real SMTP server on loopback.
 */

const { url: smtpUrl, inbox } = await loopbackSmtp();
const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent' });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, check: () => boolean, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const mailsTo = (email: string) => inbox.filter((m) => m.to === email).map((m) => m.mail);

/** The URL of an email's List-Unsubscribe header. */
function unsubscribeLink(mail: ParsedMail): string {
  const line = mail.headerLines.find((h) => h.key === 'list-unsubscribe');
  assert.ok(line, 'no List-Unsubscribe header');
  return /<([^>]+)>/.exec(line.line)![1]!;
}

async function dm(from: CastMember, to: CastMember, content: string): Promise<number> {
  return ok(await from.client.post('/messages', { type: 'private', to: JSON.stringify([to.user.id]), content })).id as number;
}

forEachDatabase(
  'notifications',
  (server) => {
    const pushes: PushNotification[] = [];
    const pushesFor = (userId: number) => pushes.filter((p) => p.userId === userId);
    let s: TestServer;

    test('setup: a push sender that records, short batching periods', async () => {
      s = server();
      // The same addresses serve each database's run.
      inbox.length = 0;
      s.app.services.push = { send: async (n) => void pushes.push(n) };
      for (const m of [s.cast.othello, s.cast.admin, s.cast.moderator]) {
        ok(await m.client.patch('/settings', { email_notifications_batching_period_seconds: 2 }));
        ok(await m.client.post('/users/me/android_gcm_reg_id', { token: `phone-of-${m.user.id}` }));
      }
    });

    test('a direct message to someone away: a push at once, one email after the batching period with what arrived meanwhile', async () => {
      const { hamlet, othello } = s.cast;
      const first = await dm(hamlet, othello, 'first **news**');
      const second = await dm(hamlet, othello, 'second');
      await waitFor('two pushes', () => pushesFor(othello.user.id).length >= 2);
      const [p1, p2] = pushesFor(othello.user.id);
      assert.deepEqual([p1!.payload.zulip_message_id, p2!.payload.zulip_message_id], [first, second]);
      assert.deepEqual(p1!.apns.alert, { title: 'King Hamlet', subtitle: '', body: 'first **news**' });
      assert.equal(p1!.payload.recipient_type, 'private');
      assert.equal(p1!.payload.sender_id, hamlet.user.id);
      assert.deepEqual(p1!.devices, [{ kind: 'fcm', token: `phone-of-${othello.user.id}`, appId: null }]);
      assert.equal(mailsTo(othello.user.delivery_email).length, 0, 'the email waits for the batching period');

      await waitFor('the email', () => mailsTo(othello.user.delivery_email).length >= 1);
      await sleep(1500);
      const mails = mailsTo(othello.user.delivery_email);
      assert.equal(mails.length, 1, 'one email for both messages');
      const mail = mails[0]!;
      assert.equal(mail.subject, 'DMs with King Hamlet');
      assert.match(mail.text!, /first \*\*news\*\*/);
      assert.match(mail.text!, /second/);
      assert.match(mail.html as string, /<p>first <strong>news<\/strong><\/p>/);
      assert.match(mail.html as string, /King Hamlet/);
      assert.ok((mail.text ?? '').includes(`/#narrow/dm/${hamlet.user.id}-dm/near/${second}`), mail.text);
      // Zulip's footer gives no reason for a direct message.
      assert.doesNotMatch(mail.text!, /You are receiving this/);
      assert.equal(mail.replyTo?.value[0]?.address, 'noreply@localhost');
      assert.match(unsubscribeLink(mail), /^http:\/\/localhost:\d+\/accounts\/unsubscribe\/missed_messages\/[\w.-]+$/);
      const db = s.app.services.db.kysely;
      assert.deepEqual(await db.selectFrom('notification_outbox').selectAll().execute(), []);
      assert.deepEqual(await db.selectFrom('notification_jobs').selectAll().execute(), []);
    });

    test('a message read before the batching period ends is not emailed', async () => {
      const { hamlet, othello } = s.cast;
      const before = mailsTo(othello.user.delivery_email).length;
      const id = await dm(hamlet, othello, 'read me soon');
      await waitFor('the push', () => pushesFor(othello.user.id).some((p) => p.payload.zulip_message_id === id));
      ok(await othello.client.post('/messages/flags', { messages: JSON.stringify([id]), op: 'add', flag: 'read' }));
      await sleep(3500);
      assert.equal(mailsTo(othello.user.delivery_email).length, before);
      assert.deepEqual(await s.app.services.db.kysely.selectFrom('notification_outbox').selectAll().execute(), []);
    });

    test('someone present (an event queue, active presence) gets a push only with online push on, and no email', async () => {
      const { hamlet, admin } = s.cast;
      ok(await admin.client.post('/register', {}));
      ok(await admin.client.post('/users/me/presence', { status: 'active' }));
      const id = await dm(hamlet, admin, 'while you are here');
      await waitFor('the push', () => pushesFor(admin.user.id).length === 1);
      assert.equal(pushesFor(admin.user.id)[0]!.payload.zulip_message_id, id);
      ok(await admin.client.patch('/settings', { enable_online_push_notifications: false }));
      await dm(hamlet, admin, 'again');
      await sleep(3000);
      assert.equal(pushesFor(admin.user.id).length, 1);
      assert.equal(mailsTo(admin.user.delivery_email).length, 0);
    });

    test('channel messages: a mention notifies, a plain message does not; a muted sender never does', async () => {
      const { hamlet, moderator } = s.cast;
      ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'notified' }]), principals: JSON.stringify([hamlet.user.id, moderator.user.id]) }));
      ok(await hamlet.client.post('/messages', { type: 'stream', to: 'notified', topic: 'plans', content: 'nothing for anyone' }));
      const mention = ok(await hamlet.client.post('/messages', { type: 'stream', to: 'notified', topic: 'plans', content: '@**Shiva** have a look' })).id as number;
      await waitFor('the email', () => mailsTo(moderator.user.delivery_email).length === 1);
      const pushed = pushesFor(moderator.user.id);
      assert.deepEqual(pushed.map((p) => [p.payload.zulip_message_id, (p.apns.alert as { subtitle: string }).subtitle, p.payload.stream, p.payload.topic]), [[mention, 'King Hamlet mentioned you:', 'notified', 'plans']]);
      const mail = mailsTo(moderator.user.delivery_email)[0]!;
      assert.equal(mail.subject, '#notified > plans');
      assert.match(mail.text!, /You are receiving this because you were personally mentioned\./);
      assert.doesNotMatch(mail.text!, /nothing for anyone/);

      // Muting marks the sender's messages read, which takes the mention's notification back.
      ok(await moderator.client.post(`/users/me/muted_users/${hamlet.user.id}`));
      await waitFor('the remove', () => pushesFor(moderator.user.id).length === 2);
      assert.deepEqual([pushesFor(moderator.user.id)[1]!.payload.event, pushesFor(moderator.user.id)[1]!.payload.zulip_message_ids], ['remove', String(mention)]);
      await dm(hamlet, moderator, 'muted');
      await sleep(3000);
      assert.equal(pushesFor(moderator.user.id).length, 2);
      assert.equal(mailsTo(moderator.user.delivery_email).length, 1);
    });

    test('email wording as Zulip\'s: a group mention names the group, a resolved topic is [resolved], the organization name ends the subject', async () => {
      const { hamlet, othello } = s.cast;
      ok(await hamlet.client.post('/user_groups/create', { name: 'support', description: 'Helpers', members: JSON.stringify([hamlet.user.id, othello.user.id]) }));
      ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'notified' }]), principals: JSON.stringify([othello.user.id]) }));
      ok(await othello.client.patch('/settings', { realm_name_in_email_notifications_policy: 2 }));
      const before = mailsTo(othello.user.delivery_email).length;
      ok(await hamlet.client.post('/messages', { type: 'stream', to: 'notified', topic: '\u2714 launch', content: '@*support* please check' }));
      await waitFor('the email', () => mailsTo(othello.user.delivery_email).length === before + 1);
      const mail = mailsTo(othello.user.delivery_email)[before]!;
      assert.equal(mail.subject, `[resolved] #notified > launch [${s.realm.name}]`);
      assert.match(mail.text!, /You are receiving this because @support was mentioned\./);
      assert.match(mail.html as string, /You are receiving this because @support was mentioned\./);
      // The push names the group too (Zulip's mentioned_user_group_* and APNs subtitle).
      const push = pushesFor(othello.user.id).at(-1)!;
      assert.deepEqual([push.payload.mentioned_user_group_name, push.payload.topic], ['support', '\u2714 launch']);
      assert.equal(typeof push.payload.mentioned_user_group_id, 'number');
      assert.equal((push.apns.alert as { subtitle: string }).subtitle, 'King Hamlet mentioned @support:');
      ok(await othello.client.patch('/settings', { realm_name_in_email_notifications_policy: 1 }));
    });

    test('the unsubscribe link of an email turns missed-message emails off', async () => {
      const { hamlet, othello } = s.cast;
      const link = unsubscribeLink(mailsTo(othello.user.delivery_email)[0]!);
      const res = await fetch(`${s.url}${new URL(link).pathname}`);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /no longer receive missed message emails/);
      const user = (await fetchUserById(s.app.services.db.kysely, s.realm.id, othello.user.id))!;
      assert.equal(userSettings(user).enable_offline_email_notifications, false);
      const bad = await fetch(`${s.url}${new URL(link).pathname}x`);
      assert.equal(bad.status, 400);
      const before = mailsTo(othello.user.delivery_email).length;
      await dm(hamlet, othello, 'no email now');
      await sleep(3000);
      assert.equal(mailsTo(othello.user.delivery_email).length, before);
    });
  },
  { smtpUrl, notifications: { ...base.notifications, enabled: true, intervalMs: 500 } },
);
