import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents } from '../helpers/bus.js';
import { createChannel } from './messages_send.fixtures.js';

const at = (unix: number): string => `<time:${new Date(unix * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00')}>`;

async function lastMessageIn(s: TestServer, streamId: number): Promise<any> {
  const res = ok(
    await s.cast.admin.client.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'channel', operand: streamId }], apply_markdown: false }),
  );
  return res.messages.at(-1);
}

forEachDatabase('POST /messages/{message_id}/report', (server) => {
  let moderation = 0;

  test('without a moderation request channel, reporting is refused', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const id = ok(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'hi' })).id;
    const res = await othello.client.post(`/messages/${id}/report`, { report_type: 'spam' });
    err(res, 400, 'BAD_REQUEST', 'Message reporting is not enabled in this organization.');
    assertConforms(res, 'POST', '/messages/{message_id}/report');
  });

  test('a channel message: the Notification Bot posts the report in the moderators\u2019 channel', async () => {
    const s = server();
    const { hamlet, othello, admin, owner } = s.cast;
    moderation = (await createChannel(s, 'moderation', { inviteOnly: true, subscribers: [admin.user] })).id;
    ok(await owner.client.patch('/realm', { moderation_request_channel_id: moderation }));
    const general = (await createChannel(s, 'general', { subscribers: [hamlet.user, othello.user] })).id;
    const sent = ok(await hamlet.client.post('/messages', { type: 'stream', to: general, topic: 'lunch', content: 'buy my ```stuff```' })).id;
    const date = ok(await hamlet.client.get(`/messages/${sent}`)).message.timestamp;
    const { result: res, events } = await captureEvents(s, () => othello.client.post(`/messages/${sent}/report`, { report_type: 'spam', description: 'ads again' }));
    ok(res);
    assertConforms(res, 'POST', '/messages/{message_id}/report');
    const messageEvent = events.find((e) => e.event.type === 'message')!;
    assert.ok(messageEvent);
    const m = await lastMessageIn(s, moderation);
    assert.equal(m.sender_full_name, 'Notification Bot');
    assert.equal(m.subject, 'King Hamlet moderation');
    assert.equal(
      m.content,
      `@_**Othello, the Moor of Venice|${othello.user.id}** reported a message sent by @_**King Hamlet|${hamlet.user.id}** at ${at(date)}.\n` +
        '```quote\n**Spam**. ads again\n```\n\n' +
        `\`\`\` spoiler Original message at #**general>lunch@${sent}**\nbuy my \`\`\`stuff\`\`\`\n\`\`\``,
    );
  });

  test('direct messages: one-to-one, one\u2019s own, and groups, with a link to the conversation', async () => {
    const s = server();
    const { hamlet, othello, moderator, admin } = s.cast;
    const dm = ok(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'psst' })).id;
    const date = ok(await hamlet.client.get(`/messages/${dm}`)).message.timestamp;
    ok(await othello.client.post(`/messages/${dm}/report`, { report_type: 'other', description: 'odd' }));
    const ids = [hamlet.user.id, othello.user.id].sort((a, b) => a - b).join(',');
    let m = await lastMessageIn(s, moderation);
    assert.equal(
      m.content,
      `@_**Othello, the Moor of Venice|${othello.user.id}** reported a direct message sent by @_**King Hamlet|${hamlet.user.id}** at ${at(date)}.\n` +
        '```quote\n**Other reason**. odd\n```\n\n' +
        `\`\`\` spoiler [Original message](${s.config.externalUrl}/#narrow/dm/${ids}/near/${dm})\npsst\n\`\`\``,
    );
    ok(await hamlet.client.post(`/messages/${dm}/report`, { report_type: 'norms' }));
    m = await lastMessageIn(s, moderation);
    assert.match(m.content, new RegExp(`^@_\\*\\*King Hamlet\\|${hamlet.user.id}\\*\\* reported a direct message sent by @_\\*\\*King Hamlet\\|${hamlet.user.id}\\*\\* to @_\\*\\*Othello, the Moor of Venice\\|${othello.user.id}\\*\\* at `));
    const group = ok(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id, moderator.user.id, admin.user.id], content: 'all' })).id;
    ok(await othello.client.post(`/messages/${group}/report`, { report_type: 'harassment' }));
    m = await lastMessageIn(s, moderation);
    assert.match(m.content, / to @_\*\*Iago\|\d+\*\*, @_\*\*Othello, the Moor of Venice\|\d+\*\*, and @_\*\*Shiva\|\d+\*\* at /);
    assert.match(m.content, /-group\/near\//);
  });

  test('parameters, access and the archived channel', async () => {
    const s = server();
    const { hamlet, othello, guest, admin } = s.cast;
    const dm = ok(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'x' })).id;
    err(await othello.client.post(`/messages/${dm}/report`, {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'report_type' argument");
    err(await othello.client.post(`/messages/${dm}/report`, { report_type: 'rude' }), 400, 'BAD_REQUEST', 'Invalid report_type');
    err(await othello.client.post(`/messages/${dm}/report`, { report_type: 'other' }), 400, 'BAD_REQUEST', 'An explanation is required.');
    err(await othello.client.post(`/messages/${dm}/report`, { report_type: 'spam', description: 'x'.repeat(1001) }), 400, 'BAD_REQUEST');
    err(await guest.client.post(`/messages/${dm}/report`, { report_type: 'spam' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    err(await othello.client.post('/messages/999999/report', { report_type: 'spam' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    ok(await admin.client.delete(`/streams/${moderation}`));
    const { result, events } = await captureEvents(s, () => othello.client.post(`/messages/${dm}/report`, { report_type: 'spam' }));
    err(result, 400, 'BAD_REQUEST', 'Message reporting is not enabled in this organization.');
    assert.equal(events.filter((e) => e.event.type === 'message').length, 0);
    for (const e of events) assertEventConforms(e.event);
  });
});
