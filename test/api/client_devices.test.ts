import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents } from '../helpers/bus.js';
import type { PushNotification } from '../../src/lib/push/sender.js';

forEachDatabase('mobile devices and push registration', (server) => {
  test('register and remove a client device: IDs, register `devices`, device events', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const { result: res, events } = await captureEvents(s, () => hamlet.client.post('/register_client_device'));
    const id = ok(res).device_id;
    assertConforms(res, 'POST', '/register_client_device');
    assert.equal(typeof id, 'number');
    assert.deepEqual(events.map((e) => [e.event, e.users]), [[{ type: 'device', op: 'add', device_id: id }, [hamlet.user.id]]]);
    assertEventConforms(events[0]!.event);
    const second = ok(await hamlet.client.post('/register_client_device')).device_id;
    assert.notEqual(second, id);

    const reg = ok(await hamlet.client.post('/register', { fetch_event_types: ['device'] }));
    assertConforms({ status: 200, headers: new Headers(), body: reg }, 'POST', '/register');
    const empty = { push_key_id: null, push_token_id: null, pending_push_token_id: null, push_token_last_updated_timestamp: null, push_registration_error_code: null };
    assert.deepEqual(reg.devices, { [String(id)]: empty, [String(second)]: empty });
    assert.deepEqual(ok(await othello.client.post('/register', { fetch_event_types: ['device'] })).devices, {});

    err(await othello.client.post('/remove_client_device', { device_id: id }), 400, 'BAD_REQUEST', 'Invalid device ID');
    err(await hamlet.client.post('/remove_client_device', {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'device_id' argument");
    const removed = await captureEvents(s, () => hamlet.client.post('/remove_client_device', { device_id: id }));
    ok(removed.result);
    assertConforms(removed.result, 'POST', '/remove_client_device');
    assert.deepEqual(removed.events.map((e) => e.event), [{ type: 'device', op: 'remove', device_id: id }]);
    assertEventConforms(removed.events[0]!.event);
    err(await hamlet.client.post('/remove_client_device', { device_id: id }), 400, 'BAD_REQUEST', 'Invalid device ID');
    assert.deepEqual(Object.keys(ok(await hamlet.client.post('/register', { fetch_event_types: ['device'] })).devices), [String(second)]);
  });

  test('E2EE push registration needs the push notification service, which this server does not use', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const device = ok(await hamlet.client.post('/register_client_device')).device_id;
    const params = { device_id: device, push_key_id: 2408, push_key: 'MTaUDJDMWypQ1WufZ1NRTHSSvgYtXh1qVNSjN3aBiEFt', token_kind: 'fcm', token_id: 'hGsEWGmyyfI=', bouncer_public_key: 'k', encrypted_push_registration: 'x' };
    const res = await hamlet.client.post('/mobile_push/register', params);
    err(res, 400, 'PUSH_SERVICE_NOT_CONFIGURED', 'Server is not configured to use push notification service.');
    assertConforms(res, 'POST', '/mobile_push/register');
    err(await othello.client.post('/mobile_push/register', params), 400, 'BAD_REQUEST', 'Invalid device ID');
    err(await hamlet.client.post('/mobile_push/register', { ...params, token_kind: 'sms' }), 400, 'BAD_REQUEST');
    const test = await hamlet.client.post('/mobile_push/e2ee/test_notification', { device_id: device });
    err(test, 400, 'NO_ACTIVE_PUSH_DEVICE', 'No active registered push device');
    assertConforms(test, 'POST', '/mobile_push/e2ee/test_notification');
  });

  test('POST /mobile_push/test_notification: to one registered token, or to all; an unknown token is refused', async () => {
    const s = server();
    const { othello } = s.cast;
    const services = s.app.services;
    const sent: PushNotification[] = [];
    services.push = { send: async (n) => void sent.push(n) };
    try {
      ok(await othello.client.post('/users/me/android_gcm_reg_id', { token: 'fcm-token-1' }));
      ok(await othello.client.post('/users/me/apns_device_token', { token: 'abcd01', appid: 'org.zulip.Zulip' }));
      const res = await othello.client.post('/mobile_push/test_notification', { token: 'fcm-token-1' });
      ok(res);
      assertConforms(res, 'POST', '/mobile_push/test_notification');
      assert.deepEqual(sent[0]!.devices, [{ kind: 'fcm', token: 'fcm-token-1', appId: null }]);
      assert.equal(sent[0]!.payload.event, 'test');
      assert.equal(sent[0]!.payload.user_id, othello.user.id);
      assert.equal(sent[0]!.payload.realm_name, s.realm.name);
      ok(await othello.client.post('/mobile_push/test_notification'));
      assert.equal(sent[1]!.devices.length, 2);
      const bad = await othello.client.post('/mobile_push/test_notification', { token: 'nope' });
      // zulip.yaml's 400 is a oneOf of two CodedError schemas that any error body matches both of.
      err(bad, 400, 'INVALID_PUSH_DEVICE_TOKEN', 'Device not recognized');
      assert.equal(sent.length, 2);
    } finally {
      delete services.push;
    }
  });
});
