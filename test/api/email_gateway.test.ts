import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import nodemailer from 'nodemailer';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { basicAuth, fetchRaw } from '../helpers/uploads.js';
import type { ApiClient } from '../helpers/client.js';
import { createChannel, systemGroups } from './messages_send.fixtures.js';
import { doCreateMissedMessageAddress } from '../../src/actions/email_gateway.js';
import { fetchSystemBot } from '../../src/lib/system_bots.js';
import { fetchMessagesByIds } from '../../src/db/repos/messages.js';

const DOMAIN = 'streams.example.com';
const MAX_BYTES = 64 * 1024;

let counter = 0;
const uniqueName = (base: string): string => `${base} ${++counter}${Date.now() % 100000}`;

function transport(s: TestServer) {
  const { port } = s.app.emailGateway!.address();
  return nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
}

/** The SMTP reply code of a refused sendMail. */
async function refusal(p: Promise<unknown>): Promise<number> {
  try {
    await p;
  } catch (e) {
    return (e as { responseCode: number }).responseCode;
  }
  assert.fail('the gateway accepted the mail');
}

async function channelAddress(client: ApiClient, streamId: number, params: Record<string, number> = {}): Promise<string> {
  const res = await client.get(`/streams/${streamId}/email_address`, params);
  assertConforms(res, 'GET', '/streams/{stream_id}/email_address');
  return ok(res).email;
}

async function lastMessage(client: ApiClient, narrow: object[]): Promise<any> {
  const res = ok(await client.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow, apply_markdown: false }));
  return res.messages.at(-1);
}

forEachDatabase(
  'email gateway',
  (server) => {
    test('GET /streams/{id}/email_address: Zulip format, one token per channel, creator and sender', async () => {
      const s = server();
      const { hamlet, othello, bot } = s.cast;
      const stream = await createChannel(s, uniqueName('Email Test'), { subscribers: [hamlet.user] });
      const slug = stream.name.toLowerCase().replaceAll(' ', '-');
      const address = await channelAddress(hamlet.client, stream.id);
      assert.match(address, new RegExp(`^${slug}\\.[0-9a-f]{32}\\.show-sender@streams\\.example\\.com$`));
      assert.equal(await channelAddress(hamlet.client, stream.id), address);
      const gateway = await fetchSystemBot(s.app.services.db.kysely, s.config, s.realm, 'emailGateway');
      assert.equal(await channelAddress(hamlet.client, stream.id, { sender_id: gateway.id }), address);
      const asSelf = await channelAddress(hamlet.client, stream.id, { sender_id: hamlet.user.id });
      const asBot = await channelAddress(hamlet.client, stream.id, { sender_id: bot.user.id });
      const byOthello = await channelAddress(othello.client, stream.id);
      assert.equal(new Set([address, asSelf, asBot, byOthello]).size, 4);

      err(await othello.client.get(`/streams/${stream.id}/email_address`, { sender_id: bot.user.id }), 400, 'BAD_REQUEST', 'Insufficient permission');
      err(await hamlet.client.get(`/streams/${stream.id}/email_address`, { sender_id: othello.user.id }), 400, 'BAD_REQUEST', 'No such bot');
      err(await hamlet.client.get('/streams/999999/email_address'), 400, 'BAD_REQUEST', 'Invalid channel ID');

      // Names that cannot be spelled in ASCII (or lose characters to the slug) become "channel".
      const japanese = await createChannel(s, `日本 ${++counter}`, { subscribers: [hamlet.user] });
      assert.match(await channelAddress(hamlet.client, japanese.id), /^channel\.[0-9a-f]{32}\.show-sender@/);
      const accented = await createChannel(s, `Café ${++counter}`, { subscribers: [hamlet.user] });
      assert.match(await channelAddress(hamlet.client, accented.id), new RegExp(`^cafe-${counter}\\.[0-9a-f]{32}\\.`));
    });

    test('GET /streams/{id}/email_address: only for users who may post, private channels hidden', async () => {
      const s = server();
      const { hamlet, othello, admin } = s.cast;
      const g = await systemGroups(s);
      const announce = await createChannel(s, uniqueName('Announce'), { subscribers: [hamlet.user, admin.user], permissions: { can_send_message_group: g['role:administrators'] } });
      err(await hamlet.client.get(`/streams/${announce.id}/email_address`), 400, 'BAD_REQUEST', 'You do not have permission to post in this channel.');
      assert.match(await channelAddress(admin.client, announce.id), /@streams\.example\.com$/);
      const secret = await createChannel(s, uniqueName('Secret'), { inviteOnly: true, subscribers: [hamlet.user] });
      err(await othello.client.get(`/streams/${secret.id}/email_address`), 400, 'BAD_REQUEST', 'Invalid channel ID');
    });

    test('mail to a channel address is posted by Email Gateway: topic from the subject, quoted reply and footer trimmed', async () => {
      const s = server();
      const { hamlet } = s.cast;
      const stream = await createChannel(s, uniqueName('Reports'), { subscribers: [hamlet.user] });
      const address = await channelAddress(hamlet.client, stream.id);
      const info = await transport(s).sendMail({
        from: 'Alice Example <alice@example.org>',
        to: address,
        subject: 'Re: Quarterly report',
        text: 'Sounds good to me.\n\nOn Mon, Jan 6, 2025 at 10:00 AM, Bob <bob@example.org> wrote:\n> Can you review the numbers?\n> Thanks\n',
      });
      assert.match(info.response, /^250/);
      const message = await lastMessage(hamlet.client, [{ operator: 'channel', operand: stream.id }]);
      const gateway = await fetchSystemBot(s.app.services.db.kysely, s.config, s.realm, 'emailGateway');
      assert.equal(message.sender_id, gateway.id);
      assert.equal(message.subject, 'Quarterly report');
      assert.equal(message.content, 'From: Alice Example <alice@example.org>\nSounds good to me.');
      assert.equal(message.client, 'Internal');

      await transport(s).sendMail({ from: 'carol@example.org', to: address, subject: '', text: 'No subject here.\n\n--\nCarol\nExample Corp\n' });
      const second = await lastMessage(hamlet.client, [{ operator: 'channel', operand: stream.id }]);
      assert.equal(second.subject, 'Email with no subject');
      assert.equal(second.content, 'From: carol@example.org\nNo subject here.');

      // Options in the address: the signature kept, quotes kept; no sender line without show-sender.
      const plain = address.replace('.show-sender@', '.include-footer.include-quotes@');
      await transport(s).sendMail({ from: 'carol@example.org', to: plain, subject: 'Fwd: notes', text: 'Top\n> quoted line\n> another\n> third\n--\nCarol' });
      const third = await lastMessage(hamlet.client, [{ operator: 'channel', operand: stream.id }]);
      assert.equal(third.subject, 'notes');
      assert.equal(third.content, 'Top\n> quoted line\n> another\n> third\n--\nCarol');

      // An HTML-only message is converted to Markdown.
      await transport(s).sendMail({ from: 'dan@example.org', to: plain, subject: 'html', html: '<p>Hello <strong>world</strong></p>' });
      assert.equal((await lastMessage(hamlet.client, [{ operator: 'channel', operand: stream.id }])).content, 'Hello **world**');
      // Both parts: plain text unless the address prefers HTML.
      const both = { from: 'dan@example.org', subject: 'both', text: 'plain *part*', html: '<p>html <em>part</em></p>' };
      await transport(s).sendMail({ ...both, to: plain });
      assert.equal((await lastMessage(hamlet.client, [{ operator: 'channel', operand: stream.id }])).content, 'plain *part*');
      await transport(s).sendMail({ ...both, to: plain.replace('@', '+prefer-html@') });
      assert.equal((await lastMessage(hamlet.client, [{ operator: 'channel', operand: stream.id }])).content, 'html _part_');
    });

    test('Email Gateway posts to a private channel as the creator of its address may, and stops when the creator may not', async () => {
      const s = server();
      const { hamlet, othello } = s.cast;
      const secret = await createChannel(s, uniqueName('Private'), { inviteOnly: true, subscribers: [hamlet.user, othello.user] });
      const address = await channelAddress(othello.client, secret.id);
      await transport(s).sendMail({ from: 'x@example.org', to: address, subject: 'hush', text: 'between us' });
      const message = await lastMessage(hamlet.client, [{ operator: 'channel', operand: secret.id }]);
      assert.equal(message.subject, 'hush');
      assert.equal(message.content, 'From: x@example.org\nbetween us');
      ok(await othello.client.delete('/users/me/subscriptions', { subscriptions: [secret.name] }));
      assert.equal(await refusal(transport(s).sendMail({ from: 'x@example.org', to: address, subject: 'hush', text: 'again' })), 550);
    });

    test('attachments are uploaded as the sender and linked', async () => {
      const s = server();
      const { hamlet } = s.cast;
      const stream = await createChannel(s, uniqueName('Files'), { subscribers: [hamlet.user] });
      const address = await channelAddress(hamlet.client, stream.id, { sender_id: hamlet.user.id });
      await transport(s).sendMail({
        from: 'King Hamlet <hamlet@example.com>',
        to: address,
        subject: 'The [draft] notes',
        text: 'See attached.',
        attachments: [{ filename: 'notes [v2].txt', content: 'To be, or not to be' }],
      });
      const message = await lastMessage(hamlet.client, [{ operator: 'channel', operand: stream.id }]);
      assert.equal(message.sender_id, hamlet.user.id);
      assert.equal(message.subject, 'The [draft] notes');
      const m = /^From: King Hamlet <hamlet@example\.com>\nSee attached\.\n\n\[notes v2\.txt\]\((\/user_uploads\/[^)]+)\)$/.exec(message.content);
      assert.ok(m, message.content);
      const file = await fetchRaw(`${s.url}${m[1]}`, basicAuth(hamlet.client));
      assert.equal(file.status, 200);
      assert.equal(file.data.toString(), 'To be, or not to be');
      const withFiles = ok(await hamlet.client.get('/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [{ operator: 'channel', operand: stream.id }, { operator: 'has', operand: 'attachment' }] }));
      assert.deepEqual(withFiles.messages.map((x: { id: number }) => x.id), [message.id]);
    });

    test('unknown addresses are refused at RCPT TO, oversized mail at DATA, malformed mail without harm', async () => {
      const s = server();
      const { hamlet } = s.cast;
      const stream = await createChannel(s, uniqueName('Limits'), { subscribers: [hamlet.user] });
      const address = await channelAddress(hamlet.client, stream.id);
      const send = (to: string, extra: object) => transport(s).sendMail({ from: 'x@example.org', to, subject: 's', ...extra });
      assert.equal(await refusal(send(`nope.${'0'.repeat(32)}@${DOMAIN}`, { text: 'x' })), 550);
      assert.equal(await refusal(send(`mm${'0'.repeat(32)}@${DOMAIN}`, { text: 'x' })), 550);
      assert.equal(await refusal(send(address.replace(DOMAIN, 'elsewhere.example.net'), { text: 'x' })), 550);
      assert.equal(await refusal(send(address, { text: 'y'.repeat(MAX_BYTES + 1000) })), 552);

      const before = await lastMessage(hamlet.client, [{ operator: 'channel', operand: stream.id }]);
      const garbage = Buffer.concat([
        Buffer.from('Subject: broken\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n@@@ not base64 @@@\r\n'),
        Buffer.from([0xff, 0xfe, 0x00, 0x80]),
      ]);
      assert.equal(await refusal(transport(s).sendMail({ envelope: { from: 'x@example.org', to: [address] }, raw: garbage })), 550);
      // A raw session that drops the connection in the middle of DATA.
      const { port } = s.app.emailGateway!.address();
      await new Promise<void>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        socket.on('data', () => undefined);
        socket.on('error', () => resolve());
        socket.on('close', () => resolve());
        socket.write(`EHLO test\r\nMAIL FROM:<x@example.org>\r\nRCPT TO:<${address}>\r\nDATA\r\nSubject: cut\r\nContent-Type: multipart/mixed; boundary=`);
        setTimeout(() => socket.destroy(), 200);
      });
      assert.deepEqual(await lastMessage(hamlet.client, [{ operator: 'channel', operand: stream.id }]), before);
      // Still serving both protocols.
      assert.equal((await s.anonymous.get('/server_settings')).status, 200);
      await send(address, { text: 'still here' });
      assert.equal((await lastMessage(hamlet.client, [{ operator: 'channel', operand: stream.id }])).content, 'From: x@example.org\nstill here');
    });

    test('missed-message reply addresses post into the DM or topic, and expire', async () => {
      const s = server();
      const { hamlet, othello, admin } = s.cast;
      const services = s.app.services;
      const dmId = ok(await othello.client.post('/messages', { type: 'private', to: [hamlet.user.id], content: 'Are you there?' })).id;
      const [dm] = await fetchMessagesByIds(services.db.kysely, s.realm.id, [dmId]);
      const replyTo = await doCreateMissedMessageAddress(services, hamlet.user, dm!);
      assert.match(replyTo, /^mm[0-9a-f]{32}@streams\.example\.com$/);
      await transport(s).sendMail({
        from: 'hamlet@example.com',
        to: replyTo,
        subject: 'Re: New message from Othello',
        text: 'I am here.\n\nOn Tue, Feb 4, 2025 at 9:00 AM, Othello <noreply@example.com> wrote:\n> Are you there?\n',
      });
      const reply = await lastMessage(othello.client, [{ operator: 'dm', operand: [hamlet.user.id] }]);
      assert.equal(reply.sender_id, hamlet.user.id);
      assert.equal(reply.content, 'I am here.');

      const group = ok(await othello.client.post('/messages', { type: 'private', to: [hamlet.user.id, admin.user.id], content: 'All of us' })).id;
      const [groupDm] = await fetchMessagesByIds(services.db.kysely, s.realm.id, [group]);
      await transport(s).sendMail({ from: 'hamlet@example.com', to: await doCreateMissedMessageAddress(services, hamlet.user, groupDm!), subject: 'Re', text: 'To all' });
      const groupReply = await lastMessage(admin.client, [{ operator: 'dm', operand: [hamlet.user.id, othello.user.id] }]);
      assert.equal(groupReply.content, 'To all');
      assert.equal(groupReply.sender_id, hamlet.user.id);

      const stream = await createChannel(s, uniqueName('Plans'), { subscribers: [hamlet.user, othello.user] });
      const channelMessageId = ok(await othello.client.post('/messages', { type: 'stream', to: stream.id, topic: 'castle', content: '@**King Hamlet** thoughts?' })).id;
      const [channelMessage] = await fetchMessagesByIds(services.db.kysely, s.realm.id, [channelMessageId]);
      const topicReplyTo = await doCreateMissedMessageAddress(services, hamlet.user, channelMessage!);
      await transport(s).sendMail({ from: 'hamlet@example.com', to: topicReplyTo, subject: 'Re: #Plans > castle', text: 'Ramparts at dawn.' });
      const topicReply = await lastMessage(othello.client, [{ operator: 'channel', operand: stream.id }]);
      assert.equal(topicReply.subject, 'castle');
      assert.equal(topicReply.sender_id, hamlet.user.id);
      assert.equal(topicReply.content, 'Ramparts at dawn.');

      // Past its expiry the address is refused at RCPT TO.
      await services.db.kysely
        .updateTable('missed_message_email_addresses')
        .set({ timestamp: Math.floor(Date.now() / 1000) - s.config.emailGateway.missedMessageAddressExpirySeconds - 1 })
        .where('email_token', '=', topicReplyTo.split('@')[0]!)
        .execute();
      assert.equal(await refusal(transport(s).sendMail({ from: 'hamlet@example.com', to: topicReplyTo, subject: 'Re', text: 'Too late' })), 550);
      assert.equal((await lastMessage(othello.client, [{ operator: 'channel', operand: stream.id }])).id, topicReply.id);
    });
  },
  { emailGateway: { domain: DOMAIN, port: 0, host: '127.0.0.1', maxMessageBytes: MAX_BYTES, missedMessageAddressExpirySeconds: 3600 } },
);

forEachDatabase('email gateway off (the default)', (server) => {
  test('no SMTP listener, and channel addresses are empty without a gateway domain', async () => {
    const s = server();
    assert.equal(s.app.emailGateway, null);
    const stream = await createChannel(s, uniqueName('Quiet'), { subscribers: [s.cast.hamlet.user] });
    assert.equal(await channelAddress(s.cast.hamlet.client, stream.id), '');
  });
});
