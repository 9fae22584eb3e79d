import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents } from '../helpers/bus.js';
import { createChannel, uniqueName } from './messages_send.fixtures.js';

async function policyOf(s: TestServer, userId: number, streamId: number, topic: string): Promise<number | undefined> {
  const row = await s.app.services.db.kysely
    .selectFrom('user_topics')
    .select('visibility_policy')
    .where('user_id', '=', userId)
    .where('stream_id', '=', streamId)
    .where('topic_lc', '=', topic.toLowerCase())
    .executeTakeFirst();
  return row?.visibility_policy;
}

forEachDatabase('topic preferences', (server) => {
  test('POST /user_topics sets each policy, even for topics without messages, with user_topic and muted_topics events', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const name = uniqueName('Prefs');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user] });
    const { result, events } = await captureEvents(s, () => hamlet.client.post('/user_topics', { stream_id: stream.id, topic: 'Quiet', visibility_policy: 1 }));
    ok(result);
    assertConforms(result, 'POST', '/user_topics');
    assert.equal(await policyOf(s, hamlet.user.id, stream.id, 'Quiet'), 1);
    assert.deepEqual(events.map((e) => e.event.type), ['muted_topics', 'user_topic']);
    const [muted, userTopic] = events;
    assert.deepEqual(muted!.users, [hamlet.user.id]);
    const triples = muted!.event.muted_topics as [string, string, number][];
    assert.deepEqual(triples.map(([n, t]) => [n, t]), [[name, 'Quiet']]);
    assert.equal(typeof triples[0]![2], 'number');
    assertEventConforms({ ...muted!.event });
    assert.deepEqual(userTopic!.users, [hamlet.user.id]);
    assert.deepEqual({ ...userTopic!.event, last_updated: 0 }, { type: 'user_topic', stream_id: stream.id, topic_name: 'Quiet', last_updated: 0, visibility_policy: 1 });
    assertEventConforms({ ...userTopic!.event });

    for (const policy of [2, 3]) {
      ok(await hamlet.client.post('/user_topics', { stream_id: stream.id, topic: 'quiet', visibility_policy: policy }));
      assert.equal(await policyOf(s, hamlet.user.id, stream.id, 'quiet'), policy);
    }
    // Setting the current policy again changes nothing and sends nothing.
    const same = await captureEvents(s, () => hamlet.client.post('/user_topics', { stream_id: stream.id, topic: 'QUIET', visibility_policy: 3 }));
    ok(same.result);
    assert.equal(same.events.length, 0);
    const cleared = await captureEvents(s, () => hamlet.client.post('/user_topics', { stream_id: stream.id, topic: 'Quiet', visibility_policy: 0 }));
    ok(cleared.result);
    assert.equal(await policyOf(s, hamlet.user.id, stream.id, 'Quiet'), undefined);
    assert.equal(cleared.events.find((e) => e.event.type === 'user_topic')!.event.visibility_policy, 0);
    // The realm's empty-topic display name stands for the empty topic.
    ok(await hamlet.client.post('/user_topics', { stream_id: stream.id, topic: 'general chat', visibility_policy: 1 }));
    assert.equal(await policyOf(s, hamlet.user.id, stream.id, ''), 1);
  });

  test('POST /user_topics validation and channel access', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = uniqueName('Checks');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user] });
    err(await hamlet.client.post('/user_topics', { stream_id: stream.id, topic: 'x'.repeat(61), visibility_policy: 1 }), 400, 'BAD_REQUEST', 'topic is too long (limit: 60 characters)');
    ok(await hamlet.client.post('/user_topics', { stream_id: stream.id, topic: 'y'.repeat(60), visibility_policy: 1 }));
    err(await hamlet.client.post('/user_topics', { stream_id: stream.id, topic: 't', visibility_policy: 4 }), 400, 'BAD_REQUEST', 'Invalid visibility_policy');
    err(await hamlet.client.post('/user_topics', { stream_id: 999999, topic: 't', visibility_policy: 1 }), 400, 'BAD_REQUEST', 'Invalid channel ID');
    err(await hamlet.client.post('/user_topics', { stream_id: stream.id, visibility_policy: 1 }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'topic' argument");
    const secret = uniqueName('Secret');
    const hidden = await createChannel(s, secret, { inviteOnly: true, subscribers: [hamlet.user] });
    err(await othello.client.post('/user_topics', { stream_id: hidden.id, topic: 't', visibility_policy: 1 }), 400, 'BAD_REQUEST', 'Invalid channel ID');
    // Anyone may clear a preference for an existing channel, accessible or not.
    ok(await othello.client.post('/user_topics', { stream_id: hidden.id, topic: 't', visibility_policy: 0 }));
    err(await othello.client.post('/user_topics', { stream_id: 999999, topic: 't', visibility_policy: 0 }), 400, 'BAD_REQUEST', 'Invalid channel ID');
  });

  test('PATCH /users/me/subscriptions/muted_topics (deprecated): by ID or name, idempotent', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const name = uniqueName('Legacy mute');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user] });
    const res = await hamlet.client.patch('/users/me/subscriptions/muted_topics', { stream_id: stream.id, topic: 'noise', op: 'add' });
    ok(res);
    assertConforms(res, 'PATCH', '/users/me/subscriptions/muted_topics');
    assert.equal(await policyOf(s, hamlet.user.id, stream.id, 'noise'), 1);
    // Muting again succeeds (feature level 169).
    ok(await hamlet.client.patch('/users/me/subscriptions/muted_topics', { stream: name, topic: 'noise', op: 'add' }));
    ok(await hamlet.client.patch('/users/me/subscriptions/muted_topics', { stream: name, topic: 'noise', op: 'remove' }));
    assert.equal(await policyOf(s, hamlet.user.id, stream.id, 'noise'), undefined);
    ok(await hamlet.client.patch('/users/me/subscriptions/muted_topics', { stream_id: stream.id, topic: 'noise', op: 'remove' }));
    // zulip-js sends PATCH parameters in the query string.
    ok(await hamlet.client.request('PATCH', '/users/me/subscriptions/muted_topics', { stream_id: stream.id, topic: 'q', op: 'add' }, 'query'));
    assert.equal(await policyOf(s, hamlet.user.id, stream.id, 'q'), 1);

    err(await hamlet.client.patch('/users/me/subscriptions/muted_topics', { topic: 'x', op: 'add' }), 400, 'BAD_REQUEST', "Missing 'stream_id' argument");
    err(
      await hamlet.client.patch('/users/me/subscriptions/muted_topics', { stream_id: stream.id, stream: name, topic: 'x', op: 'add' }),
      400,
      'BAD_REQUEST',
      'Unsupported parameter combination: stream_id, stream',
    );
    err(await hamlet.client.patch('/users/me/subscriptions/muted_topics', { stream_id: stream.id, topic: 'x', op: 'toggle' }), 400, 'BAD_REQUEST');
    err(await hamlet.client.patch('/users/me/subscriptions/muted_topics', { stream: 'no such channel', topic: 'x', op: 'add' }), 400, 'BAD_REQUEST', "Invalid channel name 'no such channel'");
    err(await hamlet.client.patch('/users/me/subscriptions/muted_topics', { stream: 'no such channel', topic: 'x', op: 'remove' }), 400, 'BAD_REQUEST', 'Topic is not muted');
  });
});
