import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { responseViolation, sendRaw, type Built } from '../helpers/fuzz.js';

/**
 * Every crash the fuzzer (test/reliability/fuzz.test.ts, npm run fuzz) has found, replayed
 * byte for byte. Each must answer a Zulip JSON error (or success), never a 5xx.
 */
/** Requests whose NUL reached PostgreSQL, which refuses it in text (500 before the fix). */
const NUL_REQUESTS: [string, string, string][] = [
  ['POST', '/fetch_api_key', 'username=a%00b&password=abcd1234'],
  ['POST', '/realm/profile_fields', 'name=a%00b&field_type=1'],
  ['DELETE', '/users/me/subscriptions', 'subscriptions=%5B%22a%5Cu0000b%22%5D'],
  ['PATCH', '/users/me/subscriptions', 'delete=%5B%22a%5Cu0000b%22%5D'],
  ['GET', '/get_stream_id?stream=a%00b', ''],
  ['HEAD', '/get_stream_id?stream=a%00b', ''],
  ['POST', '/user_topics', 'stream_id=STREAM&topic=a%00b&visibility_policy=3'],
  ['PATCH', '/users/me/subscriptions/muted_topics', 'stream=a%00b&topic=dinner&op=add'],
  ['POST', '/navigation_views', 'fragment=narrow%2Fis%2Fstarred&is_pinned=true&name=a%00b'],
  ['POST', '/saved_snippets', 'title=a%00b&content=x'],
  ['POST', '/saved_snippets', 'title=x&content=a%00b'],
  ['POST', '/realm/playgrounds', 'name=a%00b&pygments_language=Python&url_template=https%3A%2F%2Fpython.example.com%3Fcode%3D%7Bcode%7D'],
  ['POST', '/users/me/android_gcm_reg_id', 'token=a%00b'],
  ['DELETE', '/users/me/android_gcm_reg_id', 'token=a%00b'],
  ['POST', '/user_groups/create', 'name=a%00b&description=x&members=%5B%5D'],
  ['POST', '/user_groups/create', 'name=nul%20group&description=a%00b&members=%5B%5D'],
  ['PATCH', '/streams/STREAM', 'description=a%00b'],
];

function raw(method: string, path: string, headers: Record<string, string> = {}, body: Buffer | string | null = null): Built {
  return { method, path, headers: { 'user-agent': 'ParleyFuzz/1.0', ...headers }, body: body === null ? null : Buffer.from(body) };
}

forEachDatabase('fuzz regressions', (server) => {
  const expect = async (b: Built, status: number, code?: string): Promise<void> => {
    const res = await sendRaw(server().url, b);
    assert.equal(responseViolation(b.method, res), null);
    assert.equal(res.status, status, res.text);
    if (code) assert.equal((res.body as { code: string }).code, code);
  };

  test('NUL characters in parameters that reach the database (was 500 on PostgreSQL: invalid byte sequence)', async () => {
    const s = server();
    const owner = s.cast.owner.user;
    const auth = { authorization: `Basic ${Buffer.from(`${owner.email}:${owner.api_key}`).toString('base64')}` };
    const form = { ...auth, 'content-type': 'application/x-www-form-urlencoded' };
    await s.cast.owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'nul regressions' }] });
    const stream = await s.app.services.db.kysely.selectFrom('streams').select('id').where('name', '=', 'nul regressions').executeTakeFirstOrThrow();
    for (const [method, path, body] of NUL_REQUESTS) {
      const b = raw(method, `/api/v1${path.replace('STREAM', String(stream.id))}`, body ? form : auth, body ? body.replace('STREAM', String(stream.id)) : null);
      const res = await sendRaw(s.url, b);
      assert.equal(responseViolation(method, res), null, `${method} ${path}`);
      // SQLite stores NUL, so there some of these succeed; PostgreSQL must refuse them cleanly.
      if (s.kind === 'postgres') assert.equal(res.status, 400, `${method} ${path}: ${res.text}`);
    }
  });

  test("errors raised before routing are Zulip JSON (were Fastify's own shape)", async () => {
    // A path that is not valid percent-encoded UTF-8.
    await expect(raw('GET', '/api/v1/users/%FF'), 400, 'BAD_REQUEST');
    await expect(raw('GET', '/api/v1/user_groups/%ED%A0%80/members'), 400, 'BAD_REQUEST');
    // A path parameter longer than the router takes.
    await expect(raw('GET', `/api/v1/streams/${'1'.repeat(1100)}`), 414, 'BAD_REQUEST');
    // Headers over Node's 16 KiB: answered (and the connection closed) by the client-error handler.
    await expect(raw('GET', `/api/v1/users/me?x=${'a'.repeat(20_000)}`), 431, 'BAD_REQUEST');
    await expect(raw('GET', '/api/v1/users/me', { 'x-long': 'b'.repeat(20_000) }), 431, 'BAD_REQUEST');
  });

  test('session cookie with a malformed percent-encoding (was 500: URIError in decodeURIComponent)', async () => {
    await expect(raw('GET', '/json/realm/presence', { cookie: 'parley_session=%E0%A4%A' }), 401, 'UNAUTHORIZED');
    await expect(raw('HEAD', '/json/users/2/presence', { cookie: 'parley_session=%E0%A4%A' }), 401);
  });
});
