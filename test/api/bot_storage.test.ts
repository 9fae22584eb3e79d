import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';

forEachDatabase('bot storage', (server) => {
  test('PUT, GET and DELETE /bot_storage keep a bot\'s string entries', async () => {
    const s = server();
    const c = s.cast.bot.client;
    const put = await c.put('/bot_storage', { storage: { foo: 'bar', n: '42' } });
    ok(put);
    assertConforms(put, 'PUT', '/bot_storage');
    const all = await c.get('/bot_storage');
    assertConforms(all, 'GET', '/bot_storage');
    assert.deepEqual(ok(all).storage, { foo: 'bar', n: '42' });
    ok(await c.put('/bot_storage', { storage: { n: '43' } }));
    assert.deepEqual(ok(await c.get('/bot_storage', { keys: ['n'] })).storage, { n: '43' });
    err(await c.get('/bot_storage', { keys: ['n', 'missing'] }), 400, 'BAD_REQUEST', 'Key does not exist.');
    err(await c.delete('/bot_storage', { keys: ['foo', 'missing'] }), 400, 'BAD_REQUEST', 'Key does not exist.');
    assert.deepEqual(ok(await c.get('/bot_storage')).storage, { foo: 'bar', n: '43' }, 'a failed delete removes nothing');
    const del = await c.delete('/bot_storage', { keys: ['foo'] });
    ok(del);
    assertConforms(del, 'DELETE', '/bot_storage');
    assert.deepEqual(ok(await c.get('/bot_storage')).storage, { n: '43' });
    ok(await c.delete('/bot_storage'));
    assert.deepEqual(ok(await c.get('/bot_storage')).storage, {});

    err(await c.put('/bot_storage', { storage: { x: 1 } }), 400, 'BAD_REQUEST', 'storage[x] is not a string');
    err(await c.put('/bot_storage', {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'storage' argument");
    const big = 'x'.repeat(10_000_000);
    err(await c.put('/bot_storage', { storage: { k: big } }), 400, 'BAD_REQUEST', 'Request exceeds storage limit by 1 characters. The limit is 10000000 characters.');
  });

  test('only bots have storage (feature level 494)', async () => {
    const s = server();
    for (const req of [s.cast.hamlet.client.get('/bot_storage'), s.cast.hamlet.client.put('/bot_storage', { storage: {} }), s.cast.admin.client.delete('/bot_storage')]) {
      const res = await req;
      err(res, 400, 'PERMISSION_DENIED', 'Must be a bot user');
    }
  });
});
