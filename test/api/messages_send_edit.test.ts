import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents } from '../helpers/bus.js';
import { FLAG_BITS } from '../../src/lib/message_flags.js';
import { registerQueue, type TestQueue } from '../helpers/events.js';
import { fetchSystemBot } from '../../src/lib/system_bots.js';
import { realmUrl } from '../../src/lib/urls.js';
import type { ApiClient } from '../helpers/client.js';
import { createChannel, sendDirect, sendStream, setRealmSettings, setUserSettings, uniqueName, userMessageFlags } from './messages_send.fixtures.js';

const row = (s: TestServer, id: number) => s.app.services.db.kysely.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const age = (s: TestServer, id: number, seconds: number) =>
  s.app.services.db.kysely.updateTable('messages').set({ date_sent: Math.floor(Date.now() / 1000) - seconds }).where('id', '=', id).execute();
/** A topic's messages as `[sender_id, raw content]`, oldest first. */
const topicMessages = async (client: ApiClient, channel: string, topic: string): Promise<[number, string][]> =>
  (
    ok(
      await client.get('/messages', {
        anchor: 'newest',
        num_before: 100,
        num_after: 0,
        apply_markdown: false,
        narrow: [
          { operator: 'channel', operand: channel },
          { operator: 'topic', operand: topic },
        ],
      }),
    ).messages as { sender_id: number; content: string }[]
  ).map((m) => [m.sender_id, m.content]);
/** The next `message` event a queue receives, as [sender, channel, topic, raw content, flags]. */
const nextMessage = async (q: TestQueue) => {
  const e = await q.next('message');
  return [e.message.sender_id, e.message.stream_id, e.message.subject, e.message.content, e.flags];
};
/** Waits for message `id` on `q`, dropping it and every event before it. */
const drainThrough = (q: TestQueue, id: number) => q.through((e) => e.type === 'message' && e.message.id === id);
/** Hamlet sends othello a marker DM: no other message reaches othello's queue `q` before it (no wall-clock window). */
async function expectNoMessage(s: TestServer, q: TestQueue): Promise<void> {
  const marker = await sendDirect(s.cast.hamlet.client, [s.cast.othello.user.id], 'marker');
  assert.deepEqual((await q.upTo((e) => e.type === 'message' && e.message.id === marker)).filter((e) => e.type === 'message'), []);
}

forEachDatabase('PATCH and DELETE /messages/{message_id}', (server) => {
  test('the sender edits content: stored with history, flags recomputed, update_message event', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = uniqueName('Edits');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const id = await sendStream(hamlet.client, name, 'drafts', 'first *draft*');
    const before = await row(s, id);
    const { result, events } = await captureEvents(s, () => hamlet.client.patch(`/messages/${id}`, { content: `second, for @**${othello.user.full_name}**` }));
    assert.deepEqual(ok(result).detached_uploads, []);
    assertConforms(result, 'PATCH', '/messages/{message_id}');
    const after = await row(s, id);
    assert.equal(after.content, `second, for @**${othello.user.full_name}**`);
    assert.match(after.rendered_content, /class="user-mention"/);
    assert.equal(typeof after.last_edit_time, 'number');
    assert.equal(after.last_moved_time, null);
    assert.equal(await userMessageFlags(s, othello.user.id, id), FLAG_BITS.mentioned);

    const [env] = events.filter((e) => e.event.type === 'update_message');
    const event = env!.event;
    assert.equal(event.user_id, hamlet.user.id);
    assert.equal(event.message_id, id);
    assert.deepEqual(event.message_ids, [id]);
    assert.equal(event.rendering_only, false);
    assert.equal(event.stream_id, stream.id);
    assert.equal(event.stream_name, name);
    assert.equal(event.orig_content, 'first *draft*');
    assert.equal(event.orig_rendered_content, before.rendered_content);
    assert.equal(event.content, after.content);
    assert.equal(event.rendered_content, after.rendered_content);
    assert.equal(event.is_me_message, false);
    assert.equal(event.subject, undefined);
    assert.deepEqual(env!.users, [
      { id: hamlet.user.id, flags: [] },
      { id: othello.user.id, flags: ['mentioned'] },
    ].sort((a, b) => a.id - b.id));
    assertEventConforms({ ...event, flags: ['mentioned'] });

    const fetched = ok(await othello.client.get(`/messages/${id}`));
    assert.equal(fetched.message.last_edit_timestamp, after.last_edit_time);
    assert.equal(fetched.message.edit_history.length, 1);
    assert.deepEqual(Object.keys(fetched.message.edit_history[0]).sort(), ['prev_content', 'prev_rendered_content', 'timestamp', 'user_id']);
    assert.equal(fetched.message.edit_history[0].prev_content, 'first *draft*');

    // Emptying a message leaves "(deleted)", as zulip-mobile expects.
    ok(await hamlet.client.patch(`/messages/${id}`, { content: '  ' }));
    assert.equal((await row(s, id)).content, '(deleted)');
    assert.equal(await userMessageFlags(s, othello.user.id, id), 0);
  });

  test('content edit rules: only the sender, within the time limit, while editing is allowed', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const id = await sendDirect(hamlet.client, [othello.user.id], 'mine');
    err(await othello.client.patch(`/messages/${id}`, { content: 'theirs' }), 400, 'BAD_REQUEST', "You don't have permission to edit this message");
    err(await admin.client.patch(`/messages/${id}`, { content: 'x' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    err(await hamlet.client.patch(`/messages/${id}`), 400, 'BAD_REQUEST', 'Nothing to change');
    err(await hamlet.client.patch(`/messages/${id}`, { topic: 'dm topic' }), 400, 'BAD_REQUEST', 'Direct messages cannot have topics.');
    err(await hamlet.client.patch(`/messages/${id}`, { content: 'x', propagate_mode: 'change_all' }), 400, 'BAD_REQUEST', 'Invalid propagate_mode without topic edit');
    err(await hamlet.client.patch(`/messages/${id}`, { content: 'x', propagate_mode: 'change_some' }), 400, 'BAD_REQUEST', 'Invalid propagate_mode');
    err(await hamlet.client.patch(`/messages/${id}`, { content: 'x', prev_content_sha256: 'abc' }), 400, 'BAD_REQUEST');
    const { createHash } = await import('node:crypto');
    ok(await hamlet.client.patch(`/messages/${id}`, { content: 'checked', prev_content_sha256: createHash('sha256').update('mine').digest('hex') }));
    await age(s, id, 600 + 21);
    err(await hamlet.client.patch(`/messages/${id}`, { content: 'late' }), 400, 'BAD_REQUEST', 'The time limit for editing this message has passed');
    await age(s, id, 600 + 19);
    ok(await hamlet.client.patch(`/messages/${id}`, { content: 'just in time' }));
    await setRealmSettings(s, { allow_message_editing: false });
    try {
      err(await hamlet.client.patch(`/messages/${id}`, { content: 'x' }), 400, 'BAD_REQUEST', 'Your organization has turned off message editing');
    } finally {
      await setRealmSettings(s, { allow_message_editing: true });
    }
  });

  test('topic moves: change_one, change_later, change_all, resolving', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = uniqueName('Moves');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const ids: number[] = [];
    for (let i = 0; i < 4; i++) ids.push(await sendStream(i % 2 ? othello.client : hamlet.client, name, 'old', `m${i}`));
    const topicOf = async (id: number) => (await row(s, id)).topic;

    const one = await captureEvents(s, () => othello.client.patch(`/messages/${ids[1]}`, { topic: 'single' }));
    ok(one.result);
    assert.deepEqual(await Promise.all(ids.map(topicOf)), ['old', 'single', 'old', 'old']);
    const event = one.events.find((e) => e.event.type === 'update_message')!.event;
    assert.equal(event.orig_subject, 'old');
    assert.equal(event.subject, 'single');
    assert.equal(event.propagate_mode, 'change_one');
    assert.deepEqual(event.message_ids, [ids[1]]);
    assert.deepEqual(event.topic_links, []);
    assert.equal(event.content, undefined);
    assertEventConforms({ ...event, flags: [] });
    const moved = await row(s, ids[1]!);
    assert.equal(moved.last_edit_time, null);
    assert.equal(typeof moved.last_moved_time, 'number');
    const fetched = ok(await hamlet.client.get(`/messages/${ids[1]}`));
    assert.equal(fetched.message.last_moved_timestamp, moved.last_moved_time);
    assert.equal(fetched.message.last_edit_timestamp, undefined);
    assert.deepEqual(
      fetched.message.edit_history.map((h: Record<string, unknown>) => [h.prev_topic, h.topic, h.user_id]),
      [['old', 'single', othello.user.id]],
    );

    const later = await captureEvents(s, () => hamlet.client.patch(`/messages/${ids[2]}`, { topic: 'later', propagate_mode: 'change_later' }));
    ok(later.result);
    assert.deepEqual(await Promise.all(ids.map(topicOf)), ['old', 'single', 'later', 'later']);
    assert.deepEqual(later.events.find((e) => e.event.type === 'update_message')!.event.message_ids, [ids[2], ids[3]]);

    // Content can change with the topic, but only the sender's: ids[3] is Othello's.
    err(await hamlet.client.patch(`/messages/${ids[3]}`, { topic: 'everything', content: 'not mine' }), 400, 'BAD_REQUEST', "You don't have permission to edit this message");
    ok(await hamlet.client.patch(`/messages/${ids[2]}`, { subject: 'everything', propagate_mode: 'change_all', content: 'edited too' }));
    assert.deepEqual(await Promise.all(ids.map(topicOf)), ['old', 'single', 'everything', 'everything']);
    assert.equal((await row(s, ids[2]!)).content, 'edited too');
    const both = ok(await hamlet.client.get(`/messages/${ids[2]}`)).message.edit_history[0];
    assert.deepEqual([both.prev_topic, both.topic, both.prev_content], ['later', 'everything', 'm2']);
    const other = ok(await hamlet.client.get(`/messages/${ids[3]}`)).message.edit_history[0];
    assert.deepEqual([other.prev_topic, other.topic, other.prev_content], ['later', 'everything', undefined]);

    // Resolving is not a move.
    ok(await hamlet.client.patch(`/messages/${ids[0]}`, { topic: '✔ old', propagate_mode: 'change_all' }));
    assert.equal(await topicOf(ids[0]!), '✔ old');
    assert.equal((await row(s, ids[0]!)).last_moved_time, null);
    // The same topic again changes nothing.
    err(await hamlet.client.patch(`/messages/${ids[0]}`, { topic: '✔ old' }), 400, 'BAD_REQUEST', 'Nothing to change');
    assert.ok(stream.id);
  });

  test('move notifications: the Notification Bot in the new topic by default, in the old one when asked, in Zulip\u2019s words', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const bot = (await fetchSystemBot(s.app.services.db.kysely, s.config, s.realm, 'notification')).id;
    const name = uniqueName('Breadcrumbs');
    const channel = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const dest = uniqueName('Elsewhere');
    const other = await createChannel(s, dest, { subscribers: [hamlet.user, othello.user] });
    const by = `@_**${hamlet.user.full_name}|${hamlet.user.id}**`;
    const q = await registerQueue(othello.client, { event_types: ['message'], apply_markdown: false });

    // A whole topic, defaults: only the new topic hears of it; unread for others, read for the mover.
    const a = await sendStream(hamlet.client, name, 'plans', 'a');
    await drainThrough(q, await sendStream(othello.client, name, 'plans', 'b'));
    const whole = await captureEvents(s, () => hamlet.client.patch(`/messages/${a}`, { topic: 'schedule', propagate_mode: 'change_all' }));
    ok(whole.result);
    const text = `This topic was moved here from #**${name}>plans** by ${by}.`;
    assert.deepEqual(await nextMessage(q), [bot, channel.id, 'schedule', text, []]);
    const sent = whole.events.find((e) => e.event.type === 'message')!;
    assert.deepEqual(sent.users.find((u) => typeof u !== 'number' && u.id === hamlet.user.id), { id: hamlet.user.id, flags: ['read'] });
    assert.deepEqual((await topicMessages(hamlet.client, name, 'schedule')).at(-1), [bot, text]);
    assert.deepEqual(await topicMessages(hamlet.client, name, 'plans'), []);
    const html = (sent.event.message as { content: string }).content;
    assert.match(html, /<a class="stream-topic" data-stream-id="\d+" href="\/#narrow\/channel\/\d+-[^"]+\/topic\/plans">#[^<]+ &gt; plans<\/a>/);
    assert.match(html, new RegExp(`<span class="user-mention silent" data-user-id="${hamlet.user.id}">${hamlet.user.full_name}</span>`));

    // Part of a topic, both notices asked for: counted in both.
    const ids: number[] = [];
    for (const c of ['c', 'd', 'e']) ids.push(await sendStream(hamlet.client, name, 'split', c));
    await drainThrough(q, ids[2]!);
    ok(await hamlet.client.patch(`/messages/${ids[1]}`, { topic: 'later', propagate_mode: 'change_later', send_notification_to_old_thread: true }));
    assert.deepEqual(await nextMessage(q), [bot, channel.id, 'later', `2 messages were moved here from #**${name}>split** by ${by}.`, []]);
    assert.deepEqual(await nextMessage(q), [bot, channel.id, 'split', `2 messages were moved from this topic to #**${name}>later** by ${by}.`, []]);

    // One message into a topic that has others: linked, as Zulip links it.
    ok(await hamlet.client.patch(`/messages/${ids[0]}`, { topic: 'schedule', send_notification_to_old_thread: true }));
    const url = `${realmUrl(s.config, s.realm)}/#narrow/channel/${channel.id}-${name.replace(/ /g, '-')}/topic/schedule/near/${ids[0]}`;
    assert.deepEqual(await nextMessage(q), [bot, channel.id, 'schedule', `[A message](${url}) was moved here from #**${name}>split** by ${by}.`, []]);
    assert.deepEqual(await nextMessage(q), [bot, channel.id, 'split', `A message was moved from this topic to #**${name}>schedule** by ${by}.`, []]);

    // No notice for the new topic when declined.
    const lone = await sendStream(hamlet.client, name, 'quiet', 'f');
    await drainThrough(q, lone);
    ok(await hamlet.client.patch(`/messages/${lone}`, { topic: 'hushed', send_notification_to_new_thread: false }));
    await expectNoMessage(s, q);
    assert.deepEqual(await topicMessages(hamlet.client, name, 'hushed'), [[hamlet.user.id, 'f']]);

    // A whole topic to another channel, old notice asked for: both channels' topics linked.
    ok(await hamlet.client.patch(`/messages/${ids[1]}`, { stream_id: other.id, propagate_mode: 'change_all', send_notification_to_old_thread: true }));
    assert.deepEqual(await nextMessage(q), [bot, other.id, 'later', `This topic was moved here from #**${name}>later** by ${by}.`, []]);
    assert.deepEqual(await nextMessage(q), [bot, channel.id, 'later', `This topic was moved to #**${dest}>later** by ${by}.`, []]);
    assert.deepEqual((await topicMessages(othello.client, dest, 'later')).map(([sender]) => sender), [hamlet.user.id, hamlet.user.id, bot, bot]);

    // A content edit sends nothing, whatever it asks for.
    ok(await hamlet.client.patch(`/messages/${lone}`, { content: 'g', send_notification_to_old_thread: true, send_notification_to_new_thread: true }));
    await expectNoMessage(s, q);
    await q.delete();
  });

  test('resolve notifications: "has marked this topic as resolved/unresolved", a quick undo deletes the notice', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const bot = (await fetchSystemBot(s.app.services.db.kysely, s.config, s.realm, 'notification')).id;
    const name = uniqueName('Resolutions');
    const channel = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const by = `@_**${hamlet.user.full_name}|${hamlet.user.id}**`;
    await setUserSettings(s, othello.user, { resolved_topic_notice_auto_read_policy: 'never' });
    const q = await registerQueue(othello.client, { event_types: ['message', 'delete_message'], apply_markdown: false, client_capabilities: { bulk_message_deletion: true } });

    const first = await sendStream(hamlet.client, name, 'bug', 'broken');
    await drainThrough(q, await sendStream(othello.client, name, 'bug', 'fixed'));
    ok(await hamlet.client.patch(`/messages/${first}`, { topic: '✔ bug', propagate_mode: 'change_all' }));
    assert.deepEqual(await nextMessage(q), [bot, channel.id, '✔ bug', `${by} has marked this topic as resolved.`, []]);
    // No "moved here" besides it.
    await expectNoMessage(s, q);
    const [, , notice] = (await topicMessages(othello.client, name, '✔ bug')).map(([sender]) => sender);
    assert.equal(notice, bot);
    const noticeId = (
      ok(await othello.client.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'channel', operand: name }] })).messages as { id: number }[]
    )[0]!.id;
    assert.equal(await userMessageFlags(s, hamlet.user.id, noticeId), FLAG_BITS.read);
    assert.equal(await userMessageFlags(s, othello.user.id, noticeId), 0);

    // Undone within the grace period: the notice goes, none comes.
    ok(await hamlet.client.patch(`/messages/${first}`, { topic: 'bug', propagate_mode: 'change_all' }));
    const deleted = await q.next('delete_message');
    assert.deepEqual(deleted.message_ids, [noticeId]);
    await expectNoMessage(s, q);
    assert.deepEqual((await topicMessages(othello.client, name, 'bug')).map(([sender]) => sender), [hamlet.user.id, othello.user.id]);

    // Later, each toggle has its notice; the default policy leaves it read for non-followers.
    await setUserSettings(s, othello.user, { resolved_topic_notice_auto_read_policy: 'except_followed' });
    ok(await hamlet.client.patch(`/messages/${first}`, { topic: '✔ bug', propagate_mode: 'change_all' }));
    const resolved = await q.next('message');
    assert.deepEqual([resolved.message.content, resolved.flags], [`${by} has marked this topic as resolved.`, ['read']]);
    await age(s, resolved.message.id, 61);
    ok(await hamlet.client.patch(`/messages/${first}`, { topic: 'bug', propagate_mode: 'change_all' }));
    assert.deepEqual(await nextMessage(q), [bot, channel.id, 'bug', `${by} has marked this topic as unresolved.`, ['read']]);
    assert.deepEqual((await topicMessages(othello.client, name, 'bug')).map(([, content]) => content), [
      'broken',
      'fixed',
      `${by} has marked this topic as resolved.`,
      `${by} has marked this topic as unresolved.`,
    ]);

    // Resolving while editing the content posts no notice at all, as in Zulip.
    const typo = await sendStream(hamlet.client, name, 'typo', 'teh');
    await drainThrough(q, typo);
    ok(await hamlet.client.patch(`/messages/${typo}`, { topic: '✔ typo', content: 'the' }));
    await expectNoMessage(s, q);
    await q.delete();
  });

  test('topic move permissions and limits', async () => {
    const s = server();
    const { hamlet, othello, moderator, guest } = s.cast;
    const g = (await s.app.services.db.kysely.selectFrom('user_groups').select(['id', 'name']).where('realm_id', '=', s.realm.id).where('is_system_group', '=', 1).execute()).reduce(
      (acc, r) => ({ ...acc, [r.name]: r.id }),
      {} as Record<string, number>,
    );
    const name = uniqueName('Guarded moves');
    await createChannel(s, name, { subscribers: [hamlet.user, othello.user, moderator.user, guest.user] });
    const id = await sendStream(hamlet.client, name, 'stay', 'x');
    await setRealmSettings(s, { can_move_messages_between_topics_group: g['role:moderators'] });
    try {
      err(await othello.client.patch(`/messages/${id}`, { topic: 'moved' }), 400, 'BAD_REQUEST', "You don't have permission to edit this message");
      ok(await moderator.client.patch(`/messages/${id}`, { topic: 'moved by moderator' }));
    } finally {
      await setRealmSettings(s, { can_move_messages_between_topics_group: g['role:everyone'] });
    }
    await age(s, id, 8 * 86400);
    err(await othello.client.patch(`/messages/${id}`, { topic: 'too late' }), 400, 'BAD_REQUEST', "The time limit for editing this message's topic has passed.");
    ok(await moderator.client.patch(`/messages/${id}`, { topic: 'moderators have no limit' }));
    await setRealmSettings(s, { topics_policy: 'disable_empty_topic' });
    try {
      err(await hamlet.client.patch(`/messages/${id}`, { topic: '' }), 400, 'BAD_REQUEST', 'Sending messages to the general chat topic is not allowed in this channel.');
    } finally {
      await setRealmSettings(s, { topics_policy: 'allow_empty_topic' });
    }
  });

  test('moving a topic to another channel: copies follow the subscribers, first_message_id follows the messages', async () => {
    const s = server();
    const { hamlet, othello, admin, moderator } = s.cast;
    const from = await createChannel(s, uniqueName('From'), { subscribers: [hamlet.user, othello.user, admin.user] });
    const to = await createChannel(s, uniqueName('To'), { subscribers: [hamlet.user, admin.user, moderator.user] });
    const a = await sendStream(hamlet.client, from.id, 'travel', 'a');
    const b = await sendStream(othello.client, from.id, 'travel', 'b');
    const stay = await sendStream(hamlet.client, from.id, 'home', 'c');
    const { result, events } = await captureEvents(s, () =>
      hamlet.client.patch(`/messages/${a}`, { stream_id: to.id, propagate_mode: 'change_all', topic: 'arrived' }),
    );
    ok(result);
    for (const id of [a, b]) {
      const r = await row(s, id);
      assert.equal(r.stream_id, to.id);
      assert.equal(r.topic, 'arrived');
      assert.equal(typeof r.last_moved_time, 'number');
    }
    assert.equal(await userMessageFlags(s, othello.user.id, a), undefined);
    assert.equal(await userMessageFlags(s, moderator.user.id, b), FLAG_BITS.read);
    assert.equal(await userMessageFlags(s, admin.user.id, b), 0);
    const update = events.find((e) => e.event.type === 'update_message')!;
    assert.equal(update.event.stream_id, from.id);
    assert.equal(update.event.new_stream_id, to.id);
    assert.equal(update.event.orig_subject, 'travel');
    assert.equal(update.event.subject, 'arrived');
    assert.equal(update.event.propagate_mode, 'change_all');
    assert.deepEqual(update.event.message_ids, [a, b]);
    assert.ok(!update.users.some((u) => typeof u !== 'number' && u.id === othello.user.id));
    assert.deepEqual(update.users.find((u) => typeof u !== 'number' && u.id === moderator.user.id), { id: moderator.user.id, flags: ['read'] });
    assertEventConforms({ ...update.event, flags: [] });
    // The destination is public, so Othello can still read the messages: no deletion event.
    assert.equal(events.filter((e) => e.event.type === 'delete_message').length, 0);
    const firsts = events.filter((e) => e.event.type === 'stream').map((e) => [e.event.stream_id, e.event.value]);
    assert.deepEqual(firsts, [[from.id, stay], [to.id, a]]);
    const history = ok(await hamlet.client.get(`/messages/${b}`)).message.edit_history[0];
    assert.deepEqual([history.prev_stream, history.stream, history.prev_topic, history.topic], [from.id, to.id, 'travel', 'arrived']);

    // Into a private channel: those left behind lose the messages entirely.
    const secret = await createChannel(s, uniqueName('Vault'), { inviteOnly: true, subscribers: [hamlet.user] });
    const lost = await captureEvents(s, () => hamlet.client.patch(`/messages/${stay}`, { stream_id: secret.id }));
    ok(lost.result);
    const deletion = lost.events.find((e) => e.event.type === 'delete_message')!;
    assert.deepEqual(deletion.event, { type: 'delete_message', message_ids: [stay], message_type: 'stream', stream_id: from.id, topic: 'home' });
    assert.deepEqual(deletion.users.sort(), [othello.user.id, admin.user.id].sort((x, y) => x - y));
    assert.equal((await row(s, stay)).topic, 'home');
  });

  test('moving a whole topic moves its visibility policies; moving part of it does not', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = uniqueName('Policies');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const first = await sendStream(hamlet.client, name, 'watched', 'a');
    await sendStream(hamlet.client, name, 'watched', 'b');
    ok(await othello.client.post('/user_topics', { stream_id: stream.id, topic: 'watched', visibility_policy: 1 }));
    const policies = async (topic: string) =>
      (await s.app.services.db.kysely.selectFrom('user_topics').select(['user_id', 'visibility_policy']).where('stream_id', '=', stream.id).where('topic_lc', '=', topic).orderBy('user_id').execute()).map(
        (r) => [r.user_id, r.visibility_policy],
      );
    ok(await hamlet.client.patch(`/messages/${first}`, { topic: 'part' }));
    assert.deepEqual(await policies('part'), []);
    const { events } = await captureEvents(s, () => hamlet.client.patch(`/messages/${first + 1}`, { topic: 'renamed', propagate_mode: 'change_all' }));
    // Hamlet follows the topic he started; Othello muted it.
    assert.deepEqual(await policies('renamed'), [[hamlet.user.id, 3], [othello.user.id, 1]].sort((x, y) => x[0]! - y[0]!));
    assert.deepEqual(await policies('watched'), []);
    const moved = events.filter((e) => e.event.type === 'user_topic' && e.users[0] === othello.user.id).map((e) => [e.event.topic_name, e.event.visibility_policy]);
    assert.deepEqual(moved, [['renamed', 1], ['watched', 0]]);
  });

  test('channel move rules', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const from = await createChannel(s, uniqueName('Src'), { subscribers: [hamlet.user, othello.user] });
    const to = await createChannel(s, uniqueName('Dst'), { subscribers: [hamlet.user, othello.user] });
    const id = await sendStream(hamlet.client, from.id, 't', 'x');
    err(await hamlet.client.patch(`/messages/${id}`, { stream_id: to.id, content: 'y' }), 400, 'BAD_REQUEST', 'Cannot change message content while changing channel');
    err(await hamlet.client.patch(`/messages/${id}`, { stream_id: 999999 }), 400, 'BAD_REQUEST', 'Invalid channel ID');
    const dm = await sendDirect(hamlet.client, [othello.user.id], 'dm');
    err(await hamlet.client.patch(`/messages/${dm}`, { stream_id: to.id }), 400, 'BAD_REQUEST', 'Direct messages cannot be moved to channels.');
    const g = (await s.app.services.db.kysely.selectFrom('user_groups').select(['id', 'name']).where('is_system_group', '=', 1).where('realm_id', '=', s.realm.id).execute()).find((r) => r.name === 'role:administrators')!.id;
    await setRealmSettings(s, { can_move_messages_between_channels_group: g });
    try {
      err(await othello.client.patch(`/messages/${id}`, { stream_id: to.id }), 400, 'BAD_REQUEST', "You don't have permission to move this message");
    } finally {
      const members = (await s.app.services.db.kysely.selectFrom('user_groups').select(['id', 'name']).where('is_system_group', '=', 1).where('realm_id', '=', s.realm.id).execute()).find((r) => r.name === 'role:members')!.id;
      await setRealmSettings(s, { can_move_messages_between_channels_group: members });
    }
    await age(s, id, 8 * 86400);
    err(await othello.client.patch(`/messages/${id}`, { stream_id: to.id }), 400, 'BAD_REQUEST', "The time limit for editing this message's channel has passed");
    // Naming the current channel is not a move.
    err(await hamlet.client.patch(`/messages/${id}`, { stream_id: from.id }), 400, 'BAD_REQUEST', 'Nothing to change');
  });

  test('DELETE /messages/{id}: own messages within the limit, any message for administrators, delete_message event', async () => {
    const s = server();
    const { hamlet, othello, admin, bot } = s.cast;
    const dm = await sendDirect(hamlet.client, [othello.user.id], 'oops');
    err(await othello.client.delete(`/messages/${dm}`), 400, 'BAD_REQUEST', "You don't have permission to delete this message");
    const { result, events } = await captureEvents(s, () => hamlet.client.delete(`/messages/${dm}`));
    ok(result);
    assertConforms(result, 'DELETE', '/messages/{message_id}');
    const deletion = events.find((e) => e.event.type === 'delete_message')!;
    assert.deepEqual(deletion.event, { type: 'delete_message', message_ids: [dm], message_type: 'private' });
    assert.deepEqual(deletion.users, [hamlet.user.id, othello.user.id].sort((a, b) => a - b));
    assertEventConforms({ ...deletion.event });
    err(await hamlet.client.delete(`/messages/${dm}`), 400, 'BAD_REQUEST', 'Invalid message(s)');

    const name = uniqueName('Deletions');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user, bot.user] });
    const old = await sendStream(hamlet.client, name, 't', 'old news');
    await age(s, old, 601);
    err(await hamlet.client.delete(`/messages/${old}`), 400, 'BAD_REQUEST', 'The time limit for deleting this message has passed');
    const adminDelete = await captureEvents(s, () => admin.client.delete(`/messages/${old}`));
    ok(adminDelete.result);
    assert.deepEqual(adminDelete.events.find((e) => e.event.type === 'delete_message')!.event, {
      type: 'delete_message',
      message_ids: [old],
      message_type: 'stream',
      stream_id: stream.id,
      topic: 't',
    });
    // Bot owners may delete their bots' messages.
    const fromBot = await sendStream(bot.client, name, 't', 'beep');
    ok(await hamlet.client.delete(`/messages/${fromBot}`));
    await setRealmSettings(s, { message_content_delete_limit_seconds: null });
    try {
      const ancient = await sendStream(othello.client, name, 't', 'ancient');
      await age(s, ancient, 10 * 86400);
      ok(await othello.client.delete(`/messages/${ancient}`));
    } finally {
      await setRealmSettings(s, { message_content_delete_limit_seconds: 600 });
    }
  });
});
