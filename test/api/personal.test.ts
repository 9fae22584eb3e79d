import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { registerQueue } from '../helpers/events.js';

forEachDatabase('alert words, muted users and statuses', (server) => {
  test('alert words: add keeps the first spelling, ignores case duplicates and blanks; remove is case-insensitive', async () => {
    const s = server();
    const c = s.cast.othello.client;
    const empty = await c.get('/users/me/alert_words');
    assertConforms(empty, 'GET', '/users/me/alert_words');
    assert.deepEqual(ok(empty).alert_words, []);

    const { result, events } = await captureEvents(s, () => c.post('/users/me/alert_words', { alert_words: ['Natural', ' illustrious ', '', 'natural', 'ILLUSTRIOUS'] }));
    assertConforms(result, 'POST', '/users/me/alert_words');
    assert.deepEqual([...ok(result).alert_words].sort(), ['Natural', 'illustrious']);
    assert.deepEqual(events.map((e) => e.event), [{ type: 'alert_words', alert_words: ok(result).alert_words }]);
    assert.deepEqual(recipientIds(events[0]!), [s.cast.othello.user.id]);
    assertEventConforms(events[0]!.event);
    assert.deepEqual([...ok(await c.post('/users/me/alert_words', { alert_words: ['NATURAL', 'foo'] })).alert_words].sort(), ['Natural', 'foo', 'illustrious']);

    const removed = await c.delete('/users/me/alert_words', { alert_words: ['natural', 'not-there'] });
    assertConforms(removed, 'DELETE', '/users/me/alert_words');
    assert.deepEqual([...ok(removed).alert_words].sort(), ['foo', 'illustrious']);

    err(await c.post('/users/me/alert_words', { alert_words: ['x'.repeat(101)] }), 400, 'BAD_REQUEST', 'alert_words[0] is too long (limit: 100 characters)');
    err(await c.post('/users/me/alert_words', {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'alert_words' argument");
    err(await c.post('/users/me/alert_words', { alert_words: 'foo' }), 400, 'BAD_REQUEST', 'Argument "alert_words" is not valid JSON.');

    // The words take effect on the next message: the has_alert_word flag.
    const id = ok(await s.cast.hamlet.client.post('/messages', { type: 'direct', to: [s.cast.othello.user.id], content: 'how Illustrious' })).id;
    assert.ok(ok(await c.get(`/messages/${id}`)).message.flags.includes('has_alert_word'));
    ok(await c.delete('/users/me/alert_words', { alert_words: ['foo', 'illustrious'] }));
  });

  test('muting a user: the list event, their unread messages marked read, and Zulip’s errors', async () => {
    const s = server();
    const { hamlet, othello, bot } = s.cast;
    const unread = ok(await othello.client.post('/messages', { type: 'direct', to: [hamlet.user.id], content: 'unread until muted' })).id;
    const { result, events } = await captureEvents(s, () => hamlet.client.post(`/users/me/muted_users/${othello.user.id}`));
    ok(result);
    assertConforms(result, 'POST', '/users/me/muted_users/{muted_user_id}');
    const list = events.find((e) => e.event.type === 'muted_users')!;
    assert.equal((list.event.muted_users as any[]).length, 1);
    assert.equal((list.event.muted_users as any[])[0].id, othello.user.id);
    assert.equal(typeof (list.event.muted_users as any[])[0].timestamp, 'number');
    assert.deepEqual(recipientIds(list), [hamlet.user.id]);
    assertEventConforms(list.event);
    const flags = events.find((e) => e.event.type === 'update_message_flags')!;
    assert.deepEqual({ ...flags.event }, { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: [unread], all: false });
    assert.ok(ok(await hamlet.client.get(`/messages/${unread}`)).message.flags.includes('read'));

    err(await hamlet.client.post(`/users/me/muted_users/${othello.user.id}`), 400, 'BAD_REQUEST', 'User already muted');
    err(await hamlet.client.post(`/users/me/muted_users/${hamlet.user.id}`), 400, 'BAD_REQUEST', 'Cannot mute self');
    err(await hamlet.client.post('/users/me/muted_users/9999999'), 400, 'BAD_REQUEST', 'No such user');
    ok(await hamlet.client.post(`/users/me/muted_users/${bot.user.id}`));

    const reg = await hamlet.client.post('/register', { fetch_event_types: ['muted_users'] });
    assertConforms(reg, 'POST', '/register');
    assert.deepEqual(ok(reg).muted_users.map((m: any) => m.id), [othello.user.id, bot.user.id].sort((a, b) => a - b));

    const un = await captureEvents(s, () => hamlet.client.delete(`/users/me/muted_users/${othello.user.id}`));
    ok(un.result);
    assertConforms(un.result, 'DELETE', '/users/me/muted_users/{muted_user_id}');
    assert.deepEqual(un.events[0]!.event.muted_users, [{ id: bot.user.id, timestamp: (ok(reg).muted_users as any[]).find((m) => m.id === bot.user.id).timestamp }]);
    err(await hamlet.client.delete(`/users/me/muted_users/${othello.user.id}`), 400, 'BAD_REQUEST', 'User is not muted');
    ok(await hamlet.client.delete(`/users/me/muted_users/${bot.user.id}`));
  });

  test('POST /users/me/status sets only what is given; everyone who can see the user gets user_status', async () => {
    const s = server();
    const { hamlet, othello, bot } = s.cast;
    const q = await registerQueue(othello.client, { event_types: ['user_status'] });
    const { result, events } = await captureEvents(s, () => hamlet.client.post('/users/me/status', { status_text: ' on vacation ', emoji_name: 'car' }));
    ok(result);
    assertConforms(result, 'POST', '/users/me/status');
    const expected = { type: 'user_status', user_id: hamlet.user.id, status_text: 'on vacation', emoji_name: 'car', emoji_code: '1f697', reaction_type: 'unicode_emoji' };
    assert.deepEqual(events[0]!.event, expected);
    assert.ok(recipientIds(events[0]!).includes(othello.user.id));
    assertEventConforms(events[0]!.event);
    const live = await q.next('user_status');
    assert.deepEqual({ ...live, id: 0 }, { ...expected, id: 0 });

    // Only the text changes; the emoji stays.
    ok(await hamlet.client.post('/users/me/status', { status_text: 'back soon' }));
    const got = await othello.client.get(`/users/${hamlet.user.id}/status`);
    assertConforms(got, 'GET', '/users/{user_id}/status');
    assert.deepEqual(ok(got).status, { status_text: 'back soon', emoji_name: 'car', emoji_code: '1f697', reaction_type: 'unicode_emoji' });
    const reg = await othello.client.post('/register', { fetch_event_types: ['user_status'] });
    assertConforms(reg, 'POST', '/register');
    assert.deepEqual(ok(reg).user_status[String(hamlet.user.id)], ok(got).status);

    // Clearing the emoji and the text leaves an empty status.
    ok(await hamlet.client.post('/users/me/status', { status_text: '', emoji_name: '' }));
    assert.deepEqual(ok(await othello.client.get(`/users/${hamlet.user.id}/status`)).status, {});
    assert.deepEqual(ok(await othello.client.get(`/users/${othello.user.id}/status`)).status, {});

    // `away` is the legacy face of presence_enabled.
    ok(await hamlet.client.post('/users/me/status', { away: true }));
    assert.deepEqual(ok(await othello.client.get(`/users/${hamlet.user.id}/status`)).status, { away: true });
    ok(await hamlet.client.post('/users/me/status', { away: false }));

    const c = hamlet.client;
    err(await c.post('/users/me/status', {}), 400, 'BAD_REQUEST', 'Client did not pass any new values.');
    err(await c.post('/users/me/status', { status_text: 'x'.repeat(61) }), 400, 'BAD_REQUEST', 'status_text is too long (limit: 60 characters)');
    err(await c.post('/users/me/status', { emoji_code: '1f697' }), 400, 'BAD_REQUEST', 'Client did not pass any new values.');
    err(await c.post('/users/me/status', { status_text: 'x', reaction_type: 'unicode_emoji' }), 400, 'BAD_REQUEST', 'Client must pass emoji_name if they pass either emoji_code or reaction_type.');
    err(await c.post('/users/me/status', { emoji_name: 'invalid' }), 400, 'BAD_REQUEST', "Emoji 'invalid' does not exist");
    err(await c.post('/users/me/status', { emoji_name: 'smile', emoji_code: '1f697', reaction_type: 'unicode_emoji' }), 400, 'BAD_REQUEST', 'Invalid emoji name.');
    err(await c.post('/users/me/status', { emoji_name: 'x', emoji_code: '424242', reaction_type: 'realm_emoji' }), 400, 'BAD_REQUEST', 'Invalid custom emoji.');
    err(await bot.client.post('/users/me/status', { status_text: 'beep' }), 400, 'BAD_REQUEST', 'This endpoint does not accept bot requests.');
    err(await othello.client.get(`/users/${bot.user.id}/status`), 400, 'BAD_REQUEST', 'No such user');
    await q.delete();
  });

  test('administrators may set another user’s status', async () => {
    const s = server();
    const { admin, hamlet, othello } = s.cast;
    const res = await admin.client.post(`/users/${othello.user.id}/status`, { status_text: 'in a meeting' });
    ok(res);
    assertConforms(res, 'POST', '/users/{user_id}/status');
    assert.deepEqual(ok(await hamlet.client.get(`/users/${othello.user.id}/status`)).status, { status_text: 'in a meeting' });
    err(await hamlet.client.post(`/users/${othello.user.id}/status`, { status_text: 'nope' }), 400, 'BAD_REQUEST', 'Insufficient permission');
    ok(await admin.client.post(`/users/${othello.user.id}/status`, { status_text: '' }));
  });

  test('register returns alert_words, muted_users and user_status, conforming', async () => {
    const s = server();
    const res = await s.cast.guest.client.post('/register', { fetch_event_types: ['alert_words', 'muted_users', 'user_status', 'realm_emoji'] });
    assertConforms(res, 'POST', '/register');
    const body = ok(res);
    assert.deepEqual(body.alert_words, []);
    assert.deepEqual(body.muted_users, []);
    assert.equal(typeof body.user_status, 'object');
    assert.deepEqual(body.realm_emoji, ok(await s.cast.guest.client.get('/realm/emoji')).emoji);
  });
});
