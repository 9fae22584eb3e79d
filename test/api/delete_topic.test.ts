import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents } from '../helpers/bus.js';
import { createChannel, sendStream, uniqueName } from './messages_send.fixtures.js';

async function topicMessageIds(s: TestServer, streamId: number, topic: string): Promise<number[]> {
  const rows = await s.app.services.db.kysely
    .selectFrom('messages')
    .select('id')
    .where('stream_id', '=', streamId)
    .where('topic_lc', '=', topic.toLowerCase())
    .orderBy('id')
    .execute();
  return rows.map((r) => r.id);
}

async function firstMessageId(s: TestServer, streamId: number): Promise<number | null> {
  const row = await s.app.services.db.kysely.selectFrom('streams').select('first_message_id').where('id', '=', streamId).executeTakeFirstOrThrow();
  return row.first_message_id;
}

forEachDatabase('POST /streams/{stream_id}/delete_topic', (server) => {
  test('administrators only: UNAUTHORIZED_PRINCIPAL (HTTP 400) for everyone else', async () => {
    const s = server();
    const { hamlet, moderator } = s.cast;
    const name = uniqueName('Guarded');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user] });
    await sendStream(hamlet.client, name, 'keep', 'x');
    for (const member of [hamlet, moderator]) {
      const res = await member.client.post(`/streams/${stream.id}/delete_topic`, { topic_name: 'keep' });
      err(res, 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    }
    // The role check comes before parameter parsing, as with Zulip's require_realm_admin.
    err(await hamlet.client.post(`/streams/${stream.id}/delete_topic`), 400, 'UNAUTHORIZED_PRINCIPAL');
    assert.equal((await topicMessageIds(s, stream.id, 'keep')).length, 1);
    err(await s.cast.admin.client.post('/streams/999999/delete_topic', { topic_name: 'keep' }), 400, 'BAD_REQUEST', 'Invalid channel ID');
    err(await s.cast.admin.client.post(`/streams/${stream.id}/delete_topic`), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'topic_name' argument");
  });

  test('deletes the topic, announces it, recomputes first_message_id and clears topic preferences', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const name = uniqueName('Doomed');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const doomed = [await sendStream(hamlet.client, name, 'Doomed', 'a'), await sendStream(othello.client, name, 'doomed', 'b')];
    const kept = await sendStream(hamlet.client, name, 'kept', 'c');
    await s.app.services.db.kysely.insertInto('reactions').values({ message_id: doomed[0]!, user_id: othello.user.id, emoji_name: 'smile', emoji_code: '1f642', reaction_type: 'unicode_emoji' }).execute();
    ok(await othello.client.post('/user_topics', { stream_id: stream.id, topic: 'doomed', visibility_policy: 1 }));
    assert.equal(await firstMessageId(s, stream.id), doomed[0]);

    const { result, events } = await captureEvents(s, () => admin.client.post(`/streams/${stream.id}/delete_topic`, { topic_name: 'DOOMED' }));
    const body = ok(result);
    assert.equal(body.complete, true);
    assertConforms(result, 'POST', '/streams/{stream_id}/delete_topic');
    assert.deepEqual(await topicMessageIds(s, stream.id, 'doomed'), []);
    assert.deepEqual(await topicMessageIds(s, stream.id, 'kept'), [kept]);
    const left = await s.app.services.db.kysely.selectFrom('user_messages').select('message_id').where('message_id', 'in', doomed).execute();
    assert.equal(left.length, 0);
    assert.equal(await firstMessageId(s, stream.id), kept);

    const deletion = events.find((e) => e.event.type === 'delete_message')!;
    assert.deepEqual(deletion.event, { type: 'delete_message', message_ids: doomed, message_type: 'stream', stream_id: stream.id, topic: 'doomed' });
    assert.deepEqual(deletion.users, [hamlet.user.id, othello.user.id].sort((a, b) => a - b));
    assertEventConforms({ ...deletion.event });
    const update = events.find((e) => e.event.type === 'stream')!;
    assert.deepEqual(update.event, { type: 'stream', op: 'update', stream_id: stream.id, name, property: 'first_message_id', value: kept });
    assert.ok(update.users.includes(othello.user.id));
    assertEventConforms({ ...update.event });
    // Othello muted the topic; Hamlet follows it since he started it.
    const cleared = events.filter((e) => e.event.type === 'user_topic');
    assert.deepEqual(cleared.map((e) => e.users[0]).sort((a, b) => Number(a) - Number(b)), [hamlet.user.id, othello.user.id].sort((a, b) => a - b));
    for (const e of cleared) assert.equal(e.event.visibility_policy, 0);
    const prefs = await s.app.services.db.kysely.selectFrom('user_topics').selectAll().where('stream_id', '=', stream.id).where('topic_lc', '=', 'doomed').execute();
    assert.equal(prefs.length, 0);

    // A topic with no messages: nothing to do.
    assert.equal(ok(await admin.client.post(`/streams/${stream.id}/delete_topic`, { topic_name: 'never existed' })).complete, true);
  });

  test('the empty topic is named by the realm’s display name; private channels delete only what the admin can see', async () => {
    const s = server();
    const { hamlet, admin } = s.cast;
    const name = uniqueName('General');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user] });
    await sendStream(hamlet.client, name, '', 'x');
    assert.equal(ok(await admin.client.post(`/streams/${stream.id}/delete_topic`, { topic_name: 'general chat' })).complete, true);
    assert.deepEqual(await topicMessageIds(s, stream.id, ''), []);

    const secret = uniqueName('Protected');
    const hidden = await createChannel(s, secret, { inviteOnly: true, historyPublic: false, subscribers: [hamlet.user] });
    await sendStream(hamlet.client, secret, 't', 'before the admin');
    err(await admin.client.post(`/streams/${hidden.id}/delete_topic`, { topic_name: 't' }), 400, 'BAD_REQUEST', 'Invalid channel ID');
  });
});

forEachDatabase(
  'POST /streams/{stream_id}/delete_topic in batches',
  (server) => {
    test('a spent time budget answers complete: false after a batch, newest first; repeating finishes', async () => {
      const s = server();
      const { hamlet, admin } = s.cast;
      const name = uniqueName('Batches');
      const stream = await createChannel(s, name, { subscribers: [hamlet.user] });
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) ids.push(await sendStream(hamlet.client, name, 'long', `m${i}`));
      const first = await captureEvents(s, () => admin.client.post(`/streams/${stream.id}/delete_topic`, { topic_name: 'long' }));
      assert.equal(ok(first.result).complete, false);
      assertConforms(first.result, 'POST', '/streams/{stream_id}/delete_topic');
      assert.deepEqual(await topicMessageIds(s, stream.id, 'long'), ids.slice(0, 3));
      assert.deepEqual(first.events.find((e) => e.event.type === 'delete_message')!.event.message_ids, ids.slice(3));
      assert.equal(ok(await admin.client.post(`/streams/${stream.id}/delete_topic`, { topic_name: 'long' })).complete, false);
      assert.deepEqual(await topicMessageIds(s, stream.id, 'long'), ids.slice(0, 1));
      assert.equal(await firstMessageId(s, stream.id), ids[0]);
      const last = await captureEvents(s, () => admin.client.post(`/streams/${stream.id}/delete_topic`, { topic_name: 'long' }));
      assert.equal(ok(last.result).complete, true);
      assert.deepEqual(await topicMessageIds(s, stream.id, 'long'), []);
      assert.equal(await firstMessageId(s, stream.id), null);
      assert.deepEqual(last.events.find((e) => e.event.type === 'stream')!.event.value, null);
    });
  },
  { deleteTopic: { batchSize: 2, timeBudgetMs: 0 } },
);
