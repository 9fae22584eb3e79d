import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { ZULIP_FEATURE_LEVEL } from '../../src/version.js';

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
