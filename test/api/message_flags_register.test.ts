import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type CastMember, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { fetchMessagesState } from '../../src/events/state/messages.js';
import type { RegisterOptions } from '../../src/events/state/types.js';
import { createChannel, sendDirect, sendStream, uniqueName } from './messages_send.fixtures.js';

/** The messages area's POST /register keys for a user, as the register endpoint assembles them. */
async function registerState(s: TestServer, who: CastMember, fetchEventTypes: string[] | null = null, capabilities: Record<string, boolean> = {}) {
  const options: RegisterOptions = {
    applyMarkdown: true,
    clientGravatar: false,
    includeSubscribers: false,
    slimPresence: false,
    allPublicStreams: false,
    narrow: [],
    clientCapabilities: capabilities,
    userListIncomplete: false,
  };
  const want = (type: string) => fetchEventTypes === null || fetchEventTypes.includes(type);
  const realm = (await s.app.services.db.kysely.selectFrom('realms').selectAll().where('id', '=', s.realm.id).executeTakeFirstOrThrow());
  const state = await fetchMessagesState({ services: s.app.services, realm, user: who.user, options, want });
  // Validate against POST /register's documented response.
  assertConforms({ status: 200, headers: new Headers(), body: { result: 'success', msg: '', queue_id: 'q', last_event_id: -1, ...state } }, 'POST', '/register');
  return state as Record<string, any>;
}

forEachDatabase('messages in POST /register', (server) => {
  test('unread_msgs groups unread messages by conversation and counts what is not muted', async () => {
    const s = server();
    const { hamlet, othello, admin, moderator } = s.cast;
    const fresh = await registerState(s, moderator);
    assert.deepEqual(fresh.unread_msgs, { count: 0, pms: [], streams: [], huddles: [], mentions: [], old_unreads_missing: false });
    assert.equal(fresh.max_message_id, -1);
    assert.deepEqual(fresh.starred_messages, []);
    assert.deepEqual(fresh.recent_private_conversations, []);

    const name = uniqueName('Inbox');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const quiet = uniqueName('Quiet');
    const muted = await createChannel(s, quiet, { subscribers: [hamlet.user, othello.user] });
    await s.app.services.db.kysely.updateTable('subscriptions').set({ is_muted: 1 }).where('user_id', '=', othello.user.id).where('stream_id', '=', muted.id).execute();
    const s1 = await sendStream(hamlet.client, name, 'b-topic', 'x');
    const s2 = await sendStream(hamlet.client, name, 'a-topic', `@**${othello.user.full_name}**`);
    const s3 = await sendStream(hamlet.client, name, 'b-topic', 'y');
    const m1 = await sendStream(hamlet.client, quiet, 'hush', 'muted channel');
    const m2 = await sendStream(hamlet.client, quiet, 'hush', '@**all** muted wildcard');
    const d1 = await sendDirect(hamlet.client, [othello.user.id], 'dm');
    const g1 = await sendDirect(admin.client, [othello.user.id, hamlet.user.id], 'group');
    ok(await othello.client.post('/user_topics', { stream_id: stream.id, topic: 'a-topic', visibility_policy: 1 }));

    const state = await registerState(s, othello);
    const unread = state.unread_msgs;
    assert.deepEqual(unread.pms, [{ other_user_id: hamlet.user.id, sender_id: hamlet.user.id, unread_message_ids: [d1] }]);
    const huddle = [othello.user.id, hamlet.user.id, admin.user.id].sort((a, b) => a - b).join(',');
    assert.deepEqual(unread.huddles, [{ user_ids_string: huddle, unread_message_ids: [g1] }]);
    const byChannel = [
      { stream_id: stream.id, topic: 'a-topic', unread_message_ids: [s2] },
      { stream_id: stream.id, topic: 'b-topic', unread_message_ids: [s1, s3] },
      { stream_id: muted.id, topic: 'hush', unread_message_ids: [m1, m2] },
    ];
    assert.deepEqual(unread.streams, byChannel);
    // A direct mention counts even in a muted topic; a wildcard in a muted channel does not.
    assert.deepEqual(unread.mentions, [s2]);
    // Counted: b-topic (2) and the two DMs; not the muted topic, not the muted channel.
    assert.equal(unread.count, 4);
    assert.equal(unread.old_unreads_missing, false);
    assert.equal(state.max_message_id, g1);
    assert.deepEqual(state.recent_private_conversations, [
      { max_message_id: g1, user_ids: [hamlet.user.id, admin.user.id].sort((a, b) => a - b) },
      { max_message_id: d1, user_ids: [hamlet.user.id] },
    ]);
    assert.deepEqual(state.user_topics.map((t: any) => [t.stream_id, t.topic_name, t.visibility_policy]), [[stream.id, 'a-topic', 1]]);
    assert.deepEqual(state.muted_topics.map((t: any[]) => t.slice(0, 2)), [[name, 'a-topic']]);
    assert.equal(state.muted_topics[0].length, 3);

    ok(await othello.client.post('/messages/flags', { messages: [s1], op: 'add', flag: 'starred' }));
    ok(await othello.client.post('/messages/flags', { messages: [s1, s3, d1], op: 'add', flag: 'read' }));
    const after = await registerState(s, othello);
    assert.deepEqual(after.starred_messages, [s1]);
    assert.deepEqual(after.unread_msgs.pms, []);
    assert.equal(after.unread_msgs.count, 1);
  });

  test('which keys are present follows fetch_event_types; the empty topic follows the client capability', async () => {
    const s = server();
    const { moderator: hamlet } = s.cast;
    const name = uniqueName('Keys');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user] });
    await sendStream(hamlet.client, name, '', 'general');
    ok(await hamlet.client.post('/user_topics', { stream_id: stream.id, topic: '', visibility_policy: 1 }));
    const legacy = await registerState(s, hamlet, ['message', 'update_message_flags', 'muted_topics']);
    assert.deepEqual(Object.keys(legacy).sort(), ['max_message_id', 'muted_topics', 'unread_msgs']);
    assert.equal(legacy.unread_msgs.streams.find((u: any) => u.stream_id === stream.id).topic, 'general chat');
    assert.deepEqual(legacy.muted_topics.map((t: any[]) => t[1]), ['general chat']);
    // Clients asking for user_topic do not get the legacy muted_topics.
    const modern = await registerState(s, hamlet, ['user_topic', 'muted_topics'], { empty_topic_name: true });
    assert.deepEqual(Object.keys(modern), ['user_topics']);
    assert.equal(modern.user_topics[0].topic_name, '');
    const everything = await registerState(s, hamlet, null, { empty_topic_name: true });
    for (const key of ['max_message_id', 'unread_msgs', 'starred_messages', 'recent_private_conversations', 'user_topics', 'muted_topics']) {
      assert.ok(key in everything, key);
    }
    assert.equal(everything.unread_msgs.streams.find((u: any) => u.stream_id === stream.id).topic, '');
  });
});
