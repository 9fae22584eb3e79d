import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { createChannel, sendStream, subscribe, uniqueName } from './messages_send.fixtures.js';

forEachDatabase('GET /users/me/{stream_id}/topics', (server) => {
  test('topics newest first, one entry per topic whatever its case, spelled as in its newest message', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = uniqueName('Topics');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user] });
    await sendStream(hamlet.client, name, 'apples', '1');
    await sendStream(hamlet.client, name, 'Pears', '2');
    const applesMax = await sendStream(hamlet.client, name, 'Apples', '3');
    const general = await sendStream(hamlet.client, name, '', '4');
    const res = await othello.client.get(`/users/me/${stream.id}/topics`);
    const body = ok(res);
    assertConforms(res, 'GET', '/users/me/{stream_id}/topics');
    assert.deepEqual(body.topics.map((t: { name: string }) => t.name), ['general chat', 'Apples', 'Pears']);
    assert.equal(body.topics[0].max_id, general);
    assert.equal(body.topics[1].max_id, applesMax);
    const raw = ok(await othello.client.get(`/users/me/${stream.id}/topics`, { allow_empty_topic_name: true }));
    assert.equal(raw.topics[0].name, '');
    const empty = uniqueName('Empty');
    const none = await createChannel(s, empty);
    assert.deepEqual(ok(await othello.client.get(`/users/me/${none.id}/topics`)).topics, []);
  });

  test('protected history shows only topics of received messages; inaccessible channels fail', async () => {
    const s = server();
    const { hamlet, othello, guest } = s.cast;
    const name = uniqueName('Protected');
    const stream = await createChannel(s, name, { inviteOnly: true, historyPublic: false, subscribers: [hamlet.user] });
    await sendStream(hamlet.client, name, 'before othello', 'x');
    err(await othello.client.get(`/users/me/${stream.id}/topics`), 400, 'BAD_REQUEST', 'Invalid channel ID');
    await subscribe(s, stream, [othello.user]);
    await sendStream(hamlet.client, name, 'after othello', 'x');
    assert.deepEqual(ok(await othello.client.get(`/users/me/${stream.id}/topics`)).topics.map((t: { name: string }) => t.name), ['after othello']);
    assert.deepEqual(ok(await hamlet.client.get(`/users/me/${stream.id}/topics`)).topics.map((t: { name: string }) => t.name), ['after othello', 'before othello']);

    const open = uniqueName('Public');
    const publicStream = await createChannel(s, open, { subscribers: [hamlet.user] });
    await sendStream(hamlet.client, open, 'hello', 'x');
    err(await guest.client.get(`/users/me/${publicStream.id}/topics`), 400, 'BAD_REQUEST', 'Invalid channel ID');
    err(await othello.client.get('/users/me/999999/topics'), 400, 'BAD_REQUEST', 'Invalid channel ID');
  });
});
