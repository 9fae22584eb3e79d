import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { assertNarrowError, createChannel, sendDirect, sendToChannel, unique } from './messages_fetch.fixtures.js';

forEachDatabase('GET /messages/matches_narrow', (server) => {
  test('only matching IDs, each with the rendered content and escaped topic', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = unique('Matches');
    await createChannel(s, hamlet, name, { members: [othello.user] });
    const a = await sendToChannel(hamlet.client, name, 'Q&A <stuff>', 'first message');
    const b = await sendToChannel(hamlet.client, name, 'other', 'second message');
    const dm = await sendDirect(hamlet.client, [othello.user.id], 'private');
    const db = s.app.services.db.kysely;
    const rendered = async (id: number) =>
      (await db.selectFrom('messages').select('rendered_content').where('id', '=', id).executeTakeFirstOrThrow()).rendered_content;

    const res = await othello.client.get('/messages/matches_narrow', {
      msg_ids: [a, b, dm, 99999999],
      narrow: [{ operator: 'channel', operand: name }, { operator: 'topic', operand: 'q&a <STUFF>' }],
    });
    const body = ok(res);
    assertConforms(res, 'GET', '/messages/matches_narrow');
    assert.deepEqual(body.messages, { [String(a)]: { match_content: await rendered(a), match_subject: 'Q&amp;A &lt;stuff&gt;' } });

    const dms = ok(await othello.client.get('/messages/matches_narrow', { msg_ids: [a, b, dm], narrow: [['is', 'dm']] }));
    assert.deepEqual(Object.keys(dms.messages), [String(dm)]);
    assert.deepEqual(dms.messages[String(dm)], { match_content: await rendered(dm), match_subject: '' });

    const none = ok(await othello.client.get('/messages/matches_narrow', { msg_ids: [], narrow: [] }));
    assert.deepEqual(none.messages, {});
    const all = ok(await othello.client.get('/messages/matches_narrow', { msg_ids: [b, a], narrow: [] }));
    assert.deepEqual(Object.keys(all.messages).sort(), [String(a), String(b)].sort());
  });

  test('search highlights in match_content and match_subject', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = unique('Highlights');
    await createChannel(s, hamlet, name, { members: [othello.user] });
    const a = await sendToChannel(hamlet.client, name, 'Walking tour', 'We walked and walked');
    const b = await sendToChannel(hamlet.client, name, 'indoors', 'nothing to see');
    const res = await othello.client.get('/messages/matches_narrow', { msg_ids: [a, b], narrow: [{ operator: 'search', operand: 'walk' }] });
    const body = ok(res);
    assertConforms(res, 'GET', '/messages/matches_narrow');
    assert.deepEqual(Object.keys(body.messages), [String(a)]);
    const row = await s.app.services.db.kysely.selectFrom('messages').select('rendered_content').where('id', '=', a).executeTakeFirstOrThrow();
    assert.equal(body.messages[String(a)].match_content, row.rendered_content.replaceAll('walked', '<span class="highlight">walked</span>'));
    assert.equal(body.messages[String(a)].match_subject, '<span class="highlight">Walking</span> tour');
  });

  test('inaccessible messages never match', async () => {
    const s = server();
    const { hamlet, othello, moderator, guest } = s.cast;
    const secret = unique('Secret');
    const secretId = await createChannel(s, hamlet, secret, { inviteOnly: true, members: [othello.user] });
    const open = unique('Open');
    await createChannel(s, hamlet, open);
    const p = await sendToChannel(hamlet.client, secret, 'plans', 'the secret plans');
    const pub = await sendToChannel(hamlet.client, open, 'news', 'public news');
    const dm = await sendDirect(hamlet.client, [othello.user.id], 'secret whisper');
    for (const outsider of [moderator, guest]) {
      for (const narrow of [[], [['search', 'secret']], [{ operator: 'channel', operand: secretId }], [['is', 'dm']]]) {
        const body = ok(await outsider.client.get('/messages/matches_narrow', { msg_ids: [p, dm], narrow }));
        assert.deepEqual(body.messages, {}, `${outsider.user.email} ${JSON.stringify(narrow)}`);
      }
    }
    // As in Zulip, only messages the user received count: shared history is not matched.
    const body = ok(await moderator.client.get('/messages/matches_narrow', { msg_ids: [pub], narrow: [['channel', open]] }));
    assert.deepEqual(body.messages, {});
    const mine = ok(await othello.client.get('/messages/matches_narrow', { msg_ids: [p, dm], narrow: [['search', 'secret']] }));
    assert.deepEqual(Object.keys(mine.messages).sort(), [String(p), String(dm)].sort());
  });

  test('errors: missing and malformed parameters, bad narrows', async () => {
    const { othello } = server().cast;
    err(await othello.client.get('/messages/matches_narrow', { narrow: [] }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'msg_ids' argument");
    err(await othello.client.get('/messages/matches_narrow', { msg_ids: [1] }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'narrow' argument");
    err(await othello.client.get('/messages/matches_narrow', { msg_ids: 'x', narrow: [] }), 400, 'BAD_REQUEST', 'Argument "msg_ids" is not valid JSON.');
    err(await othello.client.get('/messages/matches_narrow', { msg_ids: ['a'], narrow: [] }), 400, 'BAD_REQUEST', 'msg_ids[0] is not an integer');
    assertNarrowError(await othello.client.get('/messages/matches_narrow', { msg_ids: [1], narrow: [['foo', 'bar']] }), 'unknown operator foo');
    assertNarrowError(await othello.client.get('/messages/matches_narrow', { msg_ids: [1], narrow: [['channel', 'nope']] }), 'unknown channel nope');
  });
});
