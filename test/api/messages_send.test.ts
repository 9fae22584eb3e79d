import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertMatchesComponent } from '../helpers/openapi.js';
import { captureEvents } from '../helpers/bus.js';
import type { EventEnvelope } from '../../src/events/bus.js';
import type { User } from '../../src/db/tables.js';
import { doCreateUser } from '../../src/actions/users.js';
import { FLAG_BITS } from '../../src/lib/message_flags.js';
import { ROLE_MEMBER } from '../../src/lib/roles.js';
import {
  createChannel,
  sendDirect,
  sendStream,
  setRealmSettings,
  setUserSettings,
  subscribe,
  systemGroups,
  uniqueName,
  userMessageFlags,
} from './messages_send.fixtures.js';

const messageEvents = (events: EventEnvelope[]) => events.filter((e) => e.event.type === 'message');
const messageRow = (s: TestServer, id: number) =>
  s.app.services.db.kysely.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

forEachDatabase('POST /messages', (server) => {
  /** Ten members beyond the cast, so channels can pass Zulip's wildcard-mention threshold of 15. */
  let crowd: User[] = [];
  before(async () => {
    const s = server();
    crowd = [];
    for (let i = 0; i < 10; i++) {
      crowd.push(
        await doCreateUser(s.app.services, s.realm, {
          email: `crowd${i}@example.com`,
          fullName: `Crowd Member ${i}`,
          password: null,
          role: ROLE_MEMBER,
          actingUser: null,
        }),
      );
    }
  });

  test('a channel message by name: response, stored row, recipients and the message event', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const name = uniqueName('Verona');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const { result: res, events } = await captureEvents(s, () =>
      hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'castle', content: 'Hello **world**' }),
    );
    const body = ok(res);
    assertConforms(res, 'POST', '/messages');
    assert.equal(typeof body.id, 'number');
    assert.equal(body.automatic_new_visibility_policy, 3);
    assert.match(body.message_url, new RegExp(`/#narrow/channel/${stream.id}-Verona-\\d+/topic/castle/near/${body.id}$`));
    assert.equal(body.message_link, `[#${name} > castle @ 💬](${body.message_url})`);

    const row = await messageRow(s, body.id);
    assert.equal(row.type, 'stream');
    assert.equal(row.stream_id, stream.id);
    assert.equal(row.topic, 'castle');
    assert.equal(row.content, 'Hello **world**');
    assert.equal(row.sending_client, 'ZulipPython');
    // API clients' own messages start unread (Zulip's default_read_by_sender heuristic).
    assert.equal(await userMessageFlags(s, hamlet.user.id, body.id), 0);
    assert.equal(await userMessageFlags(s, othello.user.id, body.id), 0);
    assert.equal(await userMessageFlags(s, admin.user.id, body.id), undefined);

    const [env] = messageEvents(events);
    assert.ok(env);
    assert.equal(messageEvents(events).length, 1);
    assert.deepEqual(env.users, [
      { id: hamlet.user.id, flags: [] },
      { id: othello.user.id, flags: [] },
    ]);
    const message = env.event.message as Record<string, unknown>;
    assertMatchesComponent(message, 'MessagesBase');
    assert.equal(message.id, body.id);
    assert.equal(message.display_recipient, name);
    assert.equal(message.stream_id, stream.id);
    assert.equal(message.subject, 'castle');
    assert.equal(message.sender_id, hamlet.user.id);
    assert.equal(message.sender_email, hamlet.user.email);
    assert.equal(message.sender_full_name, 'King Hamlet');
    assert.equal(message.type, 'stream');
    assert.equal(message.content_type, 'text/html');
    assert.equal(message.client, 'ZulipPython');
    assert.equal(message.is_me_message, false);
    assert.deepEqual(message.reactions, []);
    assert.deepEqual(message.submessages, []);
    assert.deepEqual(message.topic_links, []);
    assert.equal(env.message?.rawContent, 'Hello **world**');
    assert.equal(env.message?.publicStream, true);
    assert.equal(env.message?.senderQueueId, undefined);

    const topicEvents = events.filter((e) => e.event.type === 'user_topic');
    assert.equal(topicEvents.length, 1);
    assert.deepEqual(topicEvents[0]!.users, [hamlet.user.id]);
    assert.equal(topicEvents[0]!.event.visibility_policy, 3);
    assert.equal(topicEvents[0]!.event.topic_name, 'castle');
    assert.equal(topicEvents[0]!.event.stream_id, stream.id);

    const first = await s.app.services.db.kysely.selectFrom('streams').select('first_message_id').where('id', '=', stream.id).executeTakeFirstOrThrow();
    assert.equal(first.first_message_id, body.id);
    // A second message keeps the channel's first message and does not change the policy again.
    const again = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'castle', content: 'again' }));
    assert.equal(again.automatic_new_visibility_policy, undefined);
    const still = await s.app.services.db.kysely.selectFrom('streams').select('first_message_id').where('id', '=', stream.id).executeTakeFirstOrThrow();
    assert.equal(still.first_message_id, body.id);
  });

  test('every form of `to` for channels: ID, JSON ID, one-element list, JSON string; type channel; subject', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const name = uniqueName('Forms');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user] });
    const sends: Record<string, unknown>[] = [
      { type: 'stream', to: stream.id, topic: 'a', content: 'by id' },
      { type: 'channel', to: String(stream.id), topic: 'a', content: 'by JSON id' },
      { type: 'stream', to: JSON.stringify([name]), subject: 'a', content: 'zulip-mobile list' },
      { type: 'stream', to: JSON.stringify(name), subject: 'a', content: 'JSON string' },
      { type: 'channel', to: name.toUpperCase(), topic: 'a', content: 'case-insensitive name' },
    ];
    for (const params of sends) {
      const body = ok(await hamlet.client.post('/messages', params as Record<string, string>));
      const row = await messageRow(s, body.id);
      assert.equal(row.stream_id, stream.id, JSON.stringify(params));
      assert.equal(row.topic, 'a');
    }
    // zulip-js posts multipart bodies.
    const multi = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'a', content: 'multipart' }, 'multipart'));
    assert.equal((await messageRow(s, multi.id)).content, 'multipart');
    err(await hamlet.client.post('/messages', { type: 'stream', to: JSON.stringify([name, name]), topic: 'a', content: 'x' }), 400, 'BAD_REQUEST', 'Expected exactly one channel');
    err(await hamlet.client.post('/messages', { type: 'stream', to: 'true', topic: 'a', content: 'x' }), 400, 'BAD_REQUEST', 'Invalid data type for channel');
    err(await hamlet.client.post('/messages', { type: 'stream', topic: 'a', content: 'x' }), 400, 'BAD_REQUEST', 'Missing channel');
    err(await hamlet.client.post('/messages', { type: 'stream', to: ' ', topic: 'a', content: 'x' }), 400, 'BAD_REQUEST', "Channel name can't be empty.");
    err(await hamlet.client.post('/messages', { type: 'stream', to: 'n'.repeat(61), topic: 'a', content: 'x' }), 400, 'BAD_REQUEST', 'Channel name too long (limit: 60 characters).');
    err(await hamlet.client.post('/messages', { type: 'stream', to: 'a\u0001b', topic: 'a', content: 'x' }), 400, 'BAD_REQUEST', 'Invalid character in channel name, at position 2.');
    err(await hamlet.client.post('/messages', { type: 'stream', to: name, content: 'x' }), 400, 'BAD_REQUEST', 'Missing topic');
    err(await hamlet.client.post('/messages', { type: 'streams', to: name, topic: 'a', content: 'x' }), 400, 'BAD_REQUEST', 'Invalid type');
    err(await hamlet.client.post('/messages', { to: name, topic: 'a', content: 'x' }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'type' argument");
  });

  test('unknown channels answer STREAM_DOES_NOT_EXIST with the name or the ID', async () => {
    const s = server();
    const byName = await s.cast.hamlet.client.post('/messages', { type: 'stream', to: 'no such channel', topic: 't', content: 'x' });
    const body = err(byName, 400, 'STREAM_DOES_NOT_EXIST', "Channel 'no such channel' does not exist");
    assert.equal(body.stream, 'no such channel');
    assertConforms(byName, 'POST', '/messages');
    const byId = await s.cast.hamlet.client.post('/messages', { type: 'stream', to: 987654, topic: 't', content: 'x' });
    assert.equal(err(byId, 400, 'STREAM_DOES_NOT_EXIST', "Channel with ID '987654' does not exist").stream_id, 987654);
  });

  test('direct messages: IDs, JSON emails, comma-separated emails; the sender is ignored unless alone', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const { result: res, events } = await captureEvents(s, () => hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'hi' }));
    const id = ok(res).id as number;
    assertConforms(res, 'POST', '/messages');
    assert.equal(ok(res).automatic_new_visibility_policy, undefined);
    const row = await messageRow(s, id);
    assert.equal(row.type, 'private');
    assert.equal(row.stream_id, null);
    assert.equal(row.topic, '');
    const dmKey = [hamlet.user.id, othello.user.id].sort((a, b) => a - b).join(',');
    assert.equal(row.dm_key, dmKey);
    assert.equal(await userMessageFlags(s, othello.user.id, id), FLAG_BITS.is_private);
    assert.equal(await userMessageFlags(s, hamlet.user.id, id), FLAG_BITS.is_private);
    const [env] = messageEvents(events);
    const message = env!.event.message as Record<string, unknown>;
    assertMatchesComponent(message, 'MessagesBase');
    assert.equal(message.type, 'private');
    assert.equal(message.subject, '');
    assert.equal(message.stream_id, undefined);
    const participants = [hamlet.user, othello.user].sort((a, b) => a.id - b.id);
    assert.deepEqual(
      message.display_recipient,
      participants.map((u) => ({ id: u.id, email: u.email, full_name: u.full_name, is_mirror_dummy: false })),
    );
    assert.equal(env!.message?.publicStream, undefined);
    // Both directions of a conversation share a recipient_id.
    const reply = ok(await othello.client.post('/messages', { type: 'private', to: JSON.stringify([hamlet.user.email]), content: 'yo' })).id;
    const { events: e2 } = await captureEvents(s, () => othello.client.post('/messages', { type: 'private', to: [hamlet.user.id], content: 'again' }));
    assert.equal((messageEvents(e2)[0]!.event.message as { recipient_id: number }).recipient_id, message.recipient_id);
    assert.equal((await messageRow(s, reply)).dm_key, dmKey);

    // zulip-mobile's comma-separated emails, with the sender listed too: a group conversation.
    const group = ok(await hamlet.client.post('/messages', { type: 'private', to: `${othello.user.email},${admin.user.email}, ${hamlet.user.email}`, content: 'group' })).id;
    assert.equal((await messageRow(s, group)).dm_key, [hamlet.user.id, othello.user.id, admin.user.id].sort((a, b) => a - b).join(','));
    // Only the sender: a message to oneself.
    const self = ok(await hamlet.client.post('/messages', { type: 'direct', to: [hamlet.user.id], content: 'note to self' })).id;
    assert.equal((await messageRow(s, self)).dm_key, String(hamlet.user.id));
    const selfRecipients = await s.app.services.db.kysely.selectFrom('user_messages').select('user_id').where('message_id', '=', self).execute();
    assert.deepEqual(selfRecipients.map((r) => r.user_id), [hamlet.user.id]);
  });

  test('direct message recipient errors', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const bad = await hamlet.client.post('/messages', { type: 'direct', to: JSON.stringify(['nobody@example.com']), content: 'x' });
    err(bad, 400, 'BAD_REQUEST', "Invalid email 'nobody@example.com'");
    assertMatchesComponent(bad.body, 'CodedError');
    err(await hamlet.client.post('/messages', { type: 'direct', to: 'nobody@example.com', content: 'x' }), 400, 'BAD_REQUEST', "Invalid email 'nobody@example.com'");
    err(await hamlet.client.post('/messages', { type: 'direct', to: [999999], content: 'x' }), 400, 'BAD_REQUEST', 'Invalid user ID 999999');
    err(await hamlet.client.post('/messages', { type: 'direct', to: [], content: 'x' }), 400, 'BAD_REQUEST', 'Message must have recipients');
    err(await hamlet.client.post('/messages', { type: 'direct', content: 'x' }), 400, 'BAD_REQUEST', 'Message must have recipients');
    err(
      await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id, othello.user.email], content: 'x' }),
      400,
      'BAD_REQUEST',
      'Recipient lists may contain emails or user IDs, but not both.',
    );
    err(await hamlet.client.post('/messages', { type: 'direct', to: '{"a":1}', content: 'x' }), 400, 'BAD_REQUEST', 'Invalid data type for recipients');
  });

  test('topics: (no topic) and the display name mean the empty topic; long topics are truncated; bad characters refused', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const name = uniqueName('Topics');
    await createChannel(s, name, { subscribers: [hamlet.user] });
    for (const topic of ['(no topic)', 'general chat', '  ']) {
      const id = await sendStream(hamlet.client, name, topic, 'x');
      assert.equal((await messageRow(s, id)).topic, '', topic);
    }
    const long = 'x'.repeat(61);
    const id = await sendStream(hamlet.client, name, long, 'x');
    assert.equal((await messageRow(s, id)).topic, `${'x'.repeat(57)}...`);
    const exact = 'é'.repeat(60);
    assert.equal((await messageRow(s, await sendStream(hamlet.client, name, exact, 'x'))).topic, exact);
    err(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'a\u0000b', content: 'x' }), 400, 'BAD_REQUEST', 'Invalid character in topic, at position 2!');
    err(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'a\nb', content: 'x' }), 400, 'BAD_REQUEST', 'Invalid character in topic, at position 2!');
  });

  test('mandatory topics: the realm and channel topics policies', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const name = uniqueName('Mandatory');
    await createChannel(s, name, { subscribers: [hamlet.user] });
    await setRealmSettings(s, { topics_policy: 'disable_empty_topic' });
    try {
      for (const topic of ['', '(no topic)', 'general chat']) {
        err(
          await hamlet.client.post('/messages', { type: 'stream', to: name, topic, content: 'x' }),
          400,
          'BAD_REQUEST',
          'Sending messages to the general chat topic is not allowed in this channel.',
        );
      }
      await sendStream(hamlet.client, name, 'real topic', 'x');
      // A channel may override the organization's default.
      const open = uniqueName('Open');
      await createChannel(s, open, { subscribers: [hamlet.user], topicsPolicy: 'allow_empty_topic' });
      await sendStream(hamlet.client, open, '', 'x');
    } finally {
      await setRealmSettings(s, { topics_policy: 'allow_empty_topic' });
    }
    const only = uniqueName('Only');
    await createChannel(s, only, { subscribers: [hamlet.user], topicsPolicy: 'empty_topic_only' });
    err(await hamlet.client.post('/messages', { type: 'stream', to: only, topic: 'x', content: 'x' }), 400, 'TOPICS_NOT_ALLOWED', 'Only the general chat topic is allowed in this channel.');
    await sendStream(hamlet.client, only, '', 'x');
  });

  test('content: never empty, no NUL, trailing whitespace dropped, truncated at 10000 characters', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    err(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: '  \n ' }), 400, 'BAD_REQUEST', 'Message must not be empty');
    err(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'a\u0000' }), 400, 'BAD_REQUEST', 'Message must not contain null bytes');
    err(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id] }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'content' argument");
    const trimmed = await sendDirect(hamlet.client, [othello.user.id], '  keep leading   \n\n');
    assert.equal((await messageRow(s, trimmed)).content, '  keep leading');
    const exact = await sendDirect(hamlet.client, [othello.user.id], 'y'.repeat(10000));
    assert.equal((await messageRow(s, exact)).content.length, 10000);
    const long = await sendDirect(hamlet.client, [othello.user.id], 'z'.repeat(10001));
    const content = (await messageRow(s, long)).content;
    assert.equal(content.length, 10000);
    assert.ok(content.endsWith('\n[message truncated]'));
  });

  test('queue_id and local_id come together and reach the event', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    err(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'x', queue_id: 'q1' }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'local_id' argument");
    err(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'x', local_id: '1.01' }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'queue_id' argument");
    const { events } = await captureEvents(s, () =>
      hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'x', queue_id: 'q1', local_id: '1.01' }),
    );
    const [env] = messageEvents(events);
    assert.equal(env!.message?.senderQueueId, 'q1');
    assert.equal(env!.message?.localId, '1.01');
  });

  test('read_by_sender: explicit, or by the client-name heuristic', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const mobile = hamlet.client.withHeaders({ 'User-Agent': 'ZulipMobile/27.1 (Android 13)' });
    const fromMobile = await sendDirect(mobile, [othello.user.id], 'from the app');
    assert.equal(await userMessageFlags(s, hamlet.user.id, fromMobile), FLAG_BITS.is_private | FLAG_BITS.read);
    assert.equal(await userMessageFlags(s, othello.user.id, fromMobile), FLAG_BITS.is_private);
    assert.equal((await messageRow(s, fromMobile)).sending_client, 'ZulipMobile');
    const terminal = hamlet.client.withHeaders({ 'User-Agent': 'ZulipTerminal/0.7.0 Linux' });
    assert.equal(await userMessageFlags(s, hamlet.user.id, await sendDirect(terminal, [othello.user.id], 't')), FLAG_BITS.is_private | FLAG_BITS.read);
    const explicit = ok(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'x', read_by_sender: true })).id;
    assert.equal(await userMessageFlags(s, hamlet.user.id, explicit), FLAG_BITS.is_private | FLAG_BITS.read);
    const notRead = ok(await mobile.post('/messages', { type: 'direct', to: [othello.user.id], content: 'x', read_by_sender: false })).id;
    assert.equal(await userMessageFlags(s, hamlet.user.id, notRead), FLAG_BITS.is_private);
  });

  test('mentions set flags; silent mentions do not; group mentions reach members', async () => {
    const s = server();
    const { hamlet, othello, admin, moderator } = s.cast;
    const name = uniqueName('Mentions');
    await createChannel(s, name, { subscribers: [hamlet.user, othello.user, admin.user, moderator.user] });
    const { result, events } = await captureEvents(s, () =>
      hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'm', content: `hey @**${othello.user.full_name}** and @_**Iago**` }),
    );
    const id = ok(result).id as number;
    assert.equal(await userMessageFlags(s, othello.user.id, id), FLAG_BITS.mentioned);
    assert.equal(await userMessageFlags(s, admin.user.id, id), 0);
    const [env] = messageEvents(events);
    assert.deepEqual(env!.users.find((u) => typeof u !== 'number' && u.id === othello.user.id), { id: othello.user.id, flags: ['mentioned'] });
    // Mentioned users follow the topic (automatically_follow_topics_where_mentioned defaults on).
    const follow = events.filter((e) => e.event.type === 'user_topic' && e.users[0] === othello.user.id);
    assert.equal(follow.length, 1);
    assert.equal(follow[0]!.event.visibility_policy, 3);
    const byId = await sendStream(hamlet.client, name, 'm', `@**Shiva|${moderator.user.id}**`);
    assert.equal(await userMessageFlags(s, moderator.user.id, byId), FLAG_BITS.mentioned);
    const g = await systemGroups(s);
    const moderators = await sendStream(admin.client, name, 'm', '@*role:moderators*');
    assert.equal(await userMessageFlags(s, moderator.user.id, moderators), 0, 'system groups are not mentionable');
    assert.ok(g['role:moderators']);
  });

  test('channel wildcard mentions: flags, and Zulip’s threshold of 15 subscribers', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const small = uniqueName('Small');
    await createChannel(s, small, { subscribers: [hamlet.user, othello.user] });
    const { result, events } = await captureEvents(s, () => hamlet.client.post('/messages', { type: 'stream', to: small, topic: 'w', content: 'hi @**all**' }));
    const id = ok(result).id as number;
    assert.equal(await userMessageFlags(s, othello.user.id, id), FLAG_BITS.stream_wildcard_mentioned);
    assert.deepEqual(
      messageEvents(events)[0]!.users.find((u) => typeof u !== 'number' && u.id === othello.user.id),
      { id: othello.user.id, flags: ['stream_wildcard_mentioned', 'wildcard_mentioned'] },
    );
    const big = uniqueName('Big');
    await createChannel(s, big, { subscribers: [hamlet.user, othello.user, admin.user, ...crowd.slice(0, 9)] });
    await subscribe(s, (await s.app.services.db.kysely.selectFrom('streams').selectAll().where('name', '=', big).executeTakeFirstOrThrow()), [s.cast.moderator.user, s.cast.owner.user, s.cast.bot.user]);
    // 15 subscribers: still allowed.
    await sendStream(hamlet.client, big, 'w', '@**everyone** ok');
    await subscribe(s, (await s.app.services.db.kysely.selectFrom('streams').selectAll().where('name', '=', big).executeTakeFirstOrThrow()), [crowd[9]!]);
    const refused = await hamlet.client.post('/messages', { type: 'stream', to: big, topic: 'w', content: '@**channel** too many' });
    err(refused, 400, 'STREAM_WILDCARD_MENTION_NOT_ALLOWED', 'You do not have permission to use channel wildcard mentions in this channel.');
    assertMatchesComponent(refused.body, 'CodedError');
    // Administrators are in can_mention_many_users_group by default; silent wildcards are fine for anyone.
    await sendStream(admin.client, big, 'w', '@**stream** admins may');
    await sendStream(hamlet.client, big, 'w', '@_**all** silently');
    const g = await systemGroups(s);
    await setRealmSettings(s, { can_mention_many_users_group: g['role:members'] });
    try {
      await sendStream(hamlet.client, big, 'w', '@**all** members may now');
    } finally {
      await setRealmSettings(s, { can_mention_many_users_group: g['role:administrators'] });
    }
  });

  test('topic wildcard mentions: only participants are flagged; more than 15 participants need permission', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const name = uniqueName('TopicWild');
    await createChannel(s, name, { subscribers: [hamlet.user, othello.user, admin.user, ...crowd] });
    await sendStream(othello.client, name, 'party', 'I was here');
    const id = await sendStream(hamlet.client, name, 'party', '@**topic** listen');
    assert.equal(await userMessageFlags(s, othello.user.id, id), FLAG_BITS.topic_wildcard_mentioned);
    assert.equal(await userMessageFlags(s, admin.user.id, id), 0);
    for (const u of crowd) await sendStream(s.clientFor(u), name, 'party', 'me too');
    // Participants now: othello, hamlet and ten crowd members; then admin, moderator and owner make 15.
    await sendStream(admin.client, name, 'party', 'admin');
    const stream = await s.app.services.db.kysely.selectFrom('streams').selectAll().where('name', '=', name).executeTakeFirstOrThrow();
    await subscribe(s, stream, [s.cast.moderator.user, s.cast.owner.user, s.cast.bot.user]);
    await sendStream(s.cast.moderator.client, name, 'party', 'mod');
    await sendStream(s.cast.owner.client, name, 'party', 'owner');
    await sendStream(hamlet.client, name, 'party', '@**topic** still fine with 15');
    await sendStream(s.cast.bot.client, name, 'party', 'the sixteenth');
    err(
      await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'party', content: '@**topic** now too many' }),
      400,
      'TOPIC_WILDCARD_MENTION_NOT_ALLOWED',
      'You do not have permission to use topic wildcard mentions in this topic.',
    );
    await sendStream(admin.client, name, 'party', '@**topic** admins may');
  });

  test('alert words flag recipients whose words appear', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    await s.app.services.db.kysely.insertInto('alert_words').values({ user_id: othello.user.id, word: 'Dagger' }).execute();
    const hit = await sendDirect(hamlet.client, [othello.user.id], 'Is this a dagger which I see?');
    assert.equal(await userMessageFlags(s, othello.user.id, hit), FLAG_BITS.is_private | FLAG_BITS.has_alert_word);
    const miss = await sendDirect(hamlet.client, [othello.user.id], 'daggers are not whole words');
    assert.equal(await userMessageFlags(s, othello.user.id, miss), FLAG_BITS.is_private);
  });

  test('channel posting permissions: can_send_message_group, guests, private channels', async () => {
    const s = server();
    const { hamlet, guest, admin, othello } = s.cast;
    const g = await systemGroups(s);
    const announce = uniqueName('Announce');
    await createChannel(s, announce, { subscribers: [hamlet.user, admin.user], permissions: { can_send_message_group: g['role:administrators'] } });
    err(await hamlet.client.post('/messages', { type: 'stream', to: announce, topic: 't', content: 'x' }), 400, 'BAD_REQUEST', 'You do not have permission to post in this channel.');
    await sendStream(admin.client, announce, 't', 'admins only');

    const open = uniqueName('Open');
    await createChannel(s, open, { subscribers: [hamlet.user] });
    // Guests may not post to public channels they are not subscribed to...
    const refused = await guest.client.post('/messages', { type: 'stream', to: open, topic: 't', content: 'x' });
    assert.equal(refused.status, 400);
    assert.ok(['STREAM_DOES_NOT_EXIST', 'BAD_REQUEST'].includes(refused.body.code));
    // ...but may once subscribed.
    await subscribe(s, (await s.app.services.db.kysely.selectFrom('streams').selectAll().where('name', '=', open).executeTakeFirstOrThrow()), [guest.user]);
    await sendStream(guest.client, open, 't', 'now I may');

    const secret = uniqueName('Secret');
    await createChannel(s, secret, { inviteOnly: true, subscribers: [hamlet.user] });
    const hidden = await othello.client.post('/messages', { type: 'stream', to: secret, topic: 't', content: 'x' });
    err(hidden, 400, 'STREAM_DOES_NOT_EXIST');
    await sendStream(hamlet.client, secret, 't', 'subscribers may');
  });

  test('direct message permissions: direct_message_permission_group and initiator group', async () => {
    const s = server();
    const { hamlet, othello, bot, admin } = s.cast;
    const g = await systemGroups(s);
    await setRealmSettings(s, { direct_message_permission_group: g['role:nobody'] });
    try {
      err(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'x' }), 400, 'BAD_REQUEST', 'Direct messages are disabled in this organization.');
      // Messages to bots and to oneself are always allowed.
      await sendDirect(hamlet.client, [bot.user.id], 'to a bot');
      await sendDirect(hamlet.client, [hamlet.user.id], 'to me');
    } finally {
      await setRealmSettings(s, { direct_message_permission_group: g['role:everyone'] });
    }
    await setRealmSettings(s, { direct_message_permission_group: g['role:administrators'] });
    try {
      err(
        await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'x' }),
        400,
        'BAD_REQUEST',
        'This conversation does not include any users who can authorize it.',
      );
      await sendDirect(hamlet.client, [admin.user.id], 'an administrator authorizes it');
    } finally {
      await setRealmSettings(s, { direct_message_permission_group: g['role:everyone'] });
    }
    await setRealmSettings(s, { direct_message_initiator_group: g['role:administrators'] });
    try {
      const crowdMember = crowd[0]!;
      err(
        await hamlet.client.post('/messages', { type: 'direct', to: [crowdMember.id], content: 'x' }),
        400,
        'BAD_REQUEST',
        'You do not have permission to initiate direct message conversations.',
      );
      await sendDirect(admin.client, [hamlet.user.id, crowdMember.id], 'started by an administrator');
      // Existing conversations may continue.
      await sendDirect(hamlet.client, [admin.user.id, crowdMember.id], 'replying is fine');
    } finally {
      await setRealmSettings(s, { direct_message_initiator_group: g['role:everyone'] });
    }
  });

  test('automatic follow and unmute follow the sender’s settings', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = uniqueName('Auto');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    // Initiation only: someone else started the topic.
    await sendStream(othello.client, name, 'started by othello', 'x', { read_by_sender: true });
    const reply = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'started by othello', content: 'reply' }));
    assert.equal(reply.automatic_new_visibility_policy, undefined);
    // Participation follows on any message.
    await setUserSettings(s, hamlet.user, { automatically_follow_topics_policy: 1 });
    const { result, events } = await captureEvents(s, () => hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'started by othello', content: 'again' }));
    assert.equal(ok(result).automatic_new_visibility_policy, 3);
    const ut = events.filter((e) => e.event.type === 'user_topic');
    assert.equal(ut.length, 1);
    assert.deepEqual(
      { ...ut[0]!.event, last_updated: 0 },
      { type: 'user_topic', stream_id: stream.id, topic_name: 'started by othello', last_updated: 0, visibility_policy: 3 },
    );
    assert.ok(events.some((e) => e.event.type === 'muted_topics'));
    // Never: nothing changes.
    await setUserSettings(s, hamlet.user, { automatically_follow_topics_policy: 4, automatically_unmute_topics_in_muted_streams_policy: 4 });
    assert.equal(ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'fresh', content: 'x' })).automatic_new_visibility_policy, undefined);
    // Unmute on send in a muted channel.
    await setUserSettings(s, hamlet.user, { automatically_unmute_topics_in_muted_streams_policy: 2 });
    await s.app.services.db.kysely.updateTable('subscriptions').set({ is_muted: 1 }).where('user_id', '=', hamlet.user.id).where('stream_id', '=', stream.id).execute();
    assert.equal(ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'muted here', content: 'x' })).automatic_new_visibility_policy, 2);
    // Bots never change topic policies.
    await subscribe(s, stream, [s.cast.bot.user]);
    assert.equal(ok(await s.cast.bot.client.post('/messages', { type: 'stream', to: name, topic: 'bot topic', content: 'x' })).automatic_new_visibility_policy, undefined);
  });

  test('a topic emptied by deleting or moving its messages is started anew by the next message', async () => {
    const s = server();
    const { hamlet, othello, owner } = s.cast;
    const name = uniqueName('Restart');
    await createChannel(s, name, { subscribers: [hamlet.user, othello.user, owner.user] });
    await setUserSettings(s, hamlet.user, { automatically_follow_topics_policy: 3 });
    const reply = async (topic: string) => ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic, content: 'reply' }));
    // Each topic exists when hamlet writes to it (the send remembers that), then is emptied.
    const deleted = await sendStream(othello.client, name, 'deleted', 'first');
    const deletedReply = await reply('deleted');
    assert.equal(deletedReply.automatic_new_visibility_policy, undefined);
    const moved = await sendStream(othello.client, name, 'moved', 'first');
    const movedReply = await reply('moved');
    assert.equal(movedReply.automatic_new_visibility_policy, undefined);

    for (const id of [deleted, deletedReply.id as number]) ok(await owner.client.delete(`/messages/${id}`));
    ok(await owner.client.patch(`/messages/${moved}`, { topic: 'moved elsewhere', propagate_mode: 'change_all', send_notification_to_old_thread: false, send_notification_to_new_thread: false }));
    // Hamlet now starts both topics: he follows them.
    assert.equal((await reply('deleted')).automatic_new_visibility_policy, 3);
    assert.equal((await reply('moved')).automatic_new_visibility_policy, 3);
  });

  test('content is rendered by the Markdown module: mentions, links, topic links from linkifiers', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = uniqueName('Rendered');
    await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const db = s.app.services.db.kysely;
    await db.insertInto('linkifiers').values({ realm_id: s.realm.id, pattern: '#(?P<id>[0-9]+)', url_template: 'https://trac.example.com/ticket/{id}', order: 0 }).execute();
    try {
      const { result, events } = await captureEvents(s, () =>
        hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'Bug #123', content: `**Look** @**${othello.user.full_name}** at https://example.com` }),
      );
      const id = ok(result).id as number;
      const row = await messageRow(s, id);
      assert.equal(
        row.rendered_content,
        `<p><strong>Look</strong> <span class="user-mention" data-user-id="${othello.user.id}">@${othello.user.full_name}</span> at <a href="https://example.com">https://example.com</a></p>`,
      );
      assert.equal(row.has_link, 1);
      assert.equal(row.has_image, 0);
      const message = messageEvents(events)[0]!.event.message as Record<string, unknown>;
      assert.equal(message.content, row.rendered_content);
      assert.deepEqual(message.topic_links, [{ text: '#123', url: 'https://trac.example.com/ticket/123' }]);
      assert.equal(await userMessageFlags(s, othello.user.id, id), FLAG_BITS.mentioned);
      const me = await sendStream(hamlet.client, name, 'me', '/me waves');
      const fetched = ok(await othello.client.get(`/messages/${me}`));
      assert.equal(fetched.message.is_me_message, true);
    } finally {
      await db.deleteFrom('linkifiers').where('realm_id', '=', s.realm.id).execute();
    }
  });

  test('a channel with more recipients than one insert chunk gets every user_messages row', async () => {
    const s = server();
    const db = s.app.services.db.kysely;
    const n = 5100;
    const rows = Array.from({ length: n }, (_, i) => ({
      realm_id: s.realm.id,
      email: `bulk${i}@example.com`,
      email_lc: `bulk${i}@example.com`,
      delivery_email: `bulk${i}@example.com`,
      full_name: `Bulk ${i}`,
      api_key: `bulk-key-${i}-${'x'.repeat(20)}`,
      date_joined: 1,
    }));
    for (let i = 0; i < rows.length; i += 1000) await db.insertInto('users').values(rows.slice(i, i + 1000)).execute();
    const bulk = await db.selectFrom('users').selectAll().where('email', 'like', 'bulk%').execute();
    const name = uniqueName('Huge');
    await createChannel(s, name, { subscribers: [s.cast.hamlet.user, ...bulk] });
    const id = await sendStream(s.cast.hamlet.client, name, 'everyone', 'hello, crowd');
    const count = await db.selectFrom('user_messages').select((eb) => eb.fn.countAll<number>().as('n')).where('message_id', '=', id).executeTakeFirstOrThrow();
    assert.equal(Number(count.n), n + 1);
  });

  test('users who muted the sender receive the message already read', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    await s.app.services.db.kysely.insertInto('muted_users').values({ user_id: othello.user.id, muted_user_id: hamlet.user.id, date_muted: 1 }).execute();
    try {
      const id = await sendDirect(hamlet.client, [othello.user.id], 'you muted me');
      assert.equal(await userMessageFlags(s, othello.user.id, id), FLAG_BITS.is_private | FLAG_BITS.read);
    } finally {
      await s.app.services.db.kysely.deleteFrom('muted_users').where('user_id', '=', othello.user.id).execute();
    }
  });
});
