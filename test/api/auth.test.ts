import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, PASSWORD, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { ApiClient } from '../helpers/client.js';
import { doCreateUser, doDeactivateUser, doReactivateUser } from '../../src/actions/users.js';
import { updateRealmRow } from '../../src/db/repos/realms.js';
import { ROLE_MEMBER } from '../../src/lib/roles.js';

function withAuthorization(s: TestServer, value: string): ApiClient {
  return new ApiClient(s.url, null, null, { Authorization: value });
}

const basic = (user: string, key: string) => `Basic ${Buffer.from(`${user}:${key}`).toString('base64')}`;

forEachDatabase('authentication', (server) => {
  test('missing credentials: 401 UNAUTHORIZED with a WWW-Authenticate challenge', async () => {
    const s = server();
    const res = await s.anonymous.get('/users/me');
    err(res, 401, 'UNAUTHORIZED', 'Missing authorization header for basic auth');
    assert.equal(res.headers.get('www-authenticate'), 'Basic realm="zulip"');
  });

  test('malformed authorization headers: 401 UNAUTHORIZED', async () => {
    const s = server();
    err(await withAuthorization(s, 'Bearer abc').get('/users/me'), 401, 'UNAUTHORIZED', 'This endpoint requires HTTP basic authentication.');
    err(await withAuthorization(s, 'Basic').get('/users/me'), 401, 'UNAUTHORIZED', 'Invalid authorization header for basic auth');
    err(await withAuthorization(s, 'Basic a b').get('/users/me'), 401, 'UNAUTHORIZED', 'Invalid authorization header for basic auth');
    err(await withAuthorization(s, `Basic ${Buffer.from('no-colon').toString('base64')}`).get('/users/me'), 401, 'UNAUTHORIZED', 'Invalid authorization header for basic auth');
  });

  test('wrong or malformed API keys: 401 INVALID_API_KEY', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    err(await withAuthorization(s, basic(hamlet.user.email, 'short')).get('/users/me'), 401, 'INVALID_API_KEY', 'Malformed API key');
    err(await withAuthorization(s, basic(hamlet.user.email, 'A'.repeat(32))).get('/users/me'), 401, 'INVALID_API_KEY', 'Invalid API key');
    // Another user's valid key does not authenticate this email.
    err(await withAuthorization(s, basic(hamlet.user.email, othello.user.api_key)).get('/users/me'), 401, 'INVALID_API_KEY', 'Invalid API key');
    err(await withAuthorization(s, basic('nobody@example.com', hamlet.user.api_key)).get('/users/me'), 401, 'INVALID_API_KEY', 'Invalid API key');
    // Emails are matched case-insensitively.
    assert.equal(ok(await withAuthorization(s, basic('HAMLET@example.com', hamlet.user.api_key)).get('/users/me')).user_id, hamlet.user.id);
  });

  test('a deactivated user is refused with USER_DEACTIVATED, and accepted again once reactivated', async () => {
    const s = server();
    const user = await doCreateUser(s.app.services, s.realm, { email: `gone-${s.kind}@example.com`, fullName: 'Gone', password: PASSWORD, role: ROLE_MEMBER, actingUser: null });
    const client = s.clientFor(user);
    ok(await client.get('/users/me'));
    await doDeactivateUser(s.app.services, s.realm, user, null);
    err(await client.get('/users/me'), 401, 'USER_DEACTIVATED', 'Account is deactivated');
    err(await client.get('/users/me', {}), 401, 'USER_DEACTIVATED');
    err(await s.anonymous.post('/fetch_api_key', { username: user.email, password: PASSWORD }), 401, 'USER_DEACTIVATED', 'Account is deactivated');
    // Someone who does not know the password learns nothing about the account.
    err(await s.anonymous.post('/fetch_api_key', { username: user.email, password: 'wrong password' }), 401, 'AUTHENTICATION_FAILED');
    await doReactivateUser(s.app.services, s.realm, { ...user, is_active: 0 }, null);
    ok(await client.get('/users/me'));
  });

  test('a deactivated organization is refused with REALM_DEACTIVATED', async () => {
    const s = server();
    const db = s.app.services.db.kysely;
    await updateRealmRow(db, s.realm.id, { deactivated: 1 });
    try {
      err(await s.cast.hamlet.client.get('/users/me'), 401, 'REALM_DEACTIVATED', 'This organization has been deactivated');
      err(await s.cast.owner.client.get('/users'), 401, 'REALM_DEACTIVATED');
      err(await s.anonymous.post('/fetch_api_key', { username: s.cast.hamlet.user.email, password: PASSWORD }), 401, 'REALM_DEACTIVATED');
    } finally {
      await updateRealmRow(db, s.realm.id, { deactivated: 0 });
    }
    ok(await s.cast.hamlet.client.get('/users/me'));
  });

  test('/json routes need a session (or Basic credentials)', async () => {
    const s = server();
    const res = await s.anonymous.request('GET', '/users/me', {}, 'query', '/json');
    err(res, 401, 'UNAUTHORIZED', 'Not logged in: API authentication or user session required');
    const cookie = new ApiClient(s.url, null, null, { Cookie: 'parley_session=not-a-session' });
    err(await cookie.request('GET', '/users/me', {}, 'query', '/json'), 401, 'UNAUTHORIZED', 'Not logged in: API authentication or user session required');
    assert.equal(ok(await s.cast.hamlet.client.request('GET', '/users/me', {}, 'query', '/json')).user_id, s.cast.hamlet.user.id);
  });

  test('unauthenticated endpoints stay open', async () => {
    const s = server();
    ok(await s.anonymous.get('/server_settings'));
  });
});
