import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { registerQueue, type TestQueue, type ZEvent } from '../helpers/events.js';
import type { ApiClient } from '../helpers/client.js';
import { doCreateUser } from '../../src/actions/users.js';
import { insertScheduledMessage, SEND_LATER, REMIND } from '../../src/db/repos/scheduled_messages.js';
import { ROLE_MEMBER } from '../../src/lib/roles.js';
import { PASSWORD } from '../helpers/server.js';

type Dict = Record<string, any>;
const nowSeconds = (): number => Math.floor(Date.now() / 1000);
const TYPES = ['scheduled_messages', 'reminders'];

/** What a client does with these events (Zulip's apply_event): a stale state so updated must equal a fresh register. */
function applyEvent(state: { scheduled_messages: Dict[]; reminders: Dict[] }, e: ZEvent): void {
  const byTime = (a: Dict, b: Dict) => a.scheduled_delivery_timestamp - b.scheduled_delivery_timestamp;
  if (e.type === 'scheduled_messages' && e.op === 'add') {
    state.scheduled_messages.push(...e.scheduled_messages);
    state.scheduled_messages.sort(byTime);
  } else if (e.type === 'scheduled_messages' && e.op === 'update') {
    const i = state.scheduled_messages.findIndex((m) => m.scheduled_message_id === e.scheduled_message.scheduled_message_id);
    state.scheduled_messages[i] = e.scheduled_message;
    state.scheduled_messages.sort(byTime);
  } else if (e.type === 'scheduled_messages' && e.op === 'remove') {
    state.scheduled_messages = state.scheduled_messages.filter((m) => m.scheduled_message_id !== e.scheduled_message_id);
  } else if (e.type === 'reminders' && e.op === 'add') {
    state.reminders.push(...e.reminders);
    state.reminders.sort(byTime);
  } else if (e.type === 'reminders' && e.op === 'remove') {
    state.reminders = state.reminders.filter((m) => m.reminder_id !== e.reminder_id);
  } else {
    assert.fail(`unexpected event ${JSON.stringify(e)}`);
  }
}

async function freshState(client: ApiClient): Promise<{ scheduled_messages: Dict[]; reminders: Dict[] }> {
  const res = await client.post('/register', { fetch_event_types: TYPES });
  assertConforms(res, 'POST', '/register');
  const body = ok(res);
  return { scheduled_messages: body.scheduled_messages, reminders: body.reminders };
}

async function subscribe(s: TestServer, client: ApiClient, name: string, principals: number[], extra: Dict = {}): Promise<number> {
  ok(await client.post('/users/me/subscriptions', { subscriptions: [{ name }], principals, ...extra }));
  return ok(await client.get('/get_stream_id', { stream: name })).stream_id;
}

/** Waits for the first event on `q` matching `m`, and checks it against zulip.yaml. */
async function nextConforming(q: TestQueue, m: (e: ZEvent) => boolean, timeoutMs = 20_000): Promise<ZEvent> {
  const e = await q.next(m, timeoutMs);
  const { id: _id, ...event } = e;
  assertEventConforms(event);
  return e;
}

forEachDatabase('scheduled messages and reminders', (server) => {
  test('POST /scheduled_messages schedules channel and direct messages; GET, register and events agree', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const streamId = await subscribe(s, hamlet.client, 'sched one', [hamlet.user.id, othello.user.id]);
    const stale = await freshState(hamlet.client);
    const q = await registerQueue(hamlet.client, { event_types: TYPES });
    const later = nowSeconds() + 3600;

    const res = await hamlet.client.post('/scheduled_messages', { type: 'channel', to: streamId, topic: 'plans', content: '**Hi** all', scheduled_delivery_timestamp: later });
    assertConforms(res, 'POST', '/scheduled_messages');
    const channelId = ok(res).scheduled_message_id;
    const dm = ok(await hamlet.client.post('/scheduled_messages', { type: 'direct', to: JSON.stringify([othello.user.id]), content: 'psst', scheduled_delivery_timestamp: later + 60 }));
    const self = ok(await hamlet.client.post('/scheduled_messages', { type: 'private', to: JSON.stringify([hamlet.user.id]), content: 'note to self', scheduled_delivery_timestamp: later - 60 }));

    const added = await nextConforming(q, (e) => e.type === 'scheduled_messages' && e.op === 'add');
    assert.deepEqual(added.scheduled_messages, [
      {
        scheduled_message_id: channelId,
        to: streamId,
        type: 'stream',
        content: '**Hi** all',
        rendered_content: '<p><strong>Hi</strong> all</p>',
        topic: 'plans',
        scheduled_delivery_timestamp: later,
        failed: false,
      },
    ]);
    const list = await hamlet.client.get('/scheduled_messages');
    assertConforms(list, 'GET', '/scheduled_messages');
    const items = ok(list).scheduled_messages as Dict[];
    // Soonest first; a DM's `to` is the other participants, or oneself alone.
    assert.deepEqual(items.map((m) => m.scheduled_message_id), [self.scheduled_message_id, channelId, dm.scheduled_message_id]);
    assert.deepEqual(items[0]!.to, [hamlet.user.id]);
    assert.deepEqual(items[2]!.to, [othello.user.id]);
    assert.equal(items[2]!.type, 'private');
    assert.equal('topic' in items[2]!, false);
    // Private to their sender.
    assert.deepEqual(ok(await othello.client.get('/scheduled_messages')).scheduled_messages, []);

    // Edit, then delete, then compare the stale state updated by events with a fresh one.
    const edit = await hamlet.client.patch(`/scheduled_messages/${channelId}`, { content: 'Hello *all*', topic: 'new plans' });
    assertConforms(edit, 'PATCH', '/scheduled_messages/{scheduled_message_id}');
    ok(edit);
    const updated = await nextConforming(q, (e) => e.type === 'scheduled_messages' && e.op === 'update');
    assert.equal(updated.scheduled_message.content, 'Hello *all*');
    assert.equal(updated.scheduled_message.rendered_content, '<p>Hello <em>all</em></p>');
    assert.equal(updated.scheduled_message.topic, 'new plans');
    ok(await hamlet.client.patch(`/scheduled_messages/${dm.scheduled_message_id}`, { type: 'stream', to: String(streamId), topic: 'moved' }));
    const moved = await nextConforming(q, (e) => e.type === 'scheduled_messages' && e.op === 'update');
    assert.equal(moved.scheduled_message.type, 'stream');
    assert.equal(moved.scheduled_message.to, streamId);
    assert.equal(moved.scheduled_message.content, 'psst');
    const del = await hamlet.client.delete(`/scheduled_messages/${self.scheduled_message_id}`);
    assertConforms(del, 'DELETE', '/scheduled_messages/{scheduled_message_id}');
    ok(del);
    const removed = await nextConforming(q, (e) => e.type === 'scheduled_messages' && e.op === 'remove');
    assert.equal(removed.scheduled_message_id, self.scheduled_message_id);

    const events = await q.collect(200);
    for (const e of [added, ...events.filter((e) => e.type === 'scheduled_messages' && e.op === 'add'), updated, moved, removed]) applyEvent(stale, e);
    assert.deepEqual(stale, await freshState(hamlet.client));
    for (const id of [channelId, dm.scheduled_message_id]) ok(await hamlet.client.delete(`/scheduled_messages/${id}`));
  });

  test('POST /scheduled_messages refuses what Zulip refuses', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const streamId = await subscribe(s, hamlet.client, 'sched errors', [hamlet.user.id]);
    const later = nowSeconds() + 3600;
    const post = (params: Dict) => hamlet.client.post('/scheduled_messages', { type: 'stream', to: streamId, topic: 't', content: 'x', scheduled_delivery_timestamp: later, ...params });
    err(await post({ scheduled_delivery_timestamp: nowSeconds() - 10 }), 400, 'BAD_REQUEST', 'Scheduled delivery time must be in the future.');
    err(await post({ type: 'broadcast' }), 400, 'BAD_REQUEST', 'Invalid type');
    err(await post({ to: 'sched errors' }), 400, 'BAD_REQUEST', 'Invalid data type for channel ID');
    const missingStream = await post({ to: 999999 });
    assertConforms(missingStream, 'POST', '/scheduled_messages');
    err(missingStream, 400, 'STREAM_DOES_NOT_EXIST', "Channel with ID '999999' does not exist");
    err(await post({ topic: undefined }), 400, 'BAD_REQUEST', 'Missing topic');
    err(await post({ content: '  ' }), 400, 'BAD_REQUEST', 'Message must not be empty');
    // (zulip.yaml's oneOf for this 400 matches this body twice, so it cannot be validated.)
    err(await post({ type: 'direct', to: JSON.stringify([999999]) }), 400, 'BAD_REQUEST', 'Invalid user ID 999999');
    err(await post({ type: 'direct', to: String(othello.user.id) }), 400, 'BAD_REQUEST', 'Invalid data type for recipients');
    err(await post({ type: 'direct', to: JSON.stringify(['othello@example.com']) }), 400, 'BAD_REQUEST', 'Recipient list may only contain user IDs');
    const missing = err(await hamlet.client.post('/scheduled_messages', { type: 'stream', to: streamId, content: 'x' }), 400, 'REQUEST_VARIABLE_MISSING');
    assert.equal(missing.var_name, 'scheduled_delivery_timestamp');
    // The send rules apply when scheduling: a guest cannot post to a channel it cannot see.
    const privateId = await subscribe(s, hamlet.client, 'sched secret', [hamlet.user.id], { invite_only: true });
    err(await s.cast.guest.client.post('/scheduled_messages', { type: 'stream', to: privateId, topic: 't', content: 'x', scheduled_delivery_timestamp: later }), 400, 'STREAM_DOES_NOT_EXIST');
    assert.deepEqual(ok(await hamlet.client.get('/scheduled_messages')).scheduled_messages, []);
  });

  test('PATCH and DELETE /scheduled_messages/{id}: Zulip errors, and only the sender reaches it', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const streamId = await subscribe(s, hamlet.client, 'sched patch', [hamlet.user.id]);
    const later = nowSeconds() + 3600;
    const { scheduled_message_id: id } = ok(
      await hamlet.client.post('/scheduled_messages', { type: 'stream', to: streamId, topic: 't', content: 'x', scheduled_delivery_timestamp: later }),
    );
    err(await hamlet.client.patch(`/scheduled_messages/${id}`, {}), 400, 'BAD_REQUEST', 'Nothing to change');
    err(await hamlet.client.patch(`/scheduled_messages/${id}`, { type: 'direct' }), 400, 'BAD_REQUEST', 'Recipient required when updating type of scheduled message.');
    err(await hamlet.client.patch(`/scheduled_messages/${id}`, { type: 'channel', to: streamId }), 400, 'BAD_REQUEST', 'Topic required when updating scheduled message type to stream.');
    err(await hamlet.client.patch(`/scheduled_messages/${id}`, { scheduled_delivery_timestamp: nowSeconds() - 1 }), 400, 'BAD_REQUEST', 'Scheduled delivery time must be in the future.');
    err(await hamlet.client.patch(`/scheduled_messages/${id}`, { type: 'direct', to: JSON.stringify([999999]) }), 400, 'BAD_REQUEST', 'Invalid user ID 999999');
    err(await hamlet.client.patch(`/scheduled_messages/${id}`, { content: '' }), 400, 'BAD_REQUEST', 'Message must not be empty');
    for (const [method, res] of [
      ['PATCH', await othello.client.patch(`/scheduled_messages/${id}`, { content: 'mine now' })],
      ['DELETE', await othello.client.delete(`/scheduled_messages/${id}`)],
      ['PATCH', await hamlet.client.patch('/scheduled_messages/999999', { content: 'y' })],
      ['DELETE', await hamlet.client.delete('/scheduled_messages/999999')],
    ] as const) {
      assertConforms(res, method, '/scheduled_messages/{scheduled_message_id}');
      err(res, 404, 'BAD_REQUEST', 'Scheduled message does not exist');
    }
    // A reminder is no scheduled message, and the other way round.
    err(await hamlet.client.delete(`/reminders/${id}`), 404, 'BAD_REQUEST', 'Reminder does not exist');
    const later2 = later + 120;
    ok(await hamlet.client.patch(`/scheduled_messages/${id}`, { scheduled_delivery_timestamp: later2 }));
    assert.equal(ok(await hamlet.client.get('/scheduled_messages')).scheduled_messages[0].scheduled_delivery_timestamp, later2);
    ok(await hamlet.client.delete(`/scheduled_messages/${id}`));
  });

  test('a message scheduled a few seconds ahead is sent once, by its sender, and leaves the list', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const streamId = await subscribe(s, hamlet.client, 'sched deliver', [hamlet.user.id, othello.user.id]);
    const watcher = await registerQueue(othello.client, { event_types: ['message'] });
    const own = await registerQueue(hamlet.client, { event_types: ['scheduled_messages', 'message'] });
    const at = nowSeconds() + 2;
    const { scheduled_message_id: id } = ok(
      await hamlet.client.post('/scheduled_messages', {
        type: 'stream',
        to: streamId,
        topic: 'soon',
        content: 'on time @**Othello, the Moor of Venice**',
        scheduled_delivery_timestamp: at,
        read_by_sender: true,
      }),
    );
    const got = await watcher.next('message', 20_000);
    assert.ok(nowSeconds() >= at, 'not sent early');
    assert.equal(got.message.sender_id, hamlet.user.id);
    assert.equal(got.message.subject, 'soon');
    assert.equal(got.message.display_recipient, 'sched deliver');
    // The send rules apply at delivery: the mention is a real one.
    assert.deepEqual(got.flags, ['mentioned']);
    const removed = await nextConforming(own, (e) => e.type === 'scheduled_messages' && e.op === 'remove');
    assert.equal(removed.scheduled_message_id, id);
    const mine = await own.next('message');
    assert.deepEqual(mine.flags, ['read']);
    await watcher.expectNone('message', 1500);
    assert.deepEqual(ok(await hamlet.client.get('/scheduled_messages')).scheduled_messages, []);
    const messages = ok(await othello.client.get('/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: JSON.stringify([{ operator: 'channel', operand: streamId }]) })).messages;
    assert.equal(messages.filter((m: Dict) => m.content.includes('on time')).length, 1);
  });

  test('a scheduled message refused at delivery is marked failed, with an update event and a Notification Bot DM', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const streamId = await subscribe(s, hamlet.client, 'sched doomed', [hamlet.user.id, othello.user.id]);
    const q = await registerQueue(hamlet.client, { event_types: ['scheduled_messages', 'message'] });
    const at = nowSeconds() + 2;
    const { scheduled_message_id: id } = ok(
      await hamlet.client.post('/scheduled_messages', { type: 'stream', to: streamId, topic: 'gone', content: 'never', scheduled_delivery_timestamp: at }),
    );
    ok(await admin.client.delete(`/streams/${streamId}`));
    const update = await nextConforming(q, (e) => e.type === 'scheduled_messages' && e.op === 'update');
    assert.equal(update.scheduled_message.scheduled_message_id, id);
    assert.equal(update.scheduled_message.failed, true);
    const notice = await q.next((e) => e.type === 'message' && e.message.sender_email.startsWith('notification-bot@'));
    assert.equal(notice.message.type, 'private');
    assert.equal(notice.message.sender_full_name, 'Notification Bot');
    const iso = new Date(at * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
    assert.match(
      notice.message.content,
      new RegExp(`^The message you scheduled for <time:${iso.replace(/\+/g, '\\+')}> was not sent because of the following error:\\n\\n> .+\\n\\n\\[View scheduled messages\\]\\(#scheduled\\)$`),
    );
    const list = ok(await hamlet.client.get('/scheduled_messages')).scheduled_messages;
    assert.deepEqual(list.map((m: Dict) => [m.scheduled_message_id, m.failed]), [[id, true]]);
    // A failed message can only be edited with a new time, which makes it pending again.
    err(await hamlet.client.patch(`/scheduled_messages/${id}`, { content: 'again' }), 400, 'BAD_REQUEST', 'Scheduled delivery time must be in the future.');
    ok(await hamlet.client.patch(`/scheduled_messages/${id}`, { scheduled_delivery_timestamp: nowSeconds() + 3600, type: 'direct', to: JSON.stringify([othello.user.id]) }));
    const again = ok(await hamlet.client.get('/scheduled_messages')).scheduled_messages[0];
    assert.equal(again.failed, false);
    assert.deepEqual(again.to, [othello.user.id]);
    ok(await hamlet.client.delete(`/scheduled_messages/${id}`));
  });

  test('refused at delivery because the sender lost access: failed, with the send error quoted to the sender', async () => {
    const s = server();
    const { hamlet, admin } = s.cast;
    const streamId = await subscribe(s, hamlet.client, 'sched private', [hamlet.user.id, admin.user.id], { invite_only: true });
    const q = await registerQueue(hamlet.client, { event_types: ['scheduled_messages', 'message'] });
    const { scheduled_message_id: id } = ok(
      await hamlet.client.post('/scheduled_messages', { type: 'stream', to: streamId, topic: 'inside', content: 'secret plans', scheduled_delivery_timestamp: nowSeconds() + 2 }),
    );
    ok(await admin.client.delete('/users/me/subscriptions', { subscriptions: JSON.stringify(['sched private']), principals: JSON.stringify([hamlet.user.id]) }));
    // What sending now would answer is what the delivery reports.
    const refusal = await hamlet.client.post('/messages', { type: 'stream', to: streamId, topic: 'inside', content: 'now' });
    assert.equal(refusal.status, 400);
    const update = await nextConforming(q, (e) => e.type === 'scheduled_messages' && e.op === 'update');
    assert.deepEqual([update.scheduled_message.scheduled_message_id, update.scheduled_message.failed], [id, true]);
    const notice = await q.next((e) => e.type === 'message' && e.message.sender_full_name === 'Notification Bot');
    assert.ok(notice.message.content.includes(`\n\n> ${refusal.body.msg}\n\n`), notice.message.content);
    const channel = ok(await admin.client.get('/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow: JSON.stringify([{ operator: 'channel', operand: streamId }]) }));
    assert.equal(channel.messages.length, 0);
    ok(await hamlet.client.delete(`/scheduled_messages/${id}`));
  });

  test('more than ten minutes late a scheduled message fails (a reminder still goes out); a deactivated sender is told nothing', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const db = s.app.services.db.kysely;
    const at = nowSeconds() - 11 * 60;
    const row = (sender: number, extra: Record<string, unknown>) => ({
      realm_id: s.realm.id,
      sender_id: sender,
      delivery_type: SEND_LATER,
      type: 'private',
      to_user_ids: JSON.stringify([othello.user.id]),
      content: 'too late',
      rendered_content: '<p>too late</p>',
      scheduled_timestamp: at,
      sending_client: 'test',
      ...extra,
    });
    const target = ok(await othello.client.post('/messages', { type: 'direct', to: JSON.stringify([hamlet.user.id]), content: 'remember me' })).id;
    const q = await registerQueue(hamlet.client, { event_types: ['scheduled_messages', 'reminders', 'message'] });
    // Rows as a process that stopped long ago left them.
    const late = await insertScheduledMessage(db, row(hamlet.user.id, {}));
    const reminder = await insertScheduledMessage(
      db,
      row(hamlet.user.id, { delivery_type: REMIND, to_user_ids: JSON.stringify([hamlet.user.id]), content: 'old text', reminder_target_message_id: target }),
    );
    // A reminder whose message is gone keeps the text it was created with.
    const orphan = await insertScheduledMessage(
      db,
      row(hamlet.user.id, { delivery_type: REMIND, to_user_ids: JSON.stringify([hamlet.user.id]), content: 'stored reminder text', reminder_target_message_id: 999999 }),
    );
    const leaver = await doCreateUser(s.app.services, s.realm, { email: `leaver-${s.kind}@example.com`, fullName: 'Leaver', password: PASSWORD, role: ROLE_MEMBER, actingUser: null });
    const gone = await insertScheduledMessage(db, row(leaver.id, { scheduled_timestamp: nowSeconds() - 5 }));
    ok(await admin.client.delete(`/users/${leaver.id}`));
    s.app.services.scheduler!.wake(nowSeconds());

    const update = await nextConforming(q, (e) => e.type === 'scheduled_messages' && e.op === 'update');
    assert.deepEqual([update.scheduled_message.scheduled_message_id, update.scheduled_message.failed], [late.id, true]);
    const messages: ZEvent[] = [await q.next('message'), await q.next('message'), await q.next('message')];
    assert.ok(messages.some((e) => e.message.content === 'stored reminder text' && e.message.sender_full_name === 'Notification Bot'));
    const notice = messages.find((e) => e.message.content.startsWith('The message you scheduled'))!;
    assert.ok(notice.message.content.includes('\n\n> Message could not be sent at the scheduled time.\n\n'), notice.message.content);
    const reminded = messages.find((e) => e.message.content.startsWith('You requested a reminder'))!;
    assert.equal(reminded.message.sender_full_name, 'Notification Bot');
    assert.match(reminded.message.content, /```quote\nremember me\n```$/);
    const removed = [await nextConforming(q, (e) => e.type === 'reminders' && e.op === 'remove'), await nextConforming(q, (e) => e.type === 'reminders' && e.op === 'remove')];
    assert.deepEqual(removed.map((e) => e.reminder_id).sort((a, b) => a - b), [reminder.id, orphan.id]);

    // The deactivated sender's row comes last (it is the latest due) and tells nobody: wait for it.
    for (let i = 0; i < 50; i++) {
      const r = await db.selectFrom('scheduled_messages').select('failed').where('id', '=', gone.id).executeTakeFirstOrThrow();
      if (Number(r.failed)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const rows = await db.selectFrom('scheduled_messages').select(['id', 'delivered', 'failed', 'failure_message']).where('id', 'in', [late.id, reminder.id, gone.id]).orderBy('id').execute();
    assert.deepEqual(
      rows.map((r) => [Number(r.id), Number(r.delivered), Number(r.failed), r.failure_message]),
      [
        [late.id, 0, 1, 'Message could not be sent at the scheduled time.'],
        [reminder.id, 1, 0, null],
        [gone.id, 0, 1, 'Account is deactivated'],
      ],
    );
    await q.expectNone('message', 500);
    ok(await hamlet.client.delete(`/scheduled_messages/${late.id}`));
  });

  test('reminders: create, list, delete, and delivery as a Notification Bot DM quoting the message', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const streamId = await subscribe(s, hamlet.client, 'Verona', [hamlet.user.id, othello.user.id]);
    const channelMsg = ok(await othello.client.post('/messages', { type: 'stream', to: streamId, topic: 'test', content: 'Test message' })).id;
    const dmMsg = ok(await othello.client.post('/messages', { type: 'direct', to: JSON.stringify([hamlet.user.id]), content: 'Psst' })).id;
    const stale = await freshState(hamlet.client);
    const q = await registerQueue(hamlet.client, { event_types: ['reminders', 'message'] });
    const later = nowSeconds() + 3600;

    err(await hamlet.client.post('/reminders', { message_id: channelMsg, scheduled_delivery_timestamp: nowSeconds() - 5 }), 400, 'BAD_REQUEST', 'Scheduled delivery time must be in the future.');
    err(await hamlet.client.post('/reminders', { message_id: 999999, scheduled_delivery_timestamp: later }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    err(await s.cast.guest.client.post('/reminders', { message_id: dmMsg, scheduled_delivery_timestamp: later }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    err(await hamlet.client.post('/reminders', { message_id: channelMsg, scheduled_delivery_timestamp: later, note: 'n'.repeat(1001) }), 400, 'BAD_REQUEST', 'Maximum reminder note length: 1000 characters');

    const created = await hamlet.client.post('/reminders', { message_id: channelMsg, scheduled_delivery_timestamp: later, note: 'Follow up\n' });
    assertConforms(created, 'POST', '/reminders');
    const reminderId = ok(created).reminder_id;
    const add = await nextConforming(q, (e) => e.type === 'reminders' && e.op === 'add');
    const base = `${s.config.externalUrl}/#narrow/channel/${streamId}-Verona/topic/test`;
    const expected =
      'You requested a reminder for the following message. Note:\n > Follow up\n\n' +
      `@_**Othello, the Moor of Venice|${othello.user.id}** [said](${base}/near/${channelMsg}) in [#Verona > test](#narrow/channel/${streamId}-Verona/topic/test/with/${channelMsg}):\n` +
      '```quote\nTest message\n```';
    assert.deepEqual(add.reminders, [
      {
        reminder_id: reminderId,
        to: [hamlet.user.id],
        type: 'private',
        content: expected,
        rendered_content: add.reminders[0].rendered_content,
        scheduled_delivery_timestamp: later,
        failed: false,
        reminder_target_message_id: channelMsg,
      },
    ]);
    assert.match(add.reminders[0].rendered_content, /<blockquote>\n<p>Test message<\/p>\n<\/blockquote>/);
    const list = await hamlet.client.get('/reminders');
    assertConforms(list, 'GET', '/reminders');
    assert.deepEqual(ok(list).reminders, add.reminders);
    assert.deepEqual(ok(await othello.client.get('/reminders')).reminders, []);
    // Reminders are not scheduled messages.
    assert.deepEqual(ok(await hamlet.client.get('/scheduled_messages')).scheduled_messages, []);
    err(await hamlet.client.delete(`/scheduled_messages/${reminderId}`), 404, 'BAD_REQUEST', 'Scheduled message does not exist');
    const missing = await othello.client.delete(`/reminders/${reminderId}`);
    assertConforms(missing, 'DELETE', '/reminders/{reminder_id}');
    err(missing, 404, 'BAD_REQUEST', 'Reminder does not exist');
    const del = await hamlet.client.delete(`/reminders/${reminderId}`);
    assertConforms(del, 'DELETE', '/reminders/{reminder_id}');
    ok(del);
    const removed = await nextConforming(q, (e) => e.type === 'reminders' && e.op === 'remove');
    assert.equal(removed.reminder_id, reminderId);
    applyEvent(stale, add);
    applyEvent(stale, removed);
    assert.deepEqual(stale, await freshState(hamlet.client));

    // A reminder about a direct message, due in two seconds.
    const at = nowSeconds() + 2;
    const dmReminder = ok(await hamlet.client.post('/reminders', { message_id: dmMsg, scheduled_delivery_timestamp: at })).reminder_id;
    const sent = await q.next((e) => e.type === 'message', 20_000);
    const ids = [hamlet.user.id, othello.user.id].sort((a, b) => a - b).join(',');
    assert.equal(sent.message.sender_full_name, 'Notification Bot');
    assert.equal(sent.message.type, 'private');
    assert.deepEqual(sent.message.display_recipient.map((r: Dict) => r.id).includes(hamlet.user.id), true);
    assert.equal(
      sent.message.content,
      'You requested a reminder for the following direct message.\n\n' +
        `@_**Othello, the Moor of Venice|${othello.user.id}** [said](${s.config.externalUrl}/#narrow/dm/${ids}/near/${dmMsg}) to @_**King Hamlet|${hamlet.user.id}**:\n` +
        '```quote\nPsst\n```',
    );
    const done = await nextConforming(q, (e) => e.type === 'reminders' && e.op === 'remove');
    assert.equal(done.reminder_id, dmReminder);
    assert.deepEqual(ok(await hamlet.client.get('/reminders')).reminders, []);
  });
}, { scheduler: { enabled: true, intervalMs: 10_000 } });
