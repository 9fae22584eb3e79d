import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { fetchPushDevicesForUsers } from '../../src/db/repos/push_devices.js';
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
});
