import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { fetchPushDevicesForUsers } from '../../src/db/repos/push_devices.js';
import { notifyOfflineRecipients } from '../../src/lib/push/notify.js';
import type { PushNotification } from '../../src/lib/push/sender.js';
import { updateUserRow } from '../../src/db/repos/users.js';

const APNS = 'c0ffee00deadbeef';
const APP_ID = 'org.zulip.Zulip';

forEachDatabase('push device tokens', (server) => {
  test('POST /users/me/pushsvc_device_token and its Zulip name register APNs tokens per user', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const db = s.app.services.db.kysely;
    const res = await hamlet.client.post('/users/me/pushsvc_device_token', { token: APNS, appid: APP_ID });
    ok(res);
    assertConforms(res, 'POST', '/users/me/apns_device_token');
    // Registering again is harmless; the Zulip name reaches the same registration.
    ok(await hamlet.client.post('/users/me/apns_device_token', { token: APNS, appid: APP_ID }));
    // The same device token may belong to another account on the same phone.
    ok(await othello.client.post('/users/me/apns_device_token', { token: APNS, appid: 'org.zulip.Zulip.beta' }));
    const rows = await fetchPushDevicesForUsers(db, [hamlet.user.id, othello.user.id]);
    assert.deepEqual(
      rows.map((r) => [r.user_id, r.kind, r.token, r.app_id]),
      [
        [hamlet.user.id, 'apns', APNS, APP_ID],
        [othello.user.id, 'apns', APNS, 'org.zulip.Zulip.beta'],
      ],
    );
    const del = await hamlet.client.delete('/users/me/apns_device_token', { token: APNS });
    ok(del);
    assertConforms(del, 'DELETE', '/users/me/apns_device_token');
    assert.equal((await fetchPushDevicesForUsers(db, [hamlet.user.id])).length, 0);
    err(await hamlet.client.delete('/users/me/pushsvc_device_token', { token: APNS }), 400, 'BAD_REQUEST', 'Token does not exist');
    ok(await othello.client.delete('/users/me/pushsvc_device_token', { token: APNS }));
  });

  // zulip.yaml's 400 responses here are a oneOf of two identical error schemas, which no
  // body can match exactly once, so error bodies are checked field by field only.
  test('APNs tokens and app IDs are validated with Zulip messages', async () => {
    const s = server();
    const c = s.cast.hamlet.client;
    for (const path of ['/users/me/pushsvc_device_token', '/users/me/apns_device_token']) {
      err(await c.post(path, { token: '', appid: APP_ID }), 400, 'BAD_REQUEST', 'Empty or invalid length token');
      err(await c.post(path, { token: 'a'.repeat(4098), appid: APP_ID }), 400, 'BAD_REQUEST', 'Empty or invalid length token');
      err(await c.post(path, { token: 'not hex!', appid: APP_ID }), 400, 'BAD_REQUEST', 'Invalid APNS token');
      err(await c.post(path, { token: 'abc', appid: APP_ID }), 400, 'BAD_REQUEST', 'Invalid APNS token');
      err(await c.post(path, { token: APNS, appid: 'bad app id!' }), 400, 'BAD_REQUEST', 'appid has invalid format');
      const missing = err(await c.post(path, { token: APNS }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'appid' argument");
      assert.equal(missing.var_name, 'appid');
      err(await c.delete(path, { token: '' }), 400, 'BAD_REQUEST', 'Empty or invalid length token');
      err(await c.delete(path, { token: 'zz' }), 400, 'BAD_REQUEST', 'Invalid APNS token');
    }
    // Python's bytes.fromhex allows whitespace between byte pairs.
    ok(await c.post('/users/me/apns_device_token', { token: 'c0 ff ee', appid: APP_ID }));
    ok(await c.delete('/users/me/apns_device_token', { token: 'c0 ff ee' }));
  });

  test('Android FCM registration ids: add, remove, validation', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const db = s.app.services.db.kysely;
    const res = await hamlet.client.post('/users/me/android_gcm_reg_id', { token: 'android-token:APA91b' });
    ok(res);
    assertConforms(res, 'POST', '/users/me/android_gcm_reg_id');
    assert.deepEqual((await fetchPushDevicesForUsers(db, [hamlet.user.id])).map((r) => [r.kind, r.token, r.app_id]), [['fcm', 'android-token:APA91b', null]]);
    err(await hamlet.client.post('/users/me/android_gcm_reg_id', { token: '' }), 400, 'BAD_REQUEST', 'Empty or invalid length token');
    // An APNs token of the same text is a different registration.
    err(await hamlet.client.delete('/users/me/apns_device_token', { token: 'abcd' }), 400, 'BAD_REQUEST', 'Token does not exist');
    const del = await hamlet.client.delete('/users/me/android_gcm_reg_id', { token: 'android-token:APA91b' });
    ok(del);
    assertConforms(del, 'DELETE', '/users/me/android_gcm_reg_id');
    err(await hamlet.client.delete('/users/me/android_gcm_reg_id', { token: 'android-token:APA91b' }), 400, 'BAD_REQUEST', 'Token does not exist');
  });

  test('bots may not register push devices', async () => {
    const s = server();
    err(await s.cast.bot.client.post('/users/me/apns_device_token', {}), 400, 'BAD_REQUEST', 'This endpoint does not accept bot requests.');
    err(await s.cast.bot.client.post('/users/me/android_gcm_reg_id', { token: 'x' }), 400, 'BAD_REQUEST', 'This endpoint does not accept bot requests.');
    err(await s.cast.bot.client.delete('/users/me/pushsvc_device_token', { token: 'aa' }), 400, 'BAD_REQUEST', 'This endpoint does not accept bot requests.');
  });

  test('notifyOfflineRecipients hands one payload per offline recipient to the configured sender', async () => {
    const s = server();
    const { hamlet, othello, admin, guest, owner } = s.cast;
    const services = s.app.services;
    ok(await othello.client.post('/users/me/android_gcm_reg_id', { token: 'othello-phone' }));
    ok(await othello.client.post('/users/me/apns_device_token', { token: 'aabb', appid: APP_ID }));
    ok(await admin.client.post('/users/me/android_gcm_reg_id', { token: 'iago-phone' }));
    ok(await guest.client.post('/users/me/android_gcm_reg_id', { token: 'polonius-phone' }));
    await updateUserRow(services.db.kysely, guest.user.id, { settings: JSON.stringify({ enable_offline_push_notifications: false }) });
    const sent: PushNotification[] = [];
    services.push = { send: async (n) => void sent.push(n) };
    try {
      const dm = { id: 42, type: 'private', stream_id: null, topic: '', dm_key: [hamlet.user.id, othello.user.id, admin.user.id, guest.user.id].sort((a, b) => a - b).join(','), content: 'x'.repeat(250), date_sent: 1700000000 };
      await notifyOfflineRecipients(services, s.realm, { message: dm, sender: hamlet.user, streamName: null }, [
        { userId: othello.user.id, trigger: 'direct_message' },
        { userId: othello.user.id, trigger: 'mentioned' },
        { userId: admin.user.id, trigger: 'direct_message' },
        { userId: guest.user.id, trigger: 'direct_message' },
        { userId: owner.user.id, trigger: 'direct_message' },
        { userId: hamlet.user.id, trigger: 'direct_message' },
      ]);
      // Othello (two devices, one notification), Iago; not the guest (setting off), the owner (no device) or the sender.
      assert.deepEqual(sent.map((n) => [n.userId, n.devices.length]), [[othello.user.id, 2], [admin.user.id, 1]]);
      const p = sent[0]!.payload;
      assert.equal(p.event, 'message');
      assert.equal(p.zulip_message_id, 42);
      assert.equal(p.recipient_type, 'private');
      assert.equal(p.pm_users, dm.dm_key);
      assert.equal(p.sender_id, hamlet.user.id);
      assert.equal(p.sender_full_name, hamlet.user.full_name);
      assert.equal(p.user_id, othello.user.id);
      assert.equal(p.realm_id, s.realm.id);
      assert.equal(p.trigger, 'direct_message');
      assert.equal(p.content_truncated, true);
      assert.equal([...(p.content as string)].length, 201);
      assert.deepEqual(sent[0]!.devices.map((d) => d.kind).sort(), ['apns', 'fcm']);

      sent.length = 0;
      const channelMessage = { id: 43, type: 'stream', stream_id: 7, topic: 'lunch', dm_key: null, content: '@**Othello** hi', date_sent: 1700000001 };
      await notifyOfflineRecipients(services, s.realm, { message: channelMessage, sender: hamlet.user, streamName: 'Denmark' }, [
        { userId: othello.user.id, trigger: 'mentioned' },
      ]);
      assert.equal(sent.length, 1);
      assert.equal(sent[0]!.payload.recipient_type, 'stream');
      assert.equal(sent[0]!.payload.stream, 'Denmark');
      assert.equal(sent[0]!.payload.stream_id, 7);
      assert.equal(sent[0]!.payload.topic, 'lunch');
      assert.equal(sent[0]!.payload.content, '@**Othello** hi');
      assert.equal(sent[0]!.payload.trigger, 'mentioned');

      // A failing sender never breaks the caller.
      services.push = { send: async () => { throw new Error('gateway down'); } };
      await notifyOfflineRecipients(services, s.realm, { message: channelMessage, sender: hamlet.user, streamName: 'Denmark' }, [
        { userId: othello.user.id, trigger: 'mentioned' },
      ]);
    } finally {
      delete services.push;
    }
  });
});
