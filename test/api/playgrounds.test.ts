import { fetchActiveUserIds } from '../../src/db/repos/users.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { parseUriTemplate } from '../../src/lib/uri_template.js';

test('parseUriTemplate accepts RFC 6570 templates and lists their variables', () => {
  assert.deepEqual(parseUriTemplate('https://python.example.com?code={code}')?.variables, ['code']);
  assert.deepEqual(parseUriTemplate('https://ex.com/run{?code,lang}')?.variables, ['code', 'lang']);
  assert.deepEqual(parseUriTemplate('https://ex.com/{+path}/{#frag}{/seg*}{;x:3}{.dom}{&a}')?.variables, ['path', 'frag', 'seg', 'x', 'dom', 'a']);
  assert.deepEqual(parseUriTemplate('https://ex.com/%20plain')?.variables, []);
  assert.deepEqual(parseUriTemplate('https://ex.com/{a.b,c%20d}')?.variables, ['a.b', 'c%20d']);
  for (const bad of ['https://ex.com/{code', 'https://ex.com/code}', 'https://ex.com/{}', 'https://ex.com/{=code}', 'https://ex.com/{!code}',
    'https://ex.com/{co de}', 'https://ex.com/{code:0}', 'https://ex.com/{code:10000}', 'https://ex.com/{code*:3}', 'https://ex.com/{.a..b}',
    'https://ex.com/{code}}', 'https://ex.com/{{code}}', 'https://ex.com/%zz', 'https://ex.com/a b', 'https://ex.com/<{code}>']) {
    assert.equal(parseUriTemplate(bad), null, bad);
  }
});

forEachDatabase('code playgrounds', (server) => {
  test('POST /realm/playgrounds (administrators) adds a playground and sends the full list to everyone', async () => {
    const s = server();
    const { result, events } = await captureEvents(s, () =>
      s.cast.admin.client.post('/realm/playgrounds', { name: 'Python playground', pygments_language: 'Python', url_template: 'https://python.example.com?code={code}' }),
    );
    const body = ok(result);
    assertConforms(result, 'POST', '/realm/playgrounds');
    assert.equal(typeof body.id, 'number');
    assert.equal(events.length, 1);
    const expected = { id: body.id, name: 'Python playground', pygments_language: 'Python', url_template: 'https://python.example.com?code={code}' };
    assert.deepEqual(events[0]!.event, { type: 'realm_playgrounds', realm_playgrounds: [expected] });
    assert.deepEqual(recipientIds(events[0]!), (await fetchActiveUserIds(s.app.services.db.kysely, s.realm.id)).sort((a, b) => a - b));
    assertEventConforms(events[0]!.event);

    // The spec's parameter name; the list grows, in creation order.
    const second = ok(await s.cast.owner.client.post('/realm/playgrounds', { name: 'Rust', highlighter_language: 'Rust', url_template: 'https://play.rust-lang.org/{?code}' }));
    const again = await captureEvents(s, () => s.cast.owner.client.delete(`/realm/playgrounds/${second.id}`));
    ok(again.result);
    assertConforms(again.result, 'DELETE', '/realm/playgrounds/{playground_id}');
    assert.deepEqual(again.events[0]!.event, { type: 'realm_playgrounds', realm_playgrounds: [expected] });
    assertEventConforms(again.events[0]!.event);
  });

  test('only administrators may add or remove playgrounds, whatever the parameters', async () => {
    const s = server();
    for (const who of [s.cast.moderator, s.cast.hamlet, s.cast.guest]) {
      err(await who.client.post('/realm/playgrounds', {}), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
      err(await who.client.delete('/realm/playgrounds/1'), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    }
  });

  test('url_template must be an RFC 6570 template whose only variable is code', async () => {
    const s = server();
    const c = s.cast.admin.client;
    const post = (url_template: string, extra: Record<string, string> = {}) =>
      c.post('/realm/playgrounds', { name: 'JS', pygments_language: 'javascript', url_template, ...extra });
    let body = err(await post('https://js.example.com/{code'), 400, 'BAD_REQUEST', 'Invalid URL template.');
    assert.deepEqual(body.errors, { url_template: ['Invalid URL template.'] });
    body = err(await post('https://js.example.com/?q={query}'), 400, 'BAD_REQUEST', 'Missing the required variable "code" in the URL template');
    assert.deepEqual(body.errors, { __all__: ['Missing the required variable "code" in the URL template'] });
    err(await post('https://js.example.com/{lang}?c={code}'), 400, 'BAD_REQUEST', '"code" should be the only variable present in the URL template');
    err(await post('https://js.example.com/'), 400, 'BAD_REQUEST', 'Missing the required variable "code" in the URL template');
    err(await post('   '), 400, 'BAD_REQUEST', 'This field cannot be blank.');
    err(await post('https://js.example.com/{code}', { name: ' ' }), 400, 'BAD_REQUEST', 'This field cannot be blank.');
    ok(await post('https://js.example.com/#{code}'));
  });

  test('pygments_language is limited in characters and length; duplicates are refused', async () => {
    const s = server();
    const c = s.cast.admin.client;
    const add = (name: string, lang: string) => c.post('/realm/playgrounds', { name, pygments_language: lang, url_template: 'https://x.example.com/{code}' });
    err(await add('Bad', 'a$b$c'), 400, 'BAD_REQUEST', 'Invalid characters in pygments language');
    err(await add('Long', 'x'.repeat(41)), 400, 'BAD_REQUEST', 'pygments_language is too long (limit: 40 characters)');
    err(await add('Blank', ''), 400, 'BAD_REQUEST', 'This field cannot be blank.');
    ok(await add('C++ online', 'C++'));
    const dup = err(await add('C++ online', 'C++'), 400, 'BAD_REQUEST', 'Realm playground with this Realm, Pygments language and Name already exists.');
    assert.deepEqual(dup.errors, { __all__: ['Realm playground with this Realm, Pygments language and Name already exists.'] });
    ok(await add('C++ other', 'C++'));
    const missing = err(await c.post('/realm/playgrounds', { name: 'x', url_template: 'https://x.example.com/{code}' }), 400, 'REQUEST_VARIABLE_MISSING');
    assert.equal(missing.var_name, 'pygments_language');
  });

  test('DELETE of an unknown playground answers "Invalid playground"', async () => {
    const s = server();
    err(await s.cast.admin.client.delete('/realm/playgrounds/999999'), 400, 'BAD_REQUEST', 'Invalid playground');
  });
});
