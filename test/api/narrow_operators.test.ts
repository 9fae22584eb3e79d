import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { FLAG_BITS } from '../../src/lib/message_flags.js';
import { now } from '../../src/db/index.js';
import {
  assertNarrowError,
  createChannel,
  getMessages,
  newest,
  searchIn,
  sendDirect,
  sendToChannel,
  setFlagBits,
  unique,
} from './messages_fetch.fixtures.js';

interface World {
  name: string;
  streamId: number;
  other: string;
  otherId: number;
  /** hamlet in "castle" */
  h1: number;
  /** othello in "castle" */
  o1: number;
  /** othello in "moat" */
  o2: number;
  /** hamlet in the other channel */
  h3: number;
  dm: number;
  group: number;
  selfDm: number;
}

forEachDatabase('narrow operators', (server) => {
  let world: World | undefined;

  /** Two channels hamlet and othello share, a 1:1, a group DM and a self-DM, all hamlet's. */
  async function setup(s: TestServer): Promise<World> {
    if (world) return world;
    const { hamlet, othello, moderator } = s.cast;
    const name = unique('Narrows');
    const other = unique('Narrows other');
    const streamId = await createChannel(s, hamlet, name, { members: [othello.user] });
    const otherId = await createChannel(s, hamlet, other, { members: [othello.user] });
    const h1 = await sendToChannel(hamlet.client, name, 'castle', 'the ghost walks tonight');
    const o1 = await sendToChannel(othello.client, name, 'castle', 'I am walking to the gate');
    const o2 = await sendToChannel(othello.client, name, 'moat', 'Water everywhere');
    const h3 = await sendToChannel(hamlet.client, other, 'castle', 'elsewhere entirely');
    const dm = await sendDirect(hamlet.client, [othello.user.id], 'a private word');
    const group = await sendDirect(hamlet.client, [othello.user.id, moderator.user.id], 'three of us');
    const selfDm = await sendDirect(hamlet.client, [hamlet.user.id], 'note to self');
    world = { name, streamId, other, otherId, h1, o1, o2, h3, dm, group, selfDm };
    return world;
  }

  const only = (all: number[], w: World): number[] => {
    const mine = new Set([w.h1, w.o1, w.o2, w.h3, w.dm, w.group, w.selfDm]);
    return all.filter((id) => mine.has(id));
  };

  test('sender by email, by ID and "me"; negated', async () => {
    const s = server();
    const w = await setup(s);
    const { hamlet, othello } = s.cast;
    const inChannel = { operator: 'channel', operand: w.name };
    assert.deepEqual(await newest(hamlet.client, [inChannel, { operator: 'sender', operand: othello.user.email }]), [w.o1, w.o2]);
    assert.deepEqual(await newest(hamlet.client, [inChannel, { operator: 'sender', operand: othello.user.id }]), [w.o1, w.o2]);
    assert.deepEqual(await newest(hamlet.client, [inChannel, { operator: 'sender', operand: 'me' }]), [w.h1]);
    assert.deepEqual(await newest(hamlet.client, [inChannel, { operator: 'sender', operand: othello.user.id, negated: true }]), [w.h1]);
    assertNarrowError(await hamlet.client.get('/messages', { anchor: 'newest', narrow: [['sender', 'nobody@example.com']] }), 'unknown user nobody@example.com');
  });

  test('topic, negated topic and negated channel (which keeps direct messages)', async () => {
    const s = server();
    const w = await setup(s);
    const { hamlet } = s.cast;
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'channel', operand: w.name }, { operator: 'topic', operand: 'castle', negated: true }]), [w.o2]);
    const notThere = only(await newest(hamlet.client, [{ operator: 'channel', operand: w.name, negated: true }], 1000), w);
    assert.deepEqual(notThere, [w.h3, w.dm, w.group, w.selfDm]);
    // A topic term without a channel searches the reader's own messages in every channel.
    assert.deepEqual(only(await newest(hamlet.client, [{ operator: 'topic', operand: 'castle' }], 1000), w), [w.h1, w.o1, w.h3]);
  });

  test('dm: emails (comma-separated, spaces tolerated), user IDs, group and self conversations', async () => {
    const s = server();
    const w = await setup(s);
    const { hamlet, othello, moderator } = s.cast;
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'dm', operand: [othello.user.id] }]), [w.dm]);
    assert.deepEqual(await newest(othello.client, [{ operator: 'dm', operand: [hamlet.user.id] }]), [w.dm]);
    assert.deepEqual(await newest(othello.client, [['pm-with', hamlet.user.email]]), [w.dm]);
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'dm', operand: `${othello.user.email}, ${moderator.user.email}` }]), [w.group]);
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'dm', operand: [othello.user.id, hamlet.user.id, moderator.user.id] }]), [w.group]);
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'dm', operand: [hamlet.user.id] }]), [w.selfDm]);
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'dm', operand: [] }]), []);
    assertNarrowError(await hamlet.client.get('/messages', { anchor: 'newest', narrow: [['dm', 'ghost@example.com']] }), 'unknown user in ghost@example.com');
    assertNarrowError(await hamlet.client.get('/messages', { anchor: 'newest', narrow: [{ operator: 'dm', operand: [987654] }] }), 'unknown user in [987654]');
  });

  test('dm-including, dm-with, group-pm-with, is:dm and is:private', async () => {
    const s = server();
    const w = await setup(s);
    const { hamlet, othello, moderator } = s.cast;
    const mine = async (narrow: unknown) => only(await newest(hamlet.client, narrow as never, 1000), w);
    assert.deepEqual(await mine([{ operator: 'dm-including', operand: othello.user.id }]), [w.dm, w.group]);
    assert.deepEqual(await mine([{ operator: 'dm-with', operand: othello.user.email }]), [w.dm, w.group]);
    assert.deepEqual(await mine([{ operator: 'dm-including', operand: hamlet.user.id }]), [w.dm, w.group, w.selfDm]);
    assert.deepEqual(await mine([{ operator: 'group-pm-with', operand: moderator.user.email }]), [w.group]);
    assert.deepEqual(await mine([{ operator: 'group-pm-with', operand: othello.user.id }]), [w.group]);
    assert.deepEqual(await mine([['is', 'dm']]), [w.dm, w.group, w.selfDm]);
    assert.deepEqual(await mine([['is', 'private']]), [w.dm, w.group, w.selfDm]);
    assert.deepEqual(await mine([{ operator: 'is', operand: 'dm', negated: true }]), [w.h1, w.o1, w.o2, w.h3]);
  });

  test('is:starred, is:unread, is:mentioned, is:alerted from the reader flags', async () => {
    const s = server();
    const w = await setup(s);
    const { othello } = s.cast;
    await setFlagBits(s, othello.user.id, [w.h1], FLAG_BITS.starred, true);
    await setFlagBits(s, othello.user.id, [w.o2, w.dm], FLAG_BITS.mentioned, true);
    await setFlagBits(s, othello.user.id, [w.h3], FLAG_BITS.topic_wildcard_mentioned, true);
    await setFlagBits(s, othello.user.id, [w.o1], FLAG_BITS.has_alert_word, true);
    await setFlagBits(s, othello.user.id, [w.h1, w.o1, w.o2, w.h3, w.dm, w.group], FLAG_BITS.read, true);
    await setFlagBits(s, othello.user.id, [w.o2], FLAG_BITS.read, false);
    const mine = async (narrow: unknown) => only(await newest(othello.client, narrow as never, 1000), w);
    assert.deepEqual(await mine([['is', 'starred']]), [w.h1]);
    assert.deepEqual(await mine([['is', 'mentioned']]), [w.o2, w.h3, w.dm]);
    assert.deepEqual(await mine([['is', 'alerted']]), [w.o1]);
    assert.deepEqual(await mine([['is', 'unread']]), [w.o2]);
    assert.deepEqual(await mine([{ operator: 'is', operand: 'unread', negated: true }]), [w.h1, w.o1, w.h3, w.dm, w.group]);
    const body = await getMessages(othello.client, { anchor: w.h1, num_before: 0, num_after: 0, narrow: [['is', 'starred']] });
    assert.deepEqual(body.messages[0].flags, ['read', 'starred']);
    // `is:` narrows look only at the reader's own rows, even with a channel term.
    assert.deepEqual(await newest(s.cast.moderator.client, [{ operator: 'channel', operand: w.name }, { operator: 'is', operand: 'unread' }]), []);
  });

  test('is:resolved, is:followed, is:muted, in:home and in:all', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = unique('Muting');
    const streamId = await createChannel(s, hamlet, name, { members: [othello.user] });
    const mutedName = unique('Muted channel');
    const mutedId = await createChannel(s, hamlet, mutedName, { members: [othello.user] });
    const resolved = await sendToChannel(hamlet.client, name, '\u2714 fixed', 'done');
    const followed = await sendToChannel(hamlet.client, name, 'followed', 'interesting');
    const muted = await sendToChannel(hamlet.client, name, 'boring', 'zzz');
    const inMuted = await sendToChannel(hamlet.client, mutedName, 'anything', 'shh');
    const unmutedInMuted = await sendToChannel(hamlet.client, mutedName, 'exception', 'still shown');
    const db = s.app.services.db.kysely;
    const topic = (stream_id: number, t: string, visibility_policy: number) => ({
      user_id: othello.user.id, stream_id, topic: t, topic_lc: t.toLowerCase(), visibility_policy, last_updated: now(),
    });
    await db.deleteFrom('user_topics').where('user_id', '=', othello.user.id).where('stream_id', 'in', [streamId, mutedId]).execute();
    await db.insertInto('user_topics').values([topic(streamId, 'Followed', 3), topic(streamId, 'boring', 1), topic(mutedId, 'exception', 2)]).execute();
    await db.updateTable('subscriptions').set({ is_muted: 1 }).where('user_id', '=', othello.user.id).where('stream_id', '=', mutedId).execute();
    const all = [resolved, followed, muted, inMuted, unmutedInMuted];
    const pick = async (narrow: unknown) => (await newest(othello.client, narrow as never, 1000)).filter((id) => all.includes(id));
    assert.deepEqual(await pick([['is', 'resolved']]), [resolved]);
    assert.deepEqual(await pick([{ operator: 'channel', operand: name }, { operator: 'is', operand: 'resolved', negated: true }]), [followed, muted]);
    assert.deepEqual(await pick([['is', 'followed']]), [followed]);
    assert.deepEqual(await pick([['is', 'muted']]), [muted, inMuted]);
    assert.deepEqual(await pick([['in', 'home']]), [resolved, followed, unmutedInMuted]);
    assert.deepEqual(await pick([{ operator: 'in', operand: 'home', negated: true }]), [muted, inMuted]);
    assert.deepEqual(await pick([['in', 'all']]), all);
    // In a muted channel's own view, only topic mutes apply to first_unread.
    const body = await getMessages(othello.client, { anchor: 'first_unread', num_before: 0, num_after: 0, narrow: [{ operator: 'channel', operand: mutedName }] });
    assert.equal(body.anchor, inMuted);
    const home = await getMessages(othello.client, { anchor: 'first_unread', num_before: 0, num_after: 0, narrow: [{ operator: 'channel', operand: name }] });
    assert.equal(home.anchor, resolved);
  });

  test('id, near (ignored), channels:public/web-public/archived', async () => {
    const s = server();
    const w = await setup(s);
    const { hamlet } = s.cast;
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'id', operand: w.o1 }]), [w.o1]);
    assert.deepEqual(await newest(hamlet.client, [['id', String(w.o1)]]), [w.o1]);
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'channel', operand: w.name }, { operator: 'id', operand: w.o1, negated: true }]), [w.h1, w.o2]);
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'channel', operand: w.name }, { operator: 'near', operand: String(w.o1) }]), [w.h1, w.o1, w.o2]);
    const pub = await newest(hamlet.client, [['channels', 'public']], 1000);
    assert.ok(pub.includes(w.h1) && !pub.includes(w.dm));
    assert.deepEqual(only(await newest(hamlet.client, [['streams', 'web-public']], 1000), w), []);
    assert.deepEqual(only(await newest(hamlet.client, [['channels', 'archived']], 1000), w), []);
    assertNarrowError(await hamlet.client.get('/messages', { anchor: 'newest', narrow: [['id', 'abc']] }), 'Invalid message ID');
    assertNarrowError(await hamlet.client.get('/messages', { anchor: 'newest', narrow: [{ operator: 'id', operand: -4 }] }), 'Invalid message ID');
    assertNarrowError(await hamlet.client.get('/messages', { anchor: 'newest', narrow: [['channels', 'private']] }), 'unknown channels operand private');
  });

  test('with: the current conversation of a message; inaccessible targets', async () => {
    const s = server();
    const w = await setup(s);
    const { hamlet, othello, moderator } = s.cast;
    assert.deepEqual(await newest(othello.client, [{ operator: 'with', operand: w.o1 }]), [w.h1, w.o1]);
    // The target's conversation replaces channel/topic terms given alongside it.
    assert.deepEqual(await newest(othello.client, [['channel', w.other], ['topic', 'moat'], ['with', String(w.h1)]]), [w.h1, w.o1]);
    assert.deepEqual(await newest(othello.client, [{ operator: 'with', operand: w.dm }]), [w.dm]);
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'with', operand: w.selfDm }]), [w.selfDm]);
    // Moderator cannot read the DM: ignored when the rest names a conversation, an error otherwise.
    assert.deepEqual(await newest(moderator.client, [{ operator: 'dm', operand: [hamlet.user.id] }, { operator: 'with', operand: w.dm }]), []);
    assertNarrowError(await moderator.client.get('/messages', { anchor: 'newest', narrow: [{ operator: 'with', operand: w.dm }] }), "Invalid 'with' operator");
    assertNarrowError(await othello.client.get('/messages', { anchor: 'newest', narrow: [['with', 'x']] }), "Invalid 'with' operator");
    const dup = await othello.client.get('/messages', { anchor: 'newest', narrow: [['with', String(w.h1)], ['with', String(w.o1)]] });
    assert.equal(dup.status, 400);
    assert.deepEqual(dup.body, {
      result: 'error',
      code: 'BAD_NARROW',
      msg: "Invalid narrow operator combination: Duplicate 'with' operators.",
      desc: "Duplicate 'with' operators.",
    });
  });

  test('has:link, has:image, has:attachment, has:reaction', async () => {
    const s = server();
    const w = await setup(s);
    const { hamlet } = s.cast;
    const db = s.app.services.db.kysely;
    await db.updateTable('messages').set({ has_link: 1, has_image: 1 }).where('id', '=', w.o1).execute();
    await db.updateTable('messages').set({ has_attachment: 1 }).where('id', '=', w.o2).execute();
    await db.insertInto('reactions').values({ message_id: w.h1, user_id: hamlet.user.id, emoji_name: 'smile', emoji_code: '1f642', reaction_type: 'unicode_emoji' }).execute();
    const inChannel = { operator: 'channel', operand: w.streamId };
    assert.deepEqual(await newest(hamlet.client, [inChannel, ['has', 'link']]), [w.o1]);
    assert.deepEqual(await newest(hamlet.client, [inChannel, ['has', 'image']]), [w.o1]);
    assert.deepEqual(await newest(hamlet.client, [inChannel, ['has', 'attachment']]), [w.o2]);
    assert.deepEqual(await newest(hamlet.client, [inChannel, ['has', 'reaction']]), [w.h1]);
    assert.deepEqual(await newest(hamlet.client, [inChannel, { operator: 'has', operand: 'reaction', negated: true }]), [w.o1, w.o2]);
    const body = await getMessages(hamlet.client, { anchor: w.h1, num_before: 0, num_after: 0, narrow: [inChannel, ['has', 'reaction']] });
    assert.deepEqual(body.messages[0].reactions, [{ emoji_name: 'smile', emoji_code: '1f642', reaction_type: 'unicode_emoji', user_id: hamlet.user.id }]);
    assertNarrowError(await hamlet.client.get('/messages', { anchor: 'newest', narrow: [['has', 'video']] }), "unknown 'has' operand video");
  });

  test('mentions: messages with a visible personal mention of the user', async () => {
    const s = server();
    const w = await setup(s);
    const { hamlet, othello } = s.cast;
    const db = s.app.services.db.kysely;
    await db
      .updateTable('messages')
      .set({ rendered_content: `<p><span class="user-mention" data-user-id="${othello.user.id}">@Othello</span> hi</p>` })
      .where('id', '=', w.h1)
      .execute();
    await db
      .updateTable('messages')
      .set({ rendered_content: `<p><span class="user-mention silent" data-user-id="${othello.user.id}">Othello</span></p>` })
      .where('id', '=', w.o2)
      .execute();
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'channel', operand: w.name }, { operator: 'mentions', operand: othello.user.id }]), [w.h1]);
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'channel', operand: w.name }, { operator: 'mentions', operand: othello.user.email }]), [w.h1]);
  });

  test('search: stemmed words in content or topic, quoted phrases, highlights; stop words alone match nothing', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = unique('Searching');
    await createChannel(s, hamlet, name, { members: [othello.user] });
    const a = await sendToChannel(hamlet.client, name, 'meetings', 'We were talking about the budget');
    const b = await sendToChannel(hamlet.client, name, 'lunch', 'Talks resume after lunch, budget later');
    const c = await sendToChannel(hamlet.client, name, 'lunch', 'nothing relevant here');
    const inChannel = { operator: 'channel', operand: name };
    const search = searchIn(othello.client, name);
    assert.deepEqual(await search('talk'), [a, b]);
    assert.deepEqual(await search('BUDGET talking'), [a, b]);
    assert.deepEqual(await search('meeting'), [a]);
    assert.deepEqual(await search('lunch'), [b, c]);
    assert.deepEqual(await search('"budget later"'), [b]);
    assert.deepEqual(await search('"later budget"'), []);
    assert.deepEqual(await search('the'), []);
    assert.deepEqual(await newest(othello.client, [inChannel, ['search', 'budget'], ['search', 'lunch']]), [b]);
    const byIds = await getMessages(othello.client, { message_ids: [a, b, c], narrow: [['search', 'talk']] });
    assert.deepEqual(byIds.messages.map((m: { id: number }) => m.id), [a, b]);
    assert.match(byIds.messages[1].match_content, /<span class="highlight">Talks<\/span>/);
    // Without a channel term, search covers the reader's own messages only.
    assert.deepEqual(await newest(s.cast.moderator.client, [['search', 'budget talking']]), []);
    const body = await getMessages(othello.client, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [inChannel, ['search', 'talk meeting']] });
    assert.deepEqual(body.messages.map((m: { id: number }) => m.id), [a]);
    const row = await s.app.services.db.kysely.selectFrom('messages').select('rendered_content').where('id', '=', a).executeTakeFirstOrThrow();
    assert.equal(body.messages[0].match_content, row.rendered_content.replace('talking', '<span class="highlight">talking</span>'));
    assert.equal(body.messages[0].match_subject, '<span class="highlight">meetings</span>');
    err(await othello.client.get('/messages', { anchor: 'newest', narrow: [{ operator: 'search', operand: '' }] }), 400, 'BAD_REQUEST', 'operand cannot be blank.');
  });

  test('search follows edits: new words of the content and topic match, the old ones no longer do', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = unique('Search edits');
    await createChannel(s, hamlet, name, { members: [othello.user] });
    const id = await sendToChannel(hamlet.client, name, 'harbour', 'the lighthouse keeper');
    const search = searchIn(othello.client, name);
    const anywhere = async (q: string) => newest(othello.client, [{ operator: 'search', operand: q }]);
    assert.deepEqual(await search('lighthouse'), [id]);
    assert.deepEqual(await search('harbour'), [id]);
    ok(await hamlet.client.patch(`/messages/${id}`, { content: 'the windmill miller' }));
    assert.deepEqual(await search('lighthouse'), []);
    assert.deepEqual(await anywhere('lighthouse'), []);
    assert.deepEqual(await search('windmill'), [id]);
    assert.deepEqual(await anywhere('windmill'), [id]);
    // Without the Notification Bot's notice, whose link names the old topic.
    ok(await hamlet.client.patch(`/messages/${id}`, { topic: 'meadow', propagate_mode: 'change_one', send_notification_to_new_thread: false }));
    assert.deepEqual(await search('harbour'), []);
    assert.deepEqual(await search('meadow windmill'), [id]);
    assert.deepEqual(await anywhere('meadow'), [id]);
  });

  test('invalid narrows: Zulip errors', async () => {
    const s = server();
    const w = await setup(s);
    const { hamlet } = s.cast;
    const get = (narrow: unknown) => hamlet.client.get('/messages', { anchor: 'newest', num_before: 1, narrow: narrow as never });
    assertNarrowError(await get([['nonsense', 'x']]), 'unknown operator nonsense');
    assertNarrowError(await get([['channel', 'no such channel']]), 'unknown channel no such channel');
    assertNarrowError(await get([{ operator: 'channel', operand: 999999 }]), 'unknown channel 999999');
    assertNarrowError(await get([['is', 'happy']]), "unknown 'is' operand happy");
    assertNarrowError(await get([['in', 'out']]), "unknown 'in' operand out");
    assertNarrowError(await get([['channel', w.name], ['dm', s.cast.othello.user.email]]), 'No message can be both a channel message and direct message');
    assertNarrowError(await get([['topic', 'x'], ['is', 'dm']]), 'No message can be both a channel message and direct message');
    // A negated term does not conflict.
    assert.deepEqual(await newest(hamlet.client, [{ operator: 'channel', operand: w.name, negated: true }, { operator: 'dm', operand: [s.cast.othello.user.id] }]), [w.dm]);
    const bad = (narrow: unknown, msg: string) => get(narrow).then((res) => err(res, 400, 'BAD_REQUEST', msg));
    await bad([[], []], 'Invalid narrow[0]: Value error, element is not a string pair');
    await bad([['channel', 5]], 'Invalid narrow[0]: Value error, element is not a string pair');
    await bad(['channel'], 'Invalid narrow[0]: Value error, dict or list required');
    await bad([{ operator: null, operand: 'x' }], 'Invalid narrow[0]: Value error, operator is missing');
    await bad([{ operator: 'channel' }], 'Invalid narrow[0]: Value error, operand is missing');
    await bad([{ operator: 'topic', operand: 5 }], 'operand is not a string');
    await bad([{ operator: 'sender', operand: [5] }], 'operand is not a string or integer');
    await bad([{ operator: 'dm', operand: {} }], 'operand is not a string or an integer list');
    await bad([{ operator: 'dm', operand: ['a'] }], 'operand[0] is not an integer');
    await bad([{ operator: 'topic', operand: 'x', negated: 'yes' }], 'negated is not a boolean');
  });
});
