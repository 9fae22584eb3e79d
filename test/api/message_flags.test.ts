import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents } from '../helpers/bus.js';
import { FLAG_BITS } from '../../src/lib/message_flags.js';
import { createChannel, sendDirect, sendStream, setRealmSettings, subscribe, systemGroups, uniqueName, userMessageFlags } from './messages_send.fixtures.js';

forEachDatabase('message flags', (server) => {
  test('POST /messages/flags adds and removes read and starred, with update_message_flags events', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const a = await sendDirect(hamlet.client, [othello.user.id], 'one');
    const b = await sendDirect(hamlet.client, [othello.user.id], 'two');
    const { result: res, events } = await captureEvents(s, () => othello.client.post('/messages/flags', { messages: [a, b], op: 'add', flag: 'read' }));
    assert.deepEqual(ok(res).messages, [a, b]);
    assertConforms(res, 'POST', '/messages/flags');
    assert.equal(await userMessageFlags(s, othello.user.id, a), FLAG_BITS.is_private | FLAG_BITS.read);
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.users, [othello.user.id]);
    assert.deepEqual(events[0]!.event, { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: [a, b], all: false });
    assertEventConforms({ ...events[0]!.event, id: 0 });

    // Already read: nothing changes, and the event says so.
    const again = await captureEvents(s, () => othello.client.post('/messages/flags', { messages: [a], op: 'add', flag: 'read' }));
    assert.deepEqual(again.events[0]!.event.messages, []);

    ok(await othello.client.post('/messages/flags', { messages: [b], op: 'add', flag: 'starred' }));
    assert.equal(await userMessageFlags(s, othello.user.id, b), FLAG_BITS.is_private | FLAG_BITS.read | FLAG_BITS.starred);
    const { events: unstar } = await captureEvents(s, () => othello.client.post('/messages/flags', { messages: [b], op: 'remove', flag: 'starred' }));
    assert.deepEqual(unstar[0]!.event, { type: 'update_message_flags', op: 'remove', operation: 'remove', flag: 'starred', messages: [b], all: false });
    assert.equal(await userMessageFlags(s, othello.user.id, b), FLAG_BITS.is_private | FLAG_BITS.read);
    ok(await othello.client.post('/messages/flags', { messages: [b], op: 'add', flag: 'collapsed' }));
    assert.equal(await userMessageFlags(s, othello.user.id, b), FLAG_BITS.is_private | FLAG_BITS.read | FLAG_BITS.collapsed);
  });

  test('marking unread carries message_details, and skips channels the user left', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = uniqueName('Unread');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const inChannel = await sendStream(hamlet.client, name, 'news', `hi @**${othello.user.full_name}**`);
    const dm = await sendDirect(hamlet.client, [othello.user.id], 'psst');
    ok(await othello.client.post('/messages/flags', { messages: [inChannel, dm], op: 'add', flag: 'read' }));
    const { result, events } = await captureEvents(s, () => othello.client.post('/messages/flags', { messages: [inChannel, dm], op: 'remove', flag: 'read' }));
    const body = ok(result);
    assert.deepEqual(body.ignored_because_not_subscribed_channels, []);
    assertConforms(result, 'POST', '/messages/flags');
    const event = events[0]!.event;
    assert.deepEqual(event.messages, [inChannel, dm]);
    assert.deepEqual(event.message_details, {
      [inChannel]: { type: 'stream', stream_id: stream.id, topic: 'news', unmuted_stream_msg: true, mentioned: true },
      [dm]: { type: 'private', user_ids: [hamlet.user.id] },
    });
    assertEventConforms({ ...event, id: 0 });

    // After unsubscribing, channel messages stay read.
    ok(await othello.client.post('/messages/flags', { messages: [inChannel], op: 'add', flag: 'read' }));
    await s.app.services.db.kysely.updateTable('subscriptions').set({ active: 0 }).where('user_id', '=', othello.user.id).where('stream_id', '=', stream.id).execute();
    const skipped = ok(await othello.client.post('/messages/flags', { messages: [inChannel], op: 'remove', flag: 'read' }));
    assert.deepEqual(skipped.ignored_because_not_subscribed_channels, [stream.id]);
    assert.equal((await userMessageFlags(s, othello.user.id, inChannel))! & FLAG_BITS.read, FLAG_BITS.read);
  });

  test('starring a readable message one never received creates a historical row; inaccessible ones fail', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const name = uniqueName('History');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user] });
    const id = await sendStream(hamlet.client, name, 'old', 'before you came');
    assert.equal(await userMessageFlags(s, othello.user.id, id), undefined);
    // Read is already implied for such messages: nothing to do, no row.
    const read = await captureEvents(s, () => othello.client.post('/messages/flags', { messages: [id], op: 'add', flag: 'read' }));
    assert.deepEqual(read.events[0]!.event.messages, []);
    assert.equal(await userMessageFlags(s, othello.user.id, id), undefined);
    ok(await othello.client.post('/messages/flags', { messages: [id], op: 'add', flag: 'starred' }));
    assert.equal(await userMessageFlags(s, othello.user.id, id), FLAG_BITS.read | FLAG_BITS.historical | FLAG_BITS.starred);
    const fetched = ok(await othello.client.get(`/messages/${id}`));
    assert.deepEqual(fetched.message.flags, ['read', 'starred', 'historical']);
    assert.ok(stream.id);

    const secret = uniqueName('Secret');
    await createChannel(s, secret, { inviteOnly: true, subscribers: [hamlet.user] });
    const hidden = await sendStream(hamlet.client, secret, 't', 'secret');
    err(await othello.client.post('/messages/flags', { messages: [hidden], op: 'add', flag: 'starred' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    err(await admin.client.post('/messages/flags', { messages: [99999999], op: 'add', flag: 'starred' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    // Unknown messages are silently ignored when the change would be a no-op for a row-less message.
    assert.deepEqual(ok(await admin.client.post('/messages/flags', { messages: [99999999], op: 'add', flag: 'read' })).messages, [99999999]);
  });

  test('flag and operation validation', async () => {
    const s = server();
    const { hamlet } = s.cast;
    err(await hamlet.client.post('/messages/flags', { messages: [1], op: 'add', flag: 'bogus' }), 400, 'BAD_REQUEST', "Invalid flag: 'bogus'");
    err(await hamlet.client.post('/messages/flags', { messages: [1], op: 'add', flag: 'is_private' }), 400, 'BAD_REQUEST', "Invalid flag: 'is_private'");
    err(await hamlet.client.post('/messages/flags', { messages: [1], op: 'add', flag: 'mentioned' }), 400, 'BAD_REQUEST', "Flag not editable: 'mentioned'");
    err(await hamlet.client.post('/messages/flags', { messages: [1], op: 'add', flag: 'historical' }), 400, 'BAD_REQUEST', "Flag not editable: 'historical'");
    err(await hamlet.client.post('/messages/flags', { messages: [1], op: 'toggle', flag: 'read' }), 400, 'BAD_REQUEST', "Invalid message flag operation: 'toggle'");
    err(await hamlet.client.post('/messages/flags', { op: 'add', flag: 'read' }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'messages' argument");
    err(await hamlet.client.post('/messages/flags', { messages: 'x', op: 'add', flag: 'read' }), 400, 'BAD_REQUEST', 'Argument "messages" is not valid JSON.');
  });

  test('POST /messages/flags/narrow marks a narrow range', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = uniqueName('Narrowed');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await sendStream(hamlet.client, name, 'range', `m${i}`));
    const res = await othello.client.post('/messages/flags/narrow', {
      anchor: 'oldest',
      num_before: 0,
      num_after: 100,
      narrow: [{ operator: 'channel', operand: stream.id }, { operator: 'topic', operand: 'range' }],
      op: 'add',
      flag: 'read',
    });
    const body = ok(res);
    assertConforms(res, 'POST', '/messages/flags/narrow');
    assert.equal(body.processed_count, 3);
    assert.equal(body.updated_count, 3);
    assert.equal(body.first_processed_id, ids[0]);
    assert.equal(body.last_processed_id, ids[2]);
    assert.equal(body.found_oldest, true);
    assert.equal(body.found_newest, true);
    for (const id of ids) assert.equal(await userMessageFlags(s, othello.user.id, id), FLAG_BITS.read);
    const none = ok(await othello.client.post('/messages/flags/narrow', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'topic', operand: 'no such topic' }], op: 'add', flag: 'read' }));
    assert.equal(none.processed_count, 0);
    assert.equal(none.first_processed_id, null);
    err(
      await othello.client.post('/messages/flags/narrow', { anchor: 'newest', num_before: 1, num_after: 1, include_anchor: false, narrow: [], op: 'add', flag: 'read' }),
      400,
      'BAD_REQUEST',
      'The anchor can only be excluded at an end of the range',
    );
  });

  test('mark_all_as_read, mark_stream_as_read, mark_topic_as_read', async () => {
    const s = server();
    const { hamlet, othello, guest } = s.cast;
    const name = uniqueName('Legacy');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const t1 = await sendStream(hamlet.client, name, 'one', 'x');
    const t2 = await sendStream(hamlet.client, name, 'two', 'x');
    const dm = await sendDirect(hamlet.client, [othello.user.id], 'dm');

    const topic = await captureEvents(s, () => othello.client.post('/mark_topic_as_read', { stream_id: stream.id, topic_name: 'one' }));
    ok(topic.result);
    assertConforms(topic.result, 'POST', '/mark_topic_as_read');
    assert.deepEqual(topic.events[0]!.event, { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: [t1], all: false });
    assert.equal(await userMessageFlags(s, othello.user.id, t2), 0);
    err(await othello.client.post('/mark_topic_as_read', { stream_id: stream.id, topic_name: 'nope' }), 400, 'BAD_REQUEST', "No such topic 'nope'");
    err(await guest.client.post('/mark_topic_as_read', { stream_id: stream.id, topic_name: 'one' }), 400, 'BAD_REQUEST', 'Invalid channel ID');

    const channel = await captureEvents(s, () => othello.client.post('/mark_stream_as_read', { stream_id: stream.id }));
    ok(channel.result);
    assertConforms(channel.result, 'POST', '/mark_stream_as_read');
    assert.deepEqual(channel.events[0]!.event.messages, [t2]);
    assert.equal(await userMessageFlags(s, othello.user.id, dm), FLAG_BITS.is_private);
    err(await othello.client.post('/mark_stream_as_read', { stream_id: 999999 }), 400, 'BAD_REQUEST', 'Invalid channel ID');

    const all = await captureEvents(s, () => othello.client.post('/mark_all_as_read'));
    assert.equal(ok(all.result).complete, true);
    assertConforms(all.result, 'POST', '/mark_all_as_read');
    assert.deepEqual(all.events[0]!.event, { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: [], all: true });
    assert.equal(await userMessageFlags(s, othello.user.id, dm), FLAG_BITS.is_private | FLAG_BITS.read);
  });

  test('GET /messages/{message_id}: the message with raw_content, Markdown or HTML, only if accessible', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const id = await sendDirect(hamlet.client, [othello.user.id], '**bold** move');
    const res = await othello.client.get(`/messages/${id}`);
    const body = ok(res);
    assertConforms(res, 'GET', '/messages/{message_id}');
    assert.equal(body.raw_content, '**bold** move');
    assert.equal(body.message.id, id);
    assert.equal(body.message.content_type, 'text/html');
    assert.deepEqual(body.message.flags, []);
    assert.equal(body.message.sender_id, hamlet.user.id);
    const raw = ok(await othello.client.get(`/messages/${id}`, { apply_markdown: false }));
    assert.equal(raw.message.content, '**bold** move');
    assert.equal(raw.message.content_type, 'text/x-markdown');
    err(await admin.client.get(`/messages/${id}`), 400, 'BAD_REQUEST', 'Invalid message(s)');
    err(await admin.client.get('/messages/99999999'), 400, 'BAD_REQUEST', 'Invalid message(s)');

    const name = uniqueName('EmptyTopic');
    await createChannel(s, name, { subscribers: [hamlet.user] });
    const general = await sendStream(hamlet.client, name, '', 'in general chat');
    assert.equal(ok(await hamlet.client.get(`/messages/${general}`)).message.subject, 'general chat');
    assert.equal(ok(await hamlet.client.get(`/messages/${general}`, { allow_empty_topic_name: true })).message.subject, '');
  });

  test('GET /messages/{message_id} follows channel history access: protected history, groups allowed to subscribe', async () => {
    const s = server();
    const { hamlet, othello, guest } = s.cast;
    const g = await systemGroups(s);
    const shared = uniqueName('Shared history');
    await createChannel(s, shared, { inviteOnly: true, historyPublic: true, subscribers: [hamlet.user], permissions: { can_subscribe_group: g['role:members'] } });
    const id = await sendStream(hamlet.client, shared, 't', 'x');
    // Members may subscribe themselves, so they may read the shared history; guests may not.
    assert.deepEqual(ok(await othello.client.get(`/messages/${id}`)).message.flags, ['read', 'historical']);
    err(await guest.client.get(`/messages/${id}`), 400, 'BAD_REQUEST', 'Invalid message(s)');
    const protectedName = uniqueName('Protected history');
    const stream = await createChannel(s, protectedName, { inviteOnly: true, historyPublic: false, subscribers: [hamlet.user], permissions: { can_subscribe_group: g['role:members'] } });
    const before = await sendStream(hamlet.client, protectedName, 't', 'before');
    err(await othello.client.get(`/messages/${before}`), 400, 'BAD_REQUEST', 'Invalid message(s)');
    await subscribe(s, stream, [othello.user]);
    err(await othello.client.get(`/messages/${before}`), 400, 'BAD_REQUEST', 'Invalid message(s)');
    const after = await sendStream(hamlet.client, protectedName, 't', 'after');
    assert.deepEqual(ok(await othello.client.get(`/messages/${after}`)).message.flags, []);
  });

  test('GET /messages/{message_id}/read_receipts lists readers other than the sender', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const name = uniqueName('Receipts');
    const stream = await createChannel(s, name, { subscribers: [hamlet.user, othello.user, admin.user] });
    const id = await sendStream(hamlet.client, name, 'r', 'read me', { read_by_sender: true });
    await setRealmSettings(s, { enable_read_receipts: false });
    err(await hamlet.client.get(`/messages/${id}/read_receipts`), 400, 'BAD_REQUEST', 'Read receipts are disabled in this organization.');
    await setRealmSettings(s, { enable_read_receipts: true });
    const before = await hamlet.client.get(`/messages/${id}/read_receipts`);
    assert.deepEqual(ok(before).user_ids, []);
    assertConforms(before, 'GET', '/messages/{message_id}/read_receipts');
    ok(await othello.client.post('/messages/flags', { messages: [id], op: 'add', flag: 'read' }));
    assert.deepEqual(ok(await admin.client.get(`/messages/${id}/read_receipts`)).user_ids, [othello.user.id]);
    await subscribe(s, stream, []);
    err(await s.cast.guest.client.get(`/messages/${id}/read_receipts`), 400, 'BAD_REQUEST', 'Invalid message(s)');
  });
});
