import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { FLAG_BITS } from '../../src/lib/message_flags.js';
import { createChannel, getMessages, ids, newest, sendDirect, sendToChannel, setFlagBits, subscribe, systemGroupId, unique } from './messages_fetch.fixtures.js';

const NEWEST = 10000000000000000;

forEachDatabase('GET /messages', (server) => {
  /** A channel hamlet and othello share, with 5 messages in "castle" and 2 in "moat". */
  async function channelWithTopics(s: TestServer): Promise<{ name: string; streamId: number; castle: number[]; moat: number[] }> {
    const { hamlet, othello } = s.cast;
    const name = unique('Elsinore');
    const streamId = await createChannel(s, hamlet, name, { members: [othello.user] });
    const castle: number[] = [];
    const moat: number[] = [];
    for (let i = 0; i < 5; i++) {
      castle.push(await sendToChannel(hamlet.client, name, 'castle', `castle ${i}`));
      if (i % 2) moat.push(await sendToChannel(othello.client, name, 'moat', `moat ${i}`));
    }
    return { name, streamId, castle, moat };
  }

  test('channel and topic narrow, newest window: messages oldest first with every documented field', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const { name, streamId, castle } = await channelWithTopics(s);
    const body = await getMessages(othello.client, {
      anchor: 'newest',
      num_before: 3,
      num_after: 0,
      narrow: [{ operator: 'channel', operand: name }, { operator: 'topic', operand: 'castle' }],
    });
    assert.deepEqual(ids(body), castle.slice(2));
    assert.equal(body.anchor, NEWEST);
    assert.equal(body.found_anchor, false);
    assert.equal(body.found_newest, true);
    assert.equal(body.found_oldest, false);
    assert.equal(body.history_limited, false);
    const m = body.messages[2];
    assert.equal(m.id, castle[4]);
    assert.equal(m.type, 'stream');
    assert.equal(m.display_recipient, name);
    assert.equal(m.stream_id, streamId);
    assert.equal(m.subject, 'castle');
    assert.equal(m.sender_id, hamlet.user.id);
    assert.equal(m.sender_email, hamlet.user.email);
    assert.equal(m.sender_full_name, 'King Hamlet');
    assert.equal(m.content_type, 'text/html');
    assert.match(m.content, /castle 4/);
    assert.deepEqual(m.reactions, []);
    assert.deepEqual(m.flags, []);
    assert.equal(m.match_content, undefined);
    // The whole topic, from the start.
    const all = await getMessages(othello.client, {
      anchor: 'oldest',
      num_before: 0,
      num_after: 10,
      narrow: [['stream', name], ['topic', 'CASTLE']],
    });
    assert.deepEqual(ids(all), castle);
    assert.equal(all.anchor, 0);
    assert.equal(all.found_oldest, true);
    assert.equal(all.found_newest, true);
    assert.equal(all.found_anchor, false);
    // Channel by ID, topic by its legacy name.
    assert.deepEqual(await newest(othello.client, [{ operator: 'channel', operand: streamId }, { operator: 'subject', operand: 'castle' }]), castle);
  });

  test('numeric anchors: include_anchor, both sides, found_* flags and the newest sentinels', async () => {
    const s = server();
    const { othello } = s.cast;
    const { name, castle } = await channelWithTopics(s);
    const narrow = [{ operator: 'channel', operand: name }, { operator: 'topic', operand: 'castle' }];
    const around = await getMessages(othello.client, { anchor: castle[2], num_before: 1, num_after: 1, narrow });
    assert.deepEqual(ids(around), castle.slice(1, 4));
    assert.equal(around.anchor, castle[2]);
    assert.equal(around.found_anchor, true);
    assert.equal(around.found_oldest, false);
    assert.equal(around.found_newest, false);

    const after = await getMessages(othello.client, { anchor: castle[2], include_anchor: false, num_before: 0, num_after: 5, narrow });
    assert.deepEqual(ids(after), castle.slice(3));
    assert.equal(after.found_anchor, false);
    assert.equal(after.found_newest, true);

    const before = await getMessages(othello.client, { anchor: String(castle[2]), include_anchor: false, num_before: 5, num_after: 0, narrow });
    assert.deepEqual(ids(before), castle.slice(0, 2));
    assert.equal(before.found_oldest, true);
    assert.equal(before.found_newest, false);

    for (const sentinel of [NEWEST, 10000000000]) {
      const body = await getMessages(othello.client, { anchor: sentinel, num_before: 2, num_after: 0, narrow });
      assert.deepEqual(ids(body), castle.slice(3));
      assert.equal(body.anchor, sentinel);
      assert.equal(body.found_newest, true);
    }
    // Larger than the sentinel: clamped to it. Negative: the oldest.
    assert.equal((await getMessages(othello.client, { anchor: '99999999999999999999', num_before: 1, num_after: 0, narrow })).anchor, NEWEST);
    const negative = await getMessages(othello.client, { anchor: -5, num_before: 0, num_after: 1, narrow });
    assert.equal(negative.anchor, 0);
    assert.deepEqual(ids(negative), castle.slice(0, 1));
    // Nothing requested on either side: just the anchor.
    const only = await getMessages(othello.client, { anchor: castle[1], num_before: 0, num_after: 0, narrow });
    assert.deepEqual(ids(only), [castle[1]]);
    assert.equal(only.found_anchor, true);
  });

  test('first_unread: the oldest unread message, legacy use_first_unread_anchor, and the sentinel when all is read', async () => {
    const s = server();
    const { othello } = s.cast;
    const { name, castle } = await channelWithTopics(s);
    const narrow = [{ operator: 'channel', operand: name }, { operator: 'topic', operand: 'castle' }];
    await setFlagBits(s, othello.user.id, castle.slice(0, 2), FLAG_BITS.read, true);
    const body = await getMessages(othello.client, { anchor: 'first_unread', num_before: 1, num_after: 1, narrow });
    assert.equal(body.anchor, castle[2]);
    assert.equal(body.found_anchor, true);
    assert.deepEqual(ids(body), castle.slice(1, 4));
    assert.deepEqual(body.messages[0].flags, ['read']);
    assert.deepEqual(body.messages[1].flags, []);
    // zulip-terminal and zulip-mobile: anchor=0 with use_first_unread_anchor=true.
    const legacy = await getMessages(othello.client, { anchor: 0, use_first_unread_anchor: true, num_before: 1, num_after: 1, narrow });
    assert.equal(legacy.anchor, castle[2]);
    assert.deepEqual(ids(legacy), castle.slice(1, 4));

    await setFlagBits(s, othello.user.id, castle, FLAG_BITS.read, true);
    const none = await getMessages(othello.client, { anchor: 'first_unread', num_before: 2, num_after: 2, narrow });
    assert.equal(none.anchor, NEWEST);
    assert.deepEqual(ids(none), castle.slice(3));
    assert.equal(none.found_newest, true);
    assert.equal(none.found_anchor, false);
  });

  test('message_ids instead of an anchor', async () => {
    const s = server();
    const { othello } = s.cast;
    const { castle, moat } = await channelWithTopics(s);
    const body = await getMessages(othello.client, { message_ids: [castle[3], moat[0], castle[0], 999999999] });
    assert.deepEqual(ids(body), [castle[0], moat[0], castle[3]].sort((a, b) => a! - b!));
    assert.equal(body.anchor, undefined);
    assert.equal(body.found_anchor, false);
    assert.equal(body.found_oldest, false);
    assert.equal(body.found_newest, false);
    assert.equal(body.history_limited, false);
    const narrowed = await getMessages(othello.client, { message_ids: [castle[3], moat[0]], narrow: [{ operator: 'topic', operand: 'moat' }] });
    assert.deepEqual(ids(narrowed), [moat[0]]);
    const res = await othello.client.get('/messages', { message_ids: [castle[0]], anchor: 'newest' });
    err(res, 400, 'BAD_REQUEST', 'Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor');
    assert.equal(res.body.parameters, 'num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor');
  });

  test('a constant number of queries however many messages come back', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = unique('Query count');
    await createChannel(s, hamlet, name, { members: [othello.user] });
    for (let i = 0; i < 30; i++) await sendToChannel(i % 2 ? othello.client : hamlet.client, name, 'many', `message ${i}`);
    const executor = s.app.services.db.kysely.getExecutor();
    const original = executor.executeQuery.bind(executor);
    let count = 0;
    executor.executeQuery = ((...args: Parameters<typeof original>) => {
      count += 1;
      return original(...args);
    }) as typeof executor.executeQuery;
    const queriesFor = async (n: number): Promise<number> => {
      count = 0;
      const body = await getMessages(othello.client, { anchor: 'newest', num_before: n, num_after: 0, narrow: [['channel', name], ['topic', 'many']] });
      assert.equal(body.messages.length, n);
      return count;
    };
    try {
      // The first request loads the realm's users, channels and linkifiers into the read cache.
      await queriesFor(1);
      const one = await queriesFor(1);
      assert.equal(await queriesFor(30), one);
      // One query: the narrow's messages, with their reactions.
      assert.equal(one, 1);
    } finally {
      executor.executeQuery = original;
    }
  });

  test('sender names, channel names and linkifiers follow changes at once, through the API or straight to the database', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const name = unique('Cached names');
    const streamId = await createChannel(s, hamlet, name, { members: [othello.user] });
    await sendToChannel(hamlet.client, name, 'ticket CACHE-7', 'hello');
    const fetch = async (): Promise<any> =>
      (await getMessages(othello.client, { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'channel', operand: streamId }] })).messages[0];
    let m = await fetch();
    assert.equal(m.sender_full_name, 'King Hamlet');
    assert.equal(m.display_recipient, name);
    assert.deepEqual(m.topic_links, []);

    const renamed = unique('Renamed names');
    ok(await admin.client.patch(`/users/${hamlet.user.id}`, { full_name: 'Prince Hamlet' }));
    ok(await hamlet.client.patch(`/streams/${streamId}`, { new_name: renamed }));
    const linkifier = ok(await admin.client.post('/realm/filters', { pattern: 'CACHE-(?P<id>[0-9]+)', url_template: 'https://tickets.example.com/{id}' })).id;
    try {
      m = await fetch();
      assert.equal(m.sender_full_name, 'Prince Hamlet');
      assert.equal(m.display_recipient, renamed);
      assert.deepEqual(m.topic_links, [{ text: 'CACHE-7', url: 'https://tickets.example.com/7' }]);
      await s.app.services.db.kysely.updateTable('users').set({ full_name: 'Hamlet Direct' }).where('id', '=', hamlet.user.id).execute();
      await s.app.services.db.kysely.updateTable('streams').set({ name: `${renamed} direct` }).where('id', '=', streamId).execute();
      m = await fetch();
      assert.equal(m.sender_full_name, 'Hamlet Direct');
      assert.equal(m.display_recipient, `${renamed} direct`);
    } finally {
      ok(await admin.client.patch(`/users/${hamlet.user.id}`, { full_name: 'King Hamlet' }));
      ok(await admin.client.delete(`/realm/filters/${linkifier}`));
    }
    m = await fetch();
    assert.equal(m.sender_full_name, 'King Hamlet');
    assert.deepEqual(m.topic_links, []);
  });

  test('reactions come with each message, oldest first, in windows, by message ID and in searches', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = unique('Reactions');
    const streamId = await createChannel(s, hamlet, name, { members: [othello.user] });
    const sent: number[] = [];
    for (let i = 0; i < 3; i++) sent.push(await sendToChannel(hamlet.client, name, 'react', `kumquat reaction ${i}`));
    const [first, second] = sent as [number, number, number];
    ok(await othello.client.post(`/messages/${first}/reactions`, { emoji_name: 'octopus' }));
    ok(await hamlet.client.post(`/messages/${first}/reactions`, { emoji_name: 'tada' }));
    ok(await hamlet.client.post(`/messages/${first}/reactions`, { emoji_name: 'octopus' }));
    ok(await othello.client.post(`/messages/${second}/reactions`, { emoji_name: 'heart' }));
    const octopus = { emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji' };
    const expected = [
      [{ ...octopus, user_id: othello.user.id }, { emoji_name: 'tada', emoji_code: '1f389', reaction_type: 'unicode_emoji', user_id: hamlet.user.id }, { ...octopus, user_id: hamlet.user.id }],
      [{ emoji_name: 'heart', emoji_code: '2764', reaction_type: 'unicode_emoji', user_id: othello.user.id }],
      [],
    ];
    // GET /messages/{id} reads reactions with their own query: the narrow's rows must agree.
    for (const [i, id] of sent.entries()) assert.deepEqual(ok(await othello.client.get(`/messages/${id}`)).message.reactions, expected[i]);
    const reactionsIn = (body: { messages: { id: number; reactions: unknown }[] }) => body.messages.map((m) => [m.id, m.reactions]);
    const all = sent.map((id, i) => [id, expected[i]]);
    const channel = [{ operator: 'channel', operand: streamId }];
    assert.deepEqual(reactionsIn(await getMessages(othello.client, { anchor: 'newest', num_before: 5, num_after: 0, narrow: channel })), all);
    assert.deepEqual(reactionsIn(await getMessages(othello.client, { anchor: second, num_before: 1, num_after: 1, narrow: channel })), all);
    assert.deepEqual(reactionsIn(await getMessages(othello.client, { message_ids: [second, first], narrow: channel })), all.slice(0, 2));
    const search = [...channel, { operator: 'search', operand: 'kumquat' }];
    assert.deepEqual(reactionsIn(await getMessages(othello.client, { anchor: 'newest', num_before: 5, num_after: 0, narrow: search })), all);
  });

  test('parameter errors', async () => {
    const { othello } = server().cast;
    err(await othello.client.get('/messages', { num_before: 1, num_after: 0 }), 400, 'BAD_REQUEST', "Missing 'anchor' argument.");
    err(await othello.client.get('/messages', { anchor: 'latest', num_before: 1 }), 400, 'BAD_REQUEST', 'Invalid anchor');
    err(await othello.client.get('/messages', { anchor: 'newest', num_before: 4000, num_after: 1001 }), 400, 'BAD_REQUEST', 'Too many messages requested (maximum 5000).');
    err(
      await othello.client.get('/messages', { anchor: 10, num_before: 1, num_after: 1, include_anchor: false }),
      400,
      'BAD_REQUEST',
      'The anchor can only be excluded at an end of the range',
    );
    err(await othello.client.get('/messages', { anchor: 'newest', num_before: -1 }), 400, 'BAD_REQUEST', 'num_before is too small');
    err(await othello.client.get('/messages', { anchor: 'newest', num_before: 'x' }), 400, 'BAD_REQUEST', 'num_before is not an integer');
    err(await othello.client.get('/messages', { anchor: 'newest', narrow: '{' }), 400, 'BAD_REQUEST', 'Argument "narrow" is not valid JSON.');
    err(await othello.client.get('/messages', { anchor: 'newest', narrow: { a: 1 } }), 400, 'BAD_REQUEST', 'narrow is not a list');
    err(await othello.client.get('/messages', { anchor: 'date', num_before: 1 }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'anchor_date' argument");
    err(await othello.client.get('/messages', { anchor: 'date', anchor_date: 'soon', num_before: 1 }), 400, 'BAD_REQUEST', 'Invalid anchor_date');
    const unauth = await server().anonymous.get('/messages', { anchor: 'newest' });
    assert.equal(unauth.status, 401);
  });

  test('anchor=date: the first message on or after the time', async () => {
    const s = server();
    const { othello } = s.cast;
    const { name, castle } = await channelWithTopics(s);
    const db = s.app.services.db.kysely;
    for (const [i, id] of castle.entries()) await db.updateTable('messages').set({ date_sent: Date.UTC(2030, 0, 1 + i) / 1000 }).where('id', '=', id).execute();
    const narrow = [{ operator: 'channel', operand: name }, { operator: 'topic', operand: 'castle' }];
    const body = await getMessages(othello.client, { anchor: 'date', anchor_date: '2030-01-03', num_before: 0, num_after: 1, narrow });
    assert.equal(body.anchor, castle[2]);
    assert.equal(body.found_anchor, true);
    assert.deepEqual(ids(body), castle.slice(2, 4));
    const later = await getMessages(othello.client, { anchor: 'date', anchor_date: '2030-01-02T12:00:00Z', num_before: 0, num_after: 1, narrow });
    assert.equal(later.anchor, castle[2]);
    const none = await getMessages(othello.client, { anchor: 'date', anchor_date: '2040-01-01', num_before: 1, num_after: 0, narrow });
    assert.equal(none.anchor, NEWEST);
    assert.deepEqual(ids(none), [castle[4]]);
  });

  test('apply_markdown, client_gravatar and allow_empty_topic_name shape the message dicts', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = unique('Formats');
    await createChannel(s, hamlet, name, { members: [othello.user] });
    const id = await sendToChannel(hamlet.client, name, '', 'Some **bold** text');
    const narrow = [{ operator: 'id', operand: id }];
    const raw = await getMessages(othello.client, { anchor: id, num_before: 0, num_after: 0, narrow, apply_markdown: false });
    assert.equal(raw.messages[0].content, 'Some **bold** text');
    assert.equal(raw.messages[0].content_type, 'text/x-markdown');
    assert.equal(raw.messages[0].subject, 'general chat');
    const rendered = await getMessages(othello.client, { anchor: id, num_before: 0, num_after: 0, narrow, allow_empty_topic_name: true });
    const row = await s.app.services.db.kysely.selectFrom('messages').select('rendered_content').where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(rendered.messages[0].content, row.rendered_content);
    assert.equal(rendered.messages[0].content_type, 'text/html');
    assert.equal(rendered.messages[0].subject, '');
    const withAvatar = await getMessages(othello.client, { anchor: id, num_before: 0, num_after: 0, narrow, client_gravatar: false });
    assert.match(withAvatar.messages[0].avatar_url, /^https:\/\/secure\.gravatar\.com\/avatar\//);
    // The empty topic's display name in a narrow means the empty topic.
    assert.deepEqual(await newest(othello.client, [{ operator: 'channel', operand: name }, { operator: 'topic', operand: 'general chat' }]), [id]);
    assert.deepEqual(await newest(othello.client, [{ operator: 'channel', operand: name }, { operator: 'topic', operand: '' }]), [id]);
  });

  test('shared history: a member reads a public channel they never joined, with the historical flag', async () => {
    const s = server();
    const { hamlet, moderator } = s.cast;
    const name = unique('Public history');
    await createChannel(s, hamlet, name);
    const before = await sendToChannel(hamlet.client, name, 'old', 'before anyone joined');
    const body = await getMessages(moderator.client, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'channel', operand: name }] });
    assert.deepEqual(ids(body), [before]);
    assert.deepEqual(body.messages[0].flags, ['read', 'historical']);
    // channels:public reaches it too; without a channel term, only the moderator's own messages count.
    assert.ok((await newest(moderator.client, [{ operator: 'channels', operand: 'public' }], 1000)).includes(before));
    assert.ok(!(await newest(moderator.client, [], 1000)).includes(before));
    // After subscribing, new messages are theirs; the old one is still historical.
    await subscribe(moderator.client, name, [moderator.user]);
    const after = await sendToChannel(hamlet.client, name, 'new', 'after joining');
    const joined = await getMessages(moderator.client, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'channel', operand: name }] });
    assert.deepEqual(ids(joined), [before, after]);
    assert.deepEqual(joined.messages[0].flags, ['read', 'historical']);
    assert.deepEqual(joined.messages[1].flags, []);
  });

  test('private channels: outsiders see nothing; shared history for new subscribers, protected history not', async () => {
    const s = server();
    const { hamlet, othello, moderator, admin } = s.cast;
    const shared = unique('Private shared');
    const sharedId = await createChannel(s, hamlet, shared, { inviteOnly: true, historyPublic: true });
    const protectedName = unique('Private protected');
    const protectedId = await createChannel(s, hamlet, protectedName, { inviteOnly: true, historyPublic: false });
    const secret1 = await sendToChannel(hamlet.client, shared, 'plans', 'secret plans alpha');
    const secret2 = await sendToChannel(hamlet.client, protectedName, 'plans', 'secret plans beta');
    for (const outsider of [othello, moderator, admin]) {
      for (const narrow of [[{ operator: 'channel', operand: sharedId }], [{ operator: 'channel', operand: protectedId }], [], [{ operator: 'search', operand: 'secret' }]]) {
        const got = await newest(outsider.client, narrow, 1000);
        assert.ok(!got.includes(secret1) && !got.includes(secret2), `${outsider.user.email} ${JSON.stringify(narrow)}`);
      }
      const byId = await getMessages(outsider.client, { message_ids: [secret1, secret2] });
      assert.deepEqual(ids(byId), []);
    }
    await subscribe(hamlet.client, shared, [othello.user]);
    await subscribe(hamlet.client, protectedName, [othello.user]);
    assert.deepEqual(await newest(othello.client, [{ operator: 'channel', operand: sharedId }]), [secret1]);
    assert.deepEqual(await newest(othello.client, [{ operator: 'channel', operand: protectedId }]), []);
    const later = await sendToChannel(hamlet.client, protectedName, 'plans', 'now othello can read');
    assert.deepEqual(await newest(othello.client, [{ operator: 'channel', operand: protectedId }]), [later]);
  });

  test('a private channel with shared history is readable by members of its can_subscribe_group', async () => {
    const s = server();
    const { hamlet, moderator, othello } = s.cast;
    const name = unique('Private by group');
    const streamId = await createChannel(s, hamlet, name, {
      inviteOnly: true,
      historyPublic: true,
      permissions: { can_subscribe_group: await systemGroupId(s, 'role:moderators') },
    });
    const id = await sendToChannel(hamlet.client, name, 't', 'moderators may read this');
    const body = await getMessages(moderator.client, { anchor: 'newest', num_before: 5, num_after: 0, narrow: [{ operator: 'channel', operand: streamId }] });
    assert.deepEqual(ids(body), [id]);
    assert.deepEqual(body.messages[0].flags, ['read', 'historical']);
    assert.deepEqual(await newest(othello.client, [{ operator: 'channel', operand: streamId }]), []);
  });

  test("direct messages: participants only; other people's conversations stay hidden", async () => {
    const s = server();
    const { hamlet, othello, moderator, guest } = s.cast;
    const dm = await sendDirect(hamlet.client, [othello.user.id], 'between us');
    const group = await sendDirect(hamlet.client, [othello.user.id, guest.user.id], 'the three of us');
    const othelloSees = await getMessages(othello.client, { message_ids: [dm, group] });
    assert.deepEqual(ids(othelloSees), [dm, group]);
    const dict = othelloSees.messages[0];
    assert.equal(dict.type, 'private');
    assert.equal(dict.subject, '');
    assert.deepEqual(
      dict.display_recipient.map((u: { id: number }) => u.id).sort((a: number, b: number) => a - b),
      [hamlet.user.id, othello.user.id].sort((a, b) => a - b),
    );
    assert.deepEqual(ids(await getMessages(moderator.client, { message_ids: [dm, group] })), []);
    assert.deepEqual(await newest(moderator.client, [{ operator: 'dm', operand: [hamlet.user.id] }]), []);
    assert.ok(!(await newest(moderator.client, [], 1000)).includes(dm));
    assert.deepEqual(await newest(guest.client, [{ operator: 'dm', operand: [hamlet.user.id, othello.user.id] }]), [group]);
  });

  test('guests read only channels they are subscribed to', async () => {
    const s = server();
    const { hamlet, guest } = s.cast;
    const open = unique('Guest open');
    const joined = unique('Guest joined');
    const openId = await createChannel(s, hamlet, open);
    await createChannel(s, hamlet, joined, { members: [guest.user] });
    const hidden = await sendToChannel(hamlet.client, open, 't', 'guests cannot see this');
    const visible = await sendToChannel(hamlet.client, joined, 't', 'guests see this');
    assert.deepEqual(await newest(guest.client, [{ operator: 'channel', operand: openId }]), []);
    const pub = await newest(guest.client, [{ operator: 'channels', operand: 'public' }], 1000);
    assert.ok(pub.includes(visible) && !pub.includes(hidden));
    const res = await guest.client.get('/messages', { message_ids: [hidden] });
    assert.deepEqual(ok(res).messages, []);
  });
});
