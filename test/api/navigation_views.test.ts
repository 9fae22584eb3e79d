import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { fetchOrgState } from '../../src/events/state/org.js';

forEachDatabase('navigation views', (server) => {
  test('POST /navigation_views adds a custom view with a name and announces it to the user', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const { result, events } = await captureEvents(s, () =>
      hamlet.client.post('/navigation_views', { fragment: ' narrow/is/alerted ', is_pinned: true, name: ' Alert Words ' }),
    );
    ok(result);
    assertConforms(result, 'POST', '/navigation_views');
    assert.equal(events.length, 1);
    assert.deepEqual(recipientIds(events[0]!), [hamlet.user.id]);
    assert.deepEqual(events[0]!.event, {
      type: 'navigation_view',
      op: 'add',
      navigation_view: { fragment: 'narrow/is/alerted', is_pinned: true, name: 'Alert Words' },
    });
    assertEventConforms(events[0]!.event);
    const list = await hamlet.client.get('/navigation_views');
    assertConforms(list, 'GET', '/navigation_views');
    assert.deepEqual(ok(list).navigation_views, [{ fragment: 'narrow/is/alerted', is_pinned: true, name: 'Alert Words' }]);
    assert.deepEqual(ok(await s.cast.othello.client.get('/navigation_views')).navigation_views, []);
  });

  test('built-in views take no name; custom views need one; duplicates and blanks are refused', async () => {
    const s = server();
    const c = s.cast.othello.client;
    for (const fragment of ['inbox', 'recent', 'feed', 'drafts', 'narrow/has/reaction/sender/me', 'narrow/is/mentioned', 'narrow/is/starred']) {
      err(await c.post('/navigation_views', { fragment, is_pinned: false, name: 'Mine' }), 400, 'BAD_REQUEST', 'Built-in views cannot have a custom name.');
    }
    const { result, events } = await captureEvents(s, () => c.post('/navigation_views', { fragment: 'inbox', is_pinned: false }));
    ok(result);
    assert.deepEqual(events[0]!.event.navigation_view, { fragment: 'inbox', is_pinned: false, name: null });
    assertEventConforms(events[0]!.event);
    err(await c.post('/navigation_views', { fragment: 'inbox', is_pinned: true }), 400, 'BAD_REQUEST', 'Navigation view already exists.');
    err(await c.post('/navigation_views', { fragment: 'narrow/is/unread', is_pinned: true }), 400, 'BAD_REQUEST', 'Custom views must have a valid name.');
    ok(await c.post('/navigation_views', { fragment: 'narrow/is/unread', is_pinned: true, name: 'Unread' }));
    err(await c.post('/navigation_views', { fragment: 'narrow/is/followed', is_pinned: true, name: 'Unread' }), 400, 'BAD_REQUEST', 'Navigation view already exists.');
    const blank = await c.post('/navigation_views', { fragment: '  ', is_pinned: true, name: 'x' });
    err(blank, 400, 'BAD_REQUEST', 'fragment cannot be blank');
    assertConforms(blank, 'POST', '/navigation_views');
    err(await c.post('/navigation_views', { fragment: 'narrow/is/dm', is_pinned: true, name: ' ' }), 400, 'BAD_REQUEST', 'name cannot be blank');
    err(await c.post('/navigation_views', { fragment: 'narrow/is/dm', is_pinned: 'yes', name: 'DMs' }), 400, 'BAD_REQUEST', 'is_pinned is not a boolean');
    const missing = err(await c.post('/navigation_views', { fragment: 'narrow/is/dm', name: 'DMs' }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'is_pinned' argument");
    assert.equal(missing.var_name, 'is_pinned');
  });

  test('PATCH /navigation_views/{fragment} with slashes in the fragment updates and sends only the given fields', async () => {
    const s = server();
    const { hamlet } = s.cast;
    ok(await hamlet.client.post('/navigation_views', { fragment: 'narrow/channel/9-design', is_pinned: true, name: 'Design' }));
    for (const path of ['/navigation_views/narrow/channel/9-design', '/navigation_views/narrow%2Fchannel%2F9-design']) {
      const { result, events } = await captureEvents(s, () => hamlet.client.patch(path, { is_pinned: false }));
      ok(result);
      assertConforms(result, 'PATCH', '/navigation_views/{fragment}');
      assert.deepEqual(events.map((e) => e.event), [
        { type: 'navigation_view', op: 'update', fragment: 'narrow/channel/9-design', data: { is_pinned: false } },
      ]);
      assert.deepEqual(recipientIds(events[0]!), [hamlet.user.id]);
      assertEventConforms(events[0]!.event);
    }
    const renamed = await captureEvents(s, () => hamlet.client.patch('/navigation_views/narrow/channel/9-design', { name: 'UX', is_pinned: true }));
    ok(renamed.result);
    assert.deepEqual(renamed.events[0]!.event.data, { name: 'UX', is_pinned: true });
    assertEventConforms(renamed.events[0]!.event);
    const views = ok(await hamlet.client.get('/navigation_views')).navigation_views;
    assert.deepEqual(views.find((v: { fragment: string }) => v.fragment === 'narrow/channel/9-design'), {
      fragment: 'narrow/channel/9-design',
      is_pinned: true,
      name: 'UX',
    });
    // The query-string style zulip-js uses for PATCH works too.
    ok(await hamlet.client.patch('/navigation_views/narrow/channel/9-design', { is_pinned: false }, 'query'));
  });

  test('PATCH refuses a name for built-in views, a taken name, and unknown fragments (404 NOT_FOUND)', async () => {
    const s = server();
    const c = s.cast.hamlet.client;
    ok(await c.post('/navigation_views', { fragment: 'recent', is_pinned: true }));
    ok(await c.post('/navigation_views', { fragment: 'narrow/is/private', is_pinned: true, name: 'Private' }));
    ok(await c.post('/navigation_views', { fragment: 'narrow/is/resolved', is_pinned: true, name: 'Resolved' }));
    const builtIn = await c.patch('/navigation_views/recent', { name: 'Recent stuff' });
    err(builtIn, 400, 'BAD_REQUEST', 'Built-in views cannot have a custom name.');
    assertConforms(builtIn, 'PATCH', '/navigation_views/{fragment}');
    err(await c.patch('/navigation_views/narrow/is/private', { name: 'Resolved' }), 400, 'BAD_REQUEST', 'Navigation view already exists.');
    const missing = await c.patch('/navigation_views/narrow/is/nothing', { is_pinned: true });
    err(missing, 404, 'NOT_FOUND', 'Navigation view does not exist.');
    assertConforms(missing, 'PATCH', '/navigation_views/{fragment}');
    // Another user's view is just as unknown.
    err(await s.cast.othello.client.patch('/navigation_views/narrow/is/private', { is_pinned: false }), 404, 'NOT_FOUND');
    err(await c.patch('/navigation_views/recent', { is_pinned: 'maybe' }), 400, 'BAD_REQUEST', 'is_pinned is not a boolean');
  });

  test('DELETE /navigation_views/{fragment} removes the view; unknown fragments are 404', async () => {
    const s = server();
    const c = s.cast.othello.client;
    ok(await c.post('/navigation_views', { fragment: 'narrow/is/mentioned', is_pinned: false }));
    const { result, events } = await captureEvents(s, () => c.delete('/navigation_views/narrow/is/mentioned'));
    ok(result);
    assertConforms(result, 'DELETE', '/navigation_views/{fragment}');
    assert.deepEqual(events.map((e) => e.event), [{ type: 'navigation_view', op: 'remove', fragment: 'narrow/is/mentioned' }]);
    assert.deepEqual(recipientIds(events[0]!), [s.cast.othello.user.id]);
    assertEventConforms(events[0]!.event);
    assert.equal(ok(await c.get('/navigation_views')).navigation_views.some((v: { fragment: string }) => v.fragment === 'narrow/is/mentioned'), false);
    const again = await c.delete('/navigation_views/narrow/is/mentioned');
    err(again, 404, 'NOT_FOUND', 'Navigation view does not exist.');
    assertConforms(again, 'DELETE', '/navigation_views/{fragment}');
  });
});

forEachDatabase('org register state', (server) => {
  test('register returns drafts, navigation_views, saved_snippets, realm_playgrounds and realm_domains as the endpoints list them', async () => {
    const s = server();
    const { hamlet, owner, admin } = s.cast;
    ok(await hamlet.client.post('/drafts', { drafts: [{ type: '', to: [], topic: '', content: 'draft' }] }));
    ok(await hamlet.client.post('/navigation_views', { fragment: 'inbox', is_pinned: true }));
    ok(await hamlet.client.post('/saved_snippets', { title: 'Hi', content: 'Hello' }));
    ok(await admin.client.post('/realm/playgrounds', { name: 'Py', pygments_language: 'Python', url_template: 'https://py.example.com/{code}' }));
    ok(await owner.client.post('/realm/domains', { domain: 'example.com', allow_subdomains: true }));
    const user = (await s.app.services.db.kysely.selectFrom('users').selectAll().where('id', '=', hamlet.user.id).executeTakeFirstOrThrow());
    const keys = ['drafts', 'navigation_views', 'saved_snippets', 'realm_playgrounds', 'realm_domains'];
    const state = await fetchOrgState({ services: s.app.services, realm: s.realm, user, options: {} as never, want: (t) => keys.includes(t) });
    assert.deepEqual(Object.keys(state).sort(), [...keys].sort());
    assert.deepEqual(state.drafts, ok(await hamlet.client.get('/drafts')).drafts);
    assert.deepEqual(state.navigation_views, ok(await hamlet.client.get('/navigation_views')).navigation_views);
    assert.deepEqual(state.saved_snippets, ok(await hamlet.client.get('/saved_snippets')).saved_snippets);
    assert.deepEqual(state.realm_domains, ok(await hamlet.client.get('/realm/domains')).domains);
    assert.deepEqual((state.realm_playgrounds as { name: string }[]).map((p) => p.name), ['Py']);
    assertConforms({ status: 200, headers: new Headers(), body: { result: 'success', msg: '', queue_id: null, ...state } }, 'POST', '/register');
    // Only the requested fetch types are computed.
    assert.deepEqual(await fetchOrgState({ services: s.app.services, realm: s.realm, user, options: {} as never, want: (t) => t === 'realm_domains' }), {
      realm_domains: state.realm_domains,
    });
  });
});
