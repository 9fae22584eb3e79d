import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import type { ApiClient } from '../helpers/client.js';
import { createChannel, uniqueName } from './messages_send.fixtures.js';

async function register(client: ApiClient, params: Record<string, unknown> = {}): Promise<{ queue_id: string; body: any }> {
  const res = await client.post('/register', params as Record<string, string>);
  const body = ok(res);
  assertConforms(res, 'POST', '/register');
  return { queue_id: body.queue_id, body };
}

async function events(client: ApiClient, queueId: string): Promise<any[]> {
  const res = await client.get('/events', { queue_id: queueId, last_event_id: -1, dont_block: true });
  return ok(res).events;
}

forEachDatabase('messages through real event queues', (server) => {
  test('the sender’s queue gets local_message_id; each queue gets its own flags and content form', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = uniqueName('Live');
    await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const mine = await register(hamlet.client, { event_types: ['message'], apply_markdown: true, client_capabilities: { empty_topic_name: true } });
    const theirs = await register(othello.client, { event_types: ['message'], apply_markdown: false });
    const res = await hamlet.client.post('/messages', {
      type: 'stream',
      to: name,
      topic: '',
      content: `**hi** @**${othello.user.full_name}**`,
      queue_id: mine.queue_id,
      local_id: '42.01',
    });
    const id = ok(res).id;
    const [own] = (await events(hamlet.client, mine.queue_id)).filter((e) => e.type === 'message');
    assert.equal(own.message.id, id);
    assert.equal(own.local_message_id, '42.01');
    assert.deepEqual(own.flags, []);
    assert.equal(own.message.subject, '');
    assert.match(own.message.content, /<strong>hi<\/strong>/);
    const [other] = (await events(othello.client, theirs.queue_id)).filter((e) => e.type === 'message');
    assert.equal(other.local_message_id, undefined);
    assert.deepEqual(other.flags, ['mentioned']);
    assert.equal(other.message.content, `**hi** @**${othello.user.full_name}**`);
    assert.equal(other.message.content_type, 'text/x-markdown');
    assert.equal(other.message.subject, 'general chat');
    assertConforms({ status: 200, headers: new Headers(), body: { result: 'success', msg: '', queue_id: theirs.queue_id, events: [other] } }, 'GET', '/events');
  });

  test('POST /register returns the message state keys', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const id = ok(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'unread for you' })).id;
    const { body } = await register(othello.client, {
      fetch_event_types: ['message', 'update_message_flags', 'starred_messages', 'recent_private_conversations', 'user_topic', 'muted_topics'],
    });
    assert.ok(body.max_message_id >= id);
    assert.ok(body.unread_msgs.pms.some((p: any) => p.other_user_id === hamlet.user.id && p.unread_message_ids.includes(id)));
    assert.deepEqual(body.starred_messages, []);
    assert.equal(body.recent_private_conversations[0].max_message_id, id);
    // Othello follows the topic he was mentioned in (the previous test).
    assert.deepEqual(body.user_topics.map((t: any) => [t.topic_name, t.visibility_policy]), [['general chat', 3]]);
    assert.equal(body.muted_topics, undefined);
  });
});
