import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { ZULIP_FEATURE_LEVEL } from '../../src/version.js';
import { insertStreamIfAbsent } from '../../src/db/repos/streams.js';

forEachDatabase('server settings and fetch_api_key', (server) => {
  test('GET /server_settings answers without and with credentials', async () => {
    const s = server();
    for (const client of [s.anonymous, s.cast.hamlet.client]) {
      const res = await client.get('/server_settings');
      const body = ok(res);
      assert.equal(body.zulip_feature_level, ZULIP_FEATURE_LEVEL);
      assert.equal(typeof body.zulip_version, 'string');
      assert.equal(body.realm_uri, s.config.externalUrl);
      assert.equal(body.realm_url, s.config.externalUrl);
      assert.equal(body.email_auth_enabled, true);
      assert.equal(body.require_email_format_usernames, true);
      assert.deepEqual(body.external_authentication_methods, []);
      assert.equal(body.authentication_methods.password, true);
      assert.equal(body.authentication_methods.ldap, false);
      assertConforms(res, 'GET', '/server_settings');
    }
  });

  test('GET /server_settings: every documented key, realm description as HTML', async () => {
    const s = server();
    const res = await s.anonymous.get('/server_settings');
    const body = ok(res);
    assertConforms(res, 'GET', '/server_settings');
    for (const key of [
      'authentication_methods', 'external_authentication_methods', 'zulip_feature_level', 'zulip_version', 'zulip_merge_base',
      'push_notifications_enabled', 'is_incompatible', 'email_auth_enabled', 'require_email_format_usernames', 'realm_uri',
      'realm_url', 'realm_name', 'realm_icon', 'realm_description', 'realm_web_public_access_enabled',
    ]) {
      assert.ok(key in body, key);
    }
    assert.equal(body.push_notifications_enabled, false);
    assert.equal(body.is_incompatible, false);
    assert.equal(body.realm_name, s.realm.name);
    assert.match(body.realm_icon, /^http:\/\/localhost:\d+\//);
    ok(await s.cast.admin.client.patch('/realm', { description: 'Fish & <chips>' }));
    assert.equal(ok(await s.anonymous.get('/server_settings')).realm_description, '<p>Fish &amp; &lt;chips&gt;</p>');
  });

  test('realm_web_public_access_enabled needs spectator access and a web-public channel', async () => {
    const s = server();
    assert.equal(ok(await s.anonymous.get('/server_settings')).realm_web_public_access_enabled, false);
    ok(await s.cast.admin.client.patch('/realm', { enable_spectator_access: true }));
    assert.equal(ok(await s.anonymous.get('/server_settings')).realm_web_public_access_enabled, false);
    await insertStreamIfAbsent(s.app.services.db.kysely, {
      realm_id: s.realm.id,
      name: 'town square',
      name_lc: 'town square',
      is_web_public: 1,
      date_created: Math.floor(Date.now() / 1000),
    });
    const res = await s.anonymous.get('/server_settings');
    assert.equal(ok(res).realm_web_public_access_enabled, true);
    assertConforms(res, 'GET', '/server_settings');
    ok(await s.cast.admin.client.patch('/realm', { enable_spectator_access: false }));
    assert.equal(ok(await s.anonymous.get('/server_settings')).realm_web_public_access_enabled, false);
  });

  test('POST /fetch_api_key returns the key, email and user_id', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const res = await s.anonymous.post('/fetch_api_key', { username: hamlet.user.email, password: hamlet.password });
    const body = ok(res);
    assert.equal(body.api_key, hamlet.user.api_key);
    assert.equal(body.email, hamlet.user.email);
    assert.equal(body.user_id, hamlet.user.id);
    assertConforms(res, 'POST', '/fetch_api_key');
    // zulip-js sends it as multipart.
    ok(await s.anonymous.post('/fetch_api_key', { username: hamlet.user.email, password: hamlet.password }, 'multipart'));
  });

  test('a wrong password and an unknown user answer the same', async () => {
    const s = server();
    const wrong = await s.anonymous.post('/fetch_api_key', { username: s.cast.hamlet.user.email, password: 'nope' });
    const unknown = await s.anonymous.post('/fetch_api_key', { username: 'nobody@example.com', password: 'nope' });
    err(wrong, 401, 'AUTHENTICATION_FAILED');
    assert.deepEqual(wrong.body, unknown.body);
    assert.equal(wrong.status, unknown.status);
  });

  test('missing parameters name the variable', async () => {
    const s = server();
    const res = await s.anonymous.post('/fetch_api_key', { username: 'x@example.com' });
    const body = err(res, 400, 'REQUEST_VARIABLE_MISSING', "Missing 'password' argument");
    assert.equal(body.var_name, 'password');
  });

  test('unknown routes answer JSON 404', async () => {
    const s = server();
    err(await s.cast.hamlet.client.get('/no/such/route'), 404, 'NOT_FOUND');
  });
});
