import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import type { ParamValue } from '../helpers/client.js';
import { fetchRaw, postFiles } from '../helpers/uploads.js';

/** Values that have broken servers before: wrong JSON types, NUL bytes, huge and odd strings. */
const NASTY: ParamValue[] = ['', 'null', '[]', '{}', '"x"', '-1', '1e999', '\u0000', 'x'.repeat(5000), '{"a":', '[1,"2",null]', '\ud800', '%zz', 'true'];

forEachDatabase('new endpoints with malformed input', (server) => {
  test('never a 500: every parameter of every new endpoint, each nasty value', async () => {
    const s = server();
    const c = s.cast.hamlet.client;
    const routes: [string, string, string[]][] = [
      ['POST', '/messages/1/reactions', ['emoji_name', 'emoji_code', 'reaction_type']],
      ['DELETE', '/messages/1/reactions', ['emoji_name', 'emoji_code', 'reaction_type']],
      ['POST', '/realm/emoji/x', []],
      ['DELETE', '/realm/emoji/x', []],
      ['POST', '/users/me/alert_words', ['alert_words']],
      ['DELETE', '/users/me/alert_words', ['alert_words']],
      ['POST', '/users/me/muted_users/1', []],
      ['POST', '/users/me/status', ['away', 'status_text', 'emoji_name', 'emoji_code', 'reaction_type']],
      ['GET', '/users/1/status', []],
      ['POST', '/messages/render', ['content']],
      ['GET', '/messages/1/history', ['allow_empty_topic_name']],
      ['POST', '/realm/filters', ['pattern', 'url_template']],
      ['PATCH', '/realm/linkifiers', ['ordered_linkifier_ids']],
      ['GET', '/attachments', []],
      ['DELETE', '/attachments/1', []],
      ['GET', '/user_uploads/1/ab/cd/x.txt', []],
    ];
    for (const who of [c, s.cast.admin.client, s.cast.bot.client]) {
      for (const [method, path, names] of routes) {
        for (const value of NASTY) {
          const params: Record<string, ParamValue> = {};
          for (const n of names) params[n] = value;
          const res = await who.request(method, path, params);
          assert.ok(res.status < 500, `${method} ${path} ${JSON.stringify(value).slice(0, 40)}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        }
      }
      for (const [method, path] of [['PUT', '/bot_storage'], ['GET', '/bot_storage'], ['DELETE', '/bot_storage']] as const) {
        for (const value of NASTY) {
          const res = await who.request(method, path, { storage: value, keys: value });
          assert.ok(res.status < 500, `${method} ${path}: ${res.status}`);
        }
      }
    }
    for (const path of ['/messages/abc/reactions', '/realm/emoji/%F0%9F', '/users/me/muted_users/99999999999999999999', '/realm/filters/-1', '/attachments/1.5']) {
      assert.ok((await c.request('DELETE', path)).status < 500, path);
    }
    for (const url of [
      '/user_uploads/abc/../../etc/passwd',
      '/user_uploads/temporary/%zz/x',
      '/user_uploads/temporary/a.b/x',
      '/user_avatars/abc/x.png',
      '/user_avatars/1/emoji/images/..%2F..%2Fx',
      '/thumbnail',
      '/thumbnail?url=%00',
      '/thumbnail?url=user_uploads/%zz&api_key=bad',
    ]) {
      assert.ok((await fetchRaw(`${s.url}${url}`)).status < 500, url);
    }
    assert.ok((await postFiles(c, '/user_uploads', [{ name: '\u0000..\\..', data: Buffer.alloc(0) }])).status < 500);
    assert.ok((await postFiles(c, '/users/me/avatar', [{ name: '', data: Buffer.alloc(0) }])).status < 500);
  });
});
