import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents } from '../helpers/bus.js';
import { registerQueue } from '../helpers/events.js';
import { createChannel, uniqueName } from './messages_send.fixtures.js';

const ISSUES = { pattern: '#(?P<id>[0-9]+)', url_template: 'https://github.com/zulip/zulip/issues/{id}' };

forEachDatabase('linkifiers', (server) => {
  test('administrators add linkifiers; everyone lists them; messages use them; events by capability', async () => {
    const s = server();
    const { admin, hamlet } = s.cast;
    const modern = await registerQueue(hamlet.client, { event_types: ['realm_linkifiers', 'realm_filters'], client_capabilities: { linkifier_url_template: true } });
    const { result, events } = await captureEvents(s, () => admin.client.post('/realm/filters', ISSUES));
    assertConforms(result, 'POST', '/realm/filters');
    const id = ok(result).id;
    assert.equal(typeof id, 'number');
    const entry = { id, ...ISSUES };
    const withTemplates = events.find((e) => e.event.type === 'realm_linkifiers' && e.onlyIf?.value === true)!;
    assert.deepEqual(withTemplates.event, { type: 'realm_linkifiers', realm_linkifiers: [entry] });
    assertEventConforms(withTemplates.event);
    assert.deepEqual(events.find((e) => e.event.type === 'realm_linkifiers' && e.onlyIf?.value === false)!.event.realm_linkifiers, []);
    // Zulip stopped sending the legacy realm_filters event at feature level 176.
    assert.equal(events.filter((e) => e.event.type === 'realm_filters').length, 0);
    assert.deepEqual((await modern.next('realm_linkifiers')).realm_linkifiers, [entry]);

    const list = await hamlet.client.get('/realm/linkifiers');
    assertConforms(list, 'GET', '/realm/linkifiers');
    assert.deepEqual(ok(list).linkifiers, [entry]);
    const reg = ok(await hamlet.client.post('/register', { fetch_event_types: ['realm_linkifiers'], client_capabilities: { linkifier_url_template: true } }));
    assert.deepEqual(reg.realm_linkifiers, [entry]);

    const name = uniqueName('Links');
    await createChannel(s, name, { subscribers: [hamlet.user] });
    const msg = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'bug #42', content: 'see #1234' })).id;
    const dict = ok(await hamlet.client.get(`/messages/${msg}`)).message;
    assert.equal(dict.content, '<p>see <a href="https://github.com/zulip/zulip/issues/1234">#1234</a></p>');
    assert.deepEqual(dict.topic_links, [{ text: '#42', url: 'https://github.com/zulip/zulip/issues/42' }]);
    await modern.delete();
  });

  test('validation follows Zulip\'s model checks, with the errors map', async () => {
    const s = server();
    const c = s.cast.admin.client;
    let body = err(await c.post('/realm/filters', { pattern: 'X(?P<id>[0-9]+)', url_template: 'https://x.example/{id' }), 400, 'BAD_REQUEST', 'Invalid URL template.');
    assert.deepEqual(body.errors, { url_template: ['Invalid URL template.'] });
    body = err(await c.post('/realm/filters', { pattern: '#(?P<id>[0-9]+)', url_template: 'https://x.example/{id}/{org}' }), 400, 'BAD_REQUEST');
    assert.equal(body.msg, "Group 'org' in URL template is not present in linkifier pattern.");
    assert.deepEqual(body.errors, { __all__: [body.msg] });
    err(
      await c.post('/realm/filters', { pattern: '(?P<org>[a-z]+)#(?P<id>[0-9]+)', url_template: 'https://x.example/{id}' }),
      400,
      'BAD_REQUEST',
      "Group 'org' in linkifier pattern is not present in URL template.",
    );
    err(await c.post('/realm/filters', { pattern: '#(?P<id>[0-9]+', url_template: 'https://x.example/{id}' }), 400, 'BAD_REQUEST', /^Bad regular expression: /);
    body = err(await c.post('/realm/filters', { pattern: '', url_template: '' }), 400, 'BAD_REQUEST', 'This field cannot be blank.');
    assert.deepEqual(body.errors, { pattern: ['This field cannot be blank.'], url_template: ['This field cannot be blank.'] });
    err(await c.post('/realm/filters', { pattern: 'x' }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'url_template' argument");
    ok(await c.post('/realm/filters', { pattern: 'T(?P<n>[0-9]+)', url_template: 'https://t.example/{n}' }));
    err(await c.post('/realm/filters', { pattern: 'T(?P<n>[0-9]+)', url_template: 'https://other.example/{n}' }), 400, 'BAD_REQUEST', 'Realm filter with this Realm and Pattern already exists.');
    for (const who of [s.cast.moderator, s.cast.hamlet, s.cast.guest]) {
      err(await who.client.post('/realm/filters', ISSUES), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
      err(await who.client.delete('/realm/filters/1'), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    }
  });

  test('update, reorder and delete', async () => {
    const s = server();
    const c = s.cast.admin.client;
    const before = ok(await c.get('/realm/linkifiers')).linkifiers.map((l: { id: number }) => l.id);
    const a = ok(await c.post('/realm/filters', { pattern: 'A(?P<n>[0-9]+)', url_template: 'https://a.example/{n}' })).id;
    const b = ok(await c.post('/realm/filters', { pattern: 'B(?P<n>[0-9]+)', url_template: 'https://b.example/{n}' })).id;

    const upd = await c.patch(`/realm/filters/${a}`, { pattern: 'AA(?P<n>[0-9]+)', url_template: 'https://aa.example/{n}' });
    ok(upd);
    assertConforms(upd, 'PATCH', '/realm/filters/{filter_id}');
    err(await c.patch(`/realm/filters/${a}`, { pattern: 'B(?P<n>[0-9]+)', url_template: 'https://a.example/{n}' }), 400, 'BAD_REQUEST', 'Realm filter with this Realm and Pattern already exists.');
    // Keeping one's own pattern is not a duplicate.
    ok(await c.patch(`/realm/filters/${a}`, { pattern: 'AA(?P<n>[0-9]+)', url_template: 'https://aaa.example/{n}' }));
    err(await c.patch('/realm/filters/999999', { pattern: 'Z(?P<n>[0-9]+)', url_template: 'https://z.example/{n}' }), 400, 'BAD_REQUEST', 'Linkifier not found.');

    const order = [b, ...before, a];
    const res = await c.patch('/realm/linkifiers', { ordered_linkifier_ids: order });
    ok(res);
    assertConforms(res, 'PATCH', '/realm/linkifiers');
    assert.deepEqual(ok(await c.get('/realm/linkifiers')).linkifiers.map((l: { id: number }) => l.id), order);
    err(await c.patch('/realm/linkifiers', { ordered_linkifier_ids: [b, b] }), 400, 'BAD_REQUEST', 'The ordered list must not contain duplicated linkifiers');
    err(await c.patch('/realm/linkifiers', { ordered_linkifier_ids: [b] }), 400, 'BAD_REQUEST', 'The ordered list must enumerate all existing linkifiers exactly once');

    const del = await c.delete(`/realm/filters/${a}`);
    ok(del);
    assertConforms(del, 'DELETE', '/realm/filters/{filter_id}');
    err(await c.delete(`/realm/filters/${a}`), 400, 'BAD_REQUEST', 'Linkifier not found.');
    assert.deepEqual(ok(await c.get('/realm/linkifiers')).linkifiers.map((l: { id: number }) => l.id), [b, ...before]);
  });
});
