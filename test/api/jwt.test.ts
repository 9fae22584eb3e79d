import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT } from 'jose';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import type { ParamValue } from '../helpers/client.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { doDeactivateUser, doReactivateUser } from '../../src/actions/users.js';

const KEY = 'a shared secret of at least thirty-two bytes!';

const sign = (claims: Record<string, unknown>, key = KEY, alg = 'HS256') =>
  new SignJWT(claims).setProtectedHeader({ alg }).setIssuedAt().sign(new TextEncoder().encode(key));

forEachDatabase(
  'JWT fetch_api_key',
  (server) => {
    const post = (s: TestServer, params: Record<string, ParamValue>) => s.anonymous.post('/jwt/fetch_api_key', params);

    test('a token with the email claim gives the API key, and the profile when asked', async () => {
      const s = server();
      const hamlet = s.cast.hamlet.user;
      const res = await post(s, { token: await sign({ email: hamlet.delivery_email }) });
      assertConforms(res, 'post', '/jwt/fetch_api_key');
      const body = ok(res);
      assert.deepEqual([body.api_key, body.email, body.user], [hamlet.api_key, hamlet.delivery_email, undefined]);
      const withProfile = await post(s, { token: await sign({ email: 'HAMLET@example.com' }), include_profile: true });
      assertConforms(withProfile, 'post', '/jwt/fetch_api_key');
      const user = ok(withProfile).user;
      assert.deepEqual([user.user_id, user.full_name, user.is_active], [hamlet.id, hamlet.full_name, true]);
    });

    test('bad tokens, missing claims and unknown people are refused', async () => {
      const s = server();
      err(await post(s, {}), 400, 'BAD_REQUEST', 'No JSON web token passed in request');
      err(await post(s, { token: 'not.a.token' }), 400, 'BAD_REQUEST', 'Bad JSON web token');
      err(await post(s, { token: await sign({ email: s.cast.hamlet.user.email }, 'another key of at least thirty-two bytes!!') }), 400, 'BAD_REQUEST', 'Bad JSON web token');
      // Only the configured algorithms: HS512 is not accepted when HS256 is configured.
      err(await post(s, { token: await sign({ email: s.cast.hamlet.user.email }, KEY, 'HS512') }), 400, 'BAD_REQUEST', 'Bad JSON web token');
      const expired = await new SignJWT({ email: s.cast.hamlet.user.email }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime(Math.floor(Date.now() / 1000) - 60).sign(new TextEncoder().encode(KEY));
      err(await post(s, { token: expired }), 400, 'BAD_REQUEST', 'Bad JSON web token');
      err(await post(s, { token: await sign({ sub: 'x' }) }), 400, 'BAD_REQUEST', 'No email specified in JSON web token claims');
      err(await post(s, { token: await sign({ email: 'nobody@example.com' }) }), 401, 'AUTHENTICATION_FAILED', 'Your username or password is incorrect');
      err(await post(s, { token: await sign({ email: s.cast.bot.user.email }) }), 401, 'AUTHENTICATION_FAILED');
    });

    test('a deactivated account is refused', async () => {
      const s = server();
      const othello = s.cast.othello.user;
      await doDeactivateUser(s.app.services, s.realm, othello, null);
      try {
        err(await post(s, { token: await sign({ email: othello.email }) }), 401, 'USER_DEACTIVATED', 'Account is deactivated');
      } finally {
        await doReactivateUser(s.app.services, s.realm, { ...othello, is_active: 0 }, null);
      }
    });
  },
  { jwt: { key: KEY, algorithms: ['HS256'] } },
);

forEachDatabase('JWT fetch_api_key, not configured', (server) => {
  test('without a key: JWT authentication is not enabled', async () => {
    const s = server();
    err(await s.anonymous.post('/jwt/fetch_api_key', { token: await sign({ email: s.cast.hamlet.user.email }) }), 400, 'BAD_REQUEST', 'JWT authentication is not enabled for this organization');
  });
});
