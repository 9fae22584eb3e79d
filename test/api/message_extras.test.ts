import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { createChannel, uniqueName } from './messages_send.fixtures.js';

forEachDatabase('message render and history', (server) => {
  test('POST /messages/render renders as the caller would send, storing nothing', async () => {
    const s = server();
    const res = await s.cast.othello.client.post('/messages/render', { content: '**foo**' });
    assertConforms(res, 'POST', '/messages/render');
    assert.equal(ok(res).rendered, '<p><strong>foo</strong></p>');
    const mention = ok(await s.cast.othello.client.post('/messages/render', { content: `@**${s.cast.hamlet.user.full_name}** :smile:` })).rendered;
    assert.equal(
      mention,
      `<p><span class="user-mention" data-user-id="${s.cast.hamlet.user.id}">@${s.cast.hamlet.user.full_name}</span> <span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span></p>`,
    );
    err(await s.cast.othello.client.post('/messages/render', {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'content' argument");
  });

  test('GET /messages/{id}/history rebuilds every snapshot, oldest first', async () => {
    const s = server();
    const { hamlet, othello, guest } = s.cast;
    const name = uniqueName('History');
    await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const id = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'party at my houz', content: 'Hello!' })).id;
    const fresh = await othello.client.get(`/messages/${id}/history`);
    assertConforms(fresh, 'GET', '/messages/{message_id}/history');
    const [only] = ok(fresh).message_history;
    assert.deepEqual({ ...only, timestamp: 0 }, { topic: 'party at my houz', content: 'Hello!', rendered_content: '<p>Hello!</p>', timestamp: 0, user_id: hamlet.user.id });

    ok(await hamlet.client.patch(`/messages/${id}`, { content: 'Howdy!' }));
    ok(await hamlet.client.patch(`/messages/${id}`, { topic: 'party at my house' }));
    const res = await othello.client.get(`/messages/${id}/history`);
    assertConforms(res, 'GET', '/messages/{message_id}/history');
    const history = ok(res).message_history.map((h: any) => ({ ...h, timestamp: 0 }));
    assert.deepEqual(history, [
      { topic: 'party at my houz', content: 'Hello!', rendered_content: '<p>Hello!</p>', timestamp: 0, user_id: hamlet.user.id },
      {
        topic: 'party at my houz',
        content: 'Howdy!',
        rendered_content: '<p>Howdy!</p>',
        prev_content: 'Hello!',
        prev_rendered_content: '<p>Hello!</p>',
        timestamp: 0,
        user_id: hamlet.user.id,
      },
      { topic: 'party at my house', prev_topic: 'party at my houz', content: 'Howdy!', rendered_content: '<p>Howdy!</p>', timestamp: 0, user_id: hamlet.user.id },
    ]);

    err(await guest.client.get(`/messages/${id}/history`), 400, 'BAD_REQUEST', 'Invalid message(s)');

    ok(await s.cast.owner.client.patch('/realm', { message_edit_history_visibility_policy: 'moves' }));
    const moves = ok(await othello.client.get(`/messages/${id}/history`)).message_history;
    assert.deepEqual(moves.map((h: any) => [h.topic, h.content, 'prev_content' in h]), [
      ['party at my houz', 'Howdy!', false],
      ['party at my house', 'Howdy!', false],
    ]);
    ok(await s.cast.owner.client.patch('/realm', { message_edit_history_visibility_policy: 'none' }));
    err(await othello.client.get(`/messages/${id}/history`), 400, 'BAD_REQUEST', 'Message edit history is disabled in this organization');
    ok(await s.cast.owner.client.patch('/realm', { message_edit_history_visibility_policy: 'all' }));
  });

  test('empty topics are shown by their display name unless allow_empty_topic_name', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const name = uniqueName('Empty');
    await createChannel(s, name, { subscribers: [hamlet.user] });
    const id = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: '', content: 'x' })).id;
    assert.equal(ok(await hamlet.client.get(`/messages/${id}/history`)).message_history[0].topic, 'general chat');
    assert.equal(ok(await hamlet.client.get(`/messages/${id}/history`, { allow_empty_topic_name: true })).message_history[0].topic, '');
  });
});
