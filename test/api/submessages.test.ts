import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { createChannel, uniqueName } from './messages_send.fixtures.js';

forEachDatabase('polls and to-do lists (submessages)', (server) => {
  test('sending /poll or /todo creates the widget submessage, in the message event and every message dict', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = uniqueName('Widgets');
    await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const { result, events } = await captureEvents(s, () => hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'lunch', content: '/poll Where to, café?\n- Pizza\n* Sushi\n\n' }));
    const poll = ok(result).id as number;
    const widget = { msg_type: 'widget', content: '{"widget_type": "poll", "extra_data": {"question": "Where to, caf\\u00e9?", "options": ["Pizza", "Sushi"]}}', message_id: poll, sender_id: hamlet.user.id };
    const sent = events.find((e) => e.event.type === 'message')!.event.message as any;
    assert.deepEqual(sent.submessages.map(({ id: _id, ...rest }: any) => rest), [widget]);
    const stored = ok(await othello.client.get(`/messages/${poll}`)).message.submessages;
    assert.deepEqual(stored, [{ ...widget, id: sent.submessages[0].id }]);
    assert.deepEqual(ok(await othello.client.get('/messages', { anchor: poll, num_before: 0, num_after: 0 })).messages[0].submessages, stored);

    const todo = ok(await othello.client.post('/messages', { type: 'direct', to: JSON.stringify([hamlet.user.id]), content: '/todo Chores\nDishes: after dinner\n- Laundry' })).id;
    assert.deepEqual(JSON.parse(ok(await hamlet.client.get(`/messages/${todo}`)).message.submessages[0].content), {
      widget_type: 'todo',
      extra_data: { task_list_title: 'Chores', tasks: [{ task: 'Dishes', desc: 'after dinner' }, { task: 'Laundry', desc: '' }] },
    });
    const plain = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'lunch', content: '/pollster is not a poll' })).id;
    assert.deepEqual(ok(await hamlet.client.get(`/messages/${plain}`)).message.submessages, []);
  });

  test('POST /submessage adds a vote, an option or a task; everyone with the message gets the event', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const name = uniqueName('Widgets');
    await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const poll = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'lunch', content: '/poll Where to?\nPizza' })).id as number;
    const vote = JSON.stringify({ type: 'vote', key: 'canned,0', vote: 1 });
    const { result, events } = await captureEvents(s, () => othello.client.post('/submessage', { message_id: poll, msg_type: 'widget', content: vote }));
    ok(result);
    const event = events.find((e) => e.event.type === 'submessage')!;
    const submessages = ok(await hamlet.client.get(`/messages/${poll}`)).message.submessages;
    assert.deepEqual(event.event, { type: 'submessage', msg_type: 'widget', message_id: poll, submessage_id: submessages[1].id, sender_id: othello.user.id, content: vote });
    assert.deepEqual(recipientIds(event), [hamlet.user.id, othello.user.id].sort((a, b) => a - b));
    assert.deepEqual(submessages.map((x: any) => [x.sender_id, x.content]).slice(1), [[othello.user.id, vote]]);
    // Anyone who can read the channel may take part; the author alone may change the question.
    ok(await admin.client.post('/submessage', { message_id: poll, msg_type: 'widget', content: JSON.stringify({ type: 'new_option', idx: 1, option: 'Tacos' }) }));
    ok(await hamlet.client.post('/submessage', { message_id: poll, msg_type: 'widget', content: JSON.stringify({ type: 'question', question: 'Where, then?' }) }));
    assert.equal(ok(await hamlet.client.get(`/messages/${poll}`)).message.submessages.length, 4);

    const todo = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'lunch', content: '/todo Chores' })).id as number;
    ok(await othello.client.post('/submessage', { message_id: todo, msg_type: 'widget', content: JSON.stringify({ type: 'new_task', key: 2, task: 'Laundry', desc: '', completed: false }) }));
    ok(await hamlet.client.post('/submessage', { message_id: todo, msg_type: 'widget', content: JSON.stringify({ type: 'strike', key: `2,${othello.user.id}` }) }));
    assert.equal(ok(await hamlet.client.get(`/messages/${todo}`)).message.submessages.length, 3);
  });

  test('refusals: the first submessage is the sender\'s, JSON content, each widget\'s events', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const name = uniqueName('Widgets');
    await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const post = (messageId: number, content: unknown, who = othello) =>
      who.client.post('/submessage', { message_id: messageId, msg_type: 'widget', content: typeof content === 'string' ? content : JSON.stringify(content) });
    const plain = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 't', content: 'no widget here' })).id as number;
    err(await post(plain, { type: 'vote', key: 'canned,0', vote: 1 }), 400, 'BAD_REQUEST', 'You cannot attach a submessage to this message.');
    err(await post(plain, 'not json', hamlet), 400, 'BAD_REQUEST', 'Invalid json for submessage');
    // Without a widget, any JSON goes (Zulip validates only polls' and to-do lists' events).
    ok(await post(plain, { anything: true }, hamlet));

    const poll = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 't', content: '/poll Q\nA' })).id as number;
    err(await post(poll, 'not json'), 400, 'BAD_REQUEST', 'Invalid json for submessage');
    err(await post(poll, [1]), 400, 'BAD_REQUEST', 'poll data is not a dict');
    err(await post(poll, { key: 'x' }), 400, 'BAD_REQUEST', 'type key is missing from poll data');
    err(await post(poll, { type: 'vote', key: 'canned,0', vote: 2 }), 400, 'BAD_REQUEST', 'Invalid poll data["vote"]');
    err(await post(poll, { type: 'vote', key: 7, vote: 1 }), 400, 'BAD_REQUEST', 'poll data["key"] is not a string');
    err(await post(poll, { type: 'vote', key: 'canned,0', vote: 1, extra: 1 }), 400, 'BAD_REQUEST', 'Unexpected arguments: extra');
    err(await post(poll, { type: 'new_option', idx: 1001, option: 'B' }), 400, 'BAD_REQUEST', 'poll data["idx"] is too large');
    err(await post(poll, { type: 'question', question: 'Mine now' }), 400, 'BAD_REQUEST', "You can't edit a question unless you are the author.");
    err(await post(poll, { type: 'strike', key: '1,2' }), 400, 'BAD_REQUEST', 'Unknown type for poll data: strike');

    const todo = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 't', content: '/todo' })).id as number;
    err(await post(todo, { type: 'strike' }), 400, 'BAD_REQUEST', 'key key is missing from todo data');
    err(await post(todo, { type: 'new_task', key: -1, task: 'x', desc: '', completed: false }), 400, 'BAD_REQUEST', 'todo data["key"] is too small');
    err(await post(todo, { type: 'new_task', key: 1, task: 'x', desc: '', completed: 'no' }), 400, 'BAD_REQUEST', 'todo data["completed"] is not a boolean');
    err(await post(todo, { type: 'new_task_list_title', title: 'Mine' }), 400, 'BAD_REQUEST', "You can't edit the task list title unless you are the author.");

    // A message the caller cannot read, and a missing parameter.
    const secret = uniqueName('Secret');
    await createChannel(s, secret, { inviteOnly: true, subscribers: [hamlet.user] });
    const hidden = ok(await hamlet.client.post('/messages', { type: 'stream', to: secret, topic: 't', content: '/poll Q' })).id as number;
    err(await post(hidden, { type: 'vote', key: 'canned,0', vote: 1 }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    const missing = err(await othello.client.post('/submessage', { message_id: poll, msg_type: 'widget' }), 400, 'REQUEST_VARIABLE_MISSING');
    assert.equal(missing.var_name, 'content');
    assert.deepEqual(ok(await post(poll, { type: 'vote', key: 'canned,0', vote: -1 })), { result: 'success', msg: '' });
  });
});
