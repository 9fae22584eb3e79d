import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { responseViolation, sendRaw, type Built } from '../helpers/fuzz.js';

/**
 * Every crash the fuzzer (test/reliability/fuzz.test.ts, npm run fuzz) has found, replayed
 * byte for byte. Each must answer a Zulip JSON error (or success), never a 5xx.
 */
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

  test('session cookie with a malformed percent-encoding (was 500: URIError in decodeURIComponent)', async () => {
    await expect(raw('GET', '/json/realm/presence', { cookie: 'parley_session=%E0%A4%A' }), 401, 'UNAUTHORIZED');
    await expect(raw('HEAD', '/json/users/2/presence', { cookie: 'parley_session=%E0%A4%A' }), 401);
  });
});
