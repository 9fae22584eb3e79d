import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { ok, err } from '../helpers/assert.js';
import { sendRaw, type RawResponse } from '../helpers/fuzz.js';
import { MAX_NARROW_TERMS, MAX_SEARCH_OPERAND_LENGTH } from '../../src/lib/narrow/terms.js';
import { MAX_FLAG_UPDATE_MESSAGES } from '../../src/routes/messages/index.js';
import { MAX_BLOCK_NESTING } from '../../src/lib/markdown/limits.js';

/**
 * Limits on the work one request can cause: every bound answers a clear Zulip error, fast,
 * and the server keeps answering. Each case also has a time budget far below any timeout.
 */
function basic(s: TestServer): Record<string, string> {
  const u = s.cast.hamlet.user;
  return { authorization: `Basic ${Buffer.from(`${u.email}:${u.api_key}`).toString('base64')}` };
}

/** Runs a request and asserts it answered within `ms`. */
async function timed<T>(ms: number, f: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const out = await f();
  const took = Date.now() - started;
  assert.ok(took < ms, `took ${took} ms (budget ${ms} ms)`);
  return out;
}

function zulipError(res: RawResponse, status: number, code: string, msg?: RegExp): void {
  assert.equal(res.status, status, res.text.slice(0, 300));
  const body = res.body as { result: string; code: string; msg: string };
  assert.equal(body.result, 'error');
  assert.equal(body.code, code);
  if (msg) assert.match(body.msg, msg);
}

forEachDatabase(
  'limits on work',
  (server) => {
    test('request bodies over the limit: 413 JSON for form, JSON and multipart bodies (multipart was read without bound)', async () => {
      const s = server();
      // The default limit (26 MiB, Zulip's upload size plus room).
      const big = Buffer.alloc(s.config.bodyLimitBytes + 10, 0x61);
      const form = await timed(5000, () =>
        sendRaw(s.url, { method: 'POST', path: '/api/v1/messages', headers: { ...basic(s), 'content-type': 'application/x-www-form-urlencoded' }, body: Buffer.concat([Buffer.from('content='), big]) }),
      );
      zulipError(form, 413, 'BAD_REQUEST', /too large/);
      const json = await timed(5000, () =>
        sendRaw(s.url, { method: 'POST', path: '/api/v1/messages', headers: { ...basic(s), 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify({ content: big.toString() })) }),
      );
      zulipError(json, 413, 'BAD_REQUEST', /too large/);
      const boundary = 'limitboundary';
      const part = (name: string, value: Buffer | string): Buffer =>
        Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n`), Buffer.from(value), Buffer.from('\r\n')]);
      const headers = { ...basic(s), 'content-type': `multipart/form-data; boundary=${boundary}` };
      // One field over the limit (busboy used to truncate it silently and the message was sent).
      const oneField = Buffer.concat([part('type', 'stream'), part('to', 'limits'), part('topic', 't'), part('content', big), Buffer.from(`--${boundary}--\r\n`)]);
      zulipError(await timed(5000, () => sendRaw(s.url, { method: 'POST', path: '/api/v1/messages', headers, body: oneField })), 413, 'BAD_REQUEST', /too large/);
      // Many small fields adding up to more than the limit.
      const fieldCount = Math.ceil(s.config.bodyLimitBytes / 16384) + 1;
      const many = Buffer.concat([...Array.from({ length: fieldCount }, (_, i) => part(`f${i}`, 'y'.repeat(16384))), Buffer.from(`--${boundary}--\r\n`)]);
      zulipError(await timed(5000, () => sendRaw(s.url, { method: 'POST', path: '/api/v1/users/me/presence', headers, body: many })), 413, 'BAD_REQUEST', /too large/);
      // Under the limit, multipart still works (zulip-js sends it).
      ok(await s.cast.hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'limits' }] }));
      const small = Buffer.concat([part('type', 'stream'), part('to', 'limits'), part('topic', 't'), part('content', 'small enough'), Buffer.from(`--${boundary}--\r\n`)]);
      const sent = await sendRaw(s.url, { method: 'POST', path: '/api/v1/messages', headers, body: small });
      assert.equal(sent.status, 200, sent.text);
    });

    test(`narrows: at most ${MAX_NARROW_TERMS} terms (20,000 terms answered 500 on SQLite, seconds of work on either database)`, async () => {
      const s = server();
      const c = s.cast.hamlet.client;
      const terms = (n: number) => Array.from({ length: n }, () => ({ operator: 'channel', operand: 'limits', negated: false }));
      const flagsNarrow = (n: number) => c.post('/messages/flags/narrow', { anchor: 'newest', num_before: 10, num_after: 0, narrow: terms(n), op: 'add', flag: 'starred' });
      ok(await flagsNarrow(MAX_NARROW_TERMS));
      err(await timed(2000, () => flagsNarrow(MAX_NARROW_TERMS + 1)), 400, 'BAD_REQUEST', `narrow has too many terms (limit: ${MAX_NARROW_TERMS})`);
      err(await timed(5000, () => flagsNarrow(20_000)), 400, 'BAD_REQUEST', `narrow has too many terms (limit: ${MAX_NARROW_TERMS})`);
      // GET /messages and matches_narrow carry the narrow in the URL, which is bounded too.
      err(await c.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: terms(MAX_NARROW_TERMS + 1).map(() => ({ operator: 'is', operand: 'starred' })) }), 400, 'BAD_REQUEST', `narrow has too many terms (limit: ${MAX_NARROW_TERMS})`);
      // Search operands: each word is a full-text term (50,000 words answered 500 on PostgreSQL).
      const search = (text: string) => c.post('/messages/flags/narrow', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'search', operand: text }], op: 'add', flag: 'starred' });
      ok(await timed(5000, () => search('a '.repeat(MAX_SEARCH_OPERAND_LENGTH / 2))));
      err(await timed(5000, () => search(Array.from({ length: 50_000 }, (_, i) => `w${i % 97}`).join(' '))), 400, 'BAD_REQUEST', `operand is too long (limit: ${MAX_SEARCH_OPERAND_LENGTH} characters)`);
      ok(await c.get('/users/me'));
    });

    test(`message flags: at most ${MAX_FLAG_UPDATE_MESSAGES} message IDs per request (200,000 answered 500)`, async () => {
      const s = server();
      const c = s.cast.hamlet.client;
      const ids = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
      err(await timed(5000, () => c.post('/messages/flags', { messages: ids(200_000), op: 'add', flag: 'read' })), 400, 'BAD_REQUEST', `Too many messages (maximum ${MAX_FLAG_UPDATE_MESSAGES})`);
      err(await c.post('/messages/flags', { messages: ids(MAX_FLAG_UPDATE_MESSAGES + 1), op: 'add', flag: 'read' }), 400, 'BAD_REQUEST', `Too many messages (maximum ${MAX_FLAG_UPDATE_MESSAGES})`);
      // At the limit: refused only because these IDs are not the user's messages.
      err(await timed(5000, () => c.post('/messages/flags', { messages: ids(MAX_FLAG_UPDATE_MESSAGES), op: 'add', flag: 'starred' })), 400, 'BAD_REQUEST', 'Invalid message(s)');
    });

    test('recipient and principal lists of 100,000 IDs: a clear error, not a 500 (too many SQL variables)', async () => {
      const s = server();
      const ids = Array.from({ length: 100_000 }, (_, i) => i + 1);
      err(await timed(5000, () => s.cast.hamlet.client.post('/messages', { type: 'direct', to: ids, content: 'to everyone' })), 400, 'BAD_REQUEST', /^Invalid user ID \d+$/);
      err(await timed(5000, () => s.cast.owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'limits' }], principals: ids })), 400, 'BAD_REQUEST', 'No such user');
      err(await timed(5000, () => s.cast.owner.client.post('/typing', { op: 'start', to: ids })), 400, 'BAD_REQUEST');
      err(await timed(5000, () => s.cast.owner.client.post('/user_groups/create', { name: 'everyone at once', description: 'x', members: ids })), 400, 'BAD_REQUEST');
      // Every real user in one direct message still works.
      const everyone = Object.values(s.cast).map((m) => m.user.id);
      ok(await s.cast.hamlet.client.post('/messages', { type: 'direct', to: everyone, content: 'to all of you' }));
    });

    test('invitations: at most 100 addresses per request', async (t) => {
      const s = server();
      if (!s.app.fastify.hasRoute({ method: 'POST', url: '/api/v1/invites' })) {
        t.skip('POST /invites is not served yet');
        return;
      }
      const emails = (n: number) => Array.from({ length: n }, (_, i) => `limit${i}@example.com`).join(',');
      err(await timed(2000, () => s.cast.owner.client.post('/invites', { invitee_emails: emails(20_000), stream_ids: [] })), 400, 'BAD_REQUEST', 'You can invite at most 100 people at once.');
      err(await s.cast.owner.client.post('/invites', { invitee_emails: emails(101), stream_ids: [] }), 400, 'BAD_REQUEST', 'You can invite at most 100 people at once.');
    });

    test(`Markdown: nesting beyond ${MAX_BLOCK_NESTING} levels renders as text, quickly`, async () => {
      const s = server();
      const c = s.cast.hamlet.client;
      const cases = [
        '>'.repeat(9000) + ' deep quote',
        Array.from({ length: 400 }, (_, i) => `${' '.repeat(i * 2)}* level ${i}`).join('\n'),
        '*a '.repeat(3000),
        '[' .repeat(3000) + 'x' + ']('.repeat(3000),
        '```\n'.repeat(2000),
        '$$' + '\\frac{'.repeat(1500) + '$$',
      ];
      for (const content of cases) {
        const sent = ok(await timed(3000, () => c.post('/messages', { type: 'stream', to: 'limits', topic: 'markdown', content: content.slice(0, 10_000) })));
        const fetched = ok(await c.get(`/messages/${sent.id}`));
        assert.equal(typeof fetched.message.content, 'string');
      }
    });
  },
);
