import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { PNG_1X1, basicAuth, fetchRaw, postFiles } from '../helpers/uploads.js';

const GIF_1X1 = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

forEachDatabase('organization icon and logos', (server) => {
  test('the default icon, logos and unknown-user avatar that the API names are real images', async () => {
    const s = server();
    const settings = ok(await s.anonymous.get('/server_settings'));
    assert.equal(settings.realm_icon, `${s.config.externalUrl}/static/images/realm-icon.png?version=1`);
    const state = ok(await s.cast.hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) }));
    assert.equal(state.realm_icon_url, settings.realm_icon);
    assert.equal(state.realm_icon_source, 'G');
    assert.equal(state.realm_logo_source, 'D');
    assert.equal(state.realm_night_logo_source, 'D');
    for (const [url, type] of [
      [settings.realm_icon, 'image/png'],
      [state.realm_logo_url, 'image/svg+xml'],
      [state.realm_night_logo_url, 'image/svg+xml'],
      [`${s.config.externalUrl}/static/images/unknown-user-avatar.png`, 'image/png'],
    ] as const) {
      const res = await fetchRaw(`${s.url}${new URL(url).pathname}${new URL(url).search}`);
      assert.equal(res.status, 200, url);
      assert.equal(res.headers.get('content-type'), type, url);
      if (type === 'image/png') assert.ok(res.data.subarray(1, 4).equals(Buffer.from('PNG')), url);
      else assert.match(res.data.toString(), /^<svg /);
    }
  });

  test('POST /realm/icon: administrators upload, everyone is told and served it; DELETE goes back to the default', async () => {
    const s = server();
    const { admin, hamlet } = s.cast;
    const { result, events } = await captureEvents(s, () => postFiles(admin.client, '/realm/icon', [{ name: 'icon.png', data: PNG_1X1, type: 'image/png' }]));
    const url = ok(result).icon_url;
    assert.equal(url, `${s.config.externalUrl}/user_avatars/${s.realm.id}/realm/icon.png?version=2`);
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.event, { type: 'realm', op: 'update_dict', property: 'icon', data: { icon_source: 'U', icon_url: url } });
    assert.ok(recipientIds(events[0]!).includes(hamlet.user.id));
    assertEventConforms(events[0]!.event);

    const image = await fetchRaw(`${s.url}/user_avatars/${s.realm.id}/realm/icon.png?version=2`);
    assert.equal(image.status, 200);
    assert.equal(image.headers.get('content-type'), 'image/png');
    assert.ok(image.data.equals(PNG_1X1));
    assert.equal(ok(await s.anonymous.get('/server_settings')).realm_icon, url);
    const state = ok(await hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) }));
    assert.equal(state.realm_icon_url, url);
    assert.equal(state.realm_icon_source, 'U');

    // GET /realm/icon redirects to the current icon, passing the query on.
    const redirect = await fetchRaw(`${s.url}/api/v1/realm/icon?foo=bar`, basicAuth(hamlet.client));
    assert.equal(redirect.status, 302);
    assert.equal(redirect.headers.get('location'), `${url}&foo=bar`);

    const del = await captureEvents(s, () => admin.client.delete('/realm/icon'));
    const defaultUrl = `${s.config.externalUrl}/static/images/realm-icon.png?version=3`;
    assert.equal(ok(del.result).icon_url, defaultUrl);
    assert.deepEqual(del.events.map((e) => e.event), [{ type: 'realm', op: 'update_dict', property: 'icon', data: { icon_source: 'G', icon_url: defaultUrl } }]);
    assert.equal(ok(await s.anonymous.get('/server_settings')).realm_icon, defaultUrl);
  });

  test('POST and DELETE /realm/logo, for the light and the dark theme', async () => {
    const s = server();
    const { admin, hamlet } = s.cast;
    const day = await captureEvents(s, () => postFiles(admin.client, '/realm/logo', [{ name: 'logo.png', data: PNG_1X1 }], { night: 'false' }));
    ok(day.result);
    const dayUrl = `${s.config.externalUrl}/user_avatars/${s.realm.id}/realm/logo.png?version=2`;
    assert.deepEqual(day.events.map((e) => e.event), [{ type: 'realm', op: 'update_dict', property: 'logo', data: { logo_source: 'U', logo_url: dayUrl } }]);
    assertEventConforms(day.events[0]!.event);

    const night = await captureEvents(s, () => postFiles(admin.client, '/realm/logo', [{ name: 'night.gif', data: GIF_1X1 }], { night: 'true' }));
    ok(night.result);
    const nightUrl = `${s.config.externalUrl}/user_avatars/${s.realm.id}/realm/night_logo.png?version=2`;
    assert.deepEqual(night.events.map((e) => e.event), [{ type: 'realm', op: 'update_dict', property: 'night_logo', data: { night_logo_source: 'U', night_logo_url: nightUrl } }]);
    assertEventConforms(night.events[0]!.event);

    const stored = await fetchRaw(`${s.url}/user_avatars/${s.realm.id}/realm/night_logo.png?version=2`);
    assert.equal(stored.headers.get('content-type'), 'image/gif');
    assert.ok(stored.data.equals(GIF_1X1));
    const state = ok(await hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) }));
    assert.deepEqual(
      [state.realm_logo_url, state.realm_logo_source, state.realm_night_logo_url, state.realm_night_logo_source],
      [dayUrl, 'U', nightUrl, 'U'],
    );
    const redirect = await fetchRaw(`${s.url}/api/v1/realm/logo?night=true`, basicAuth(hamlet.client));
    assert.equal(redirect.status, 302);
    assert.equal(redirect.headers.get('location'), nightUrl);

    const reset = await captureEvents(s, () => admin.client.delete('/realm/logo', { night: true }));
    ok(reset.result);
    assert.deepEqual(reset.events.map((e) => e.event), [
      { type: 'realm', op: 'update_dict', property: 'night_logo', data: { night_logo_source: 'D', night_logo_url: `${s.config.externalUrl}/static/images/realm-logo.svg?version=3` } },
    ]);
    // The light logo is unchanged.
    assert.equal(ok(await hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) })).realm_logo_url, dayUrl);
  });

  test('errors: administrators only, one image, size, format, night required', async () => {
    const s = server();
    const { admin, hamlet, moderator } = s.cast;
    const before = ok(await hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) }));
    for (const who of [hamlet, moderator]) {
      err(await postFiles(who.client, '/realm/icon', [{ name: 'i.png', data: PNG_1X1 }]), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
      err(await who.client.delete('/realm/icon'), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
      err(await postFiles(who.client, '/realm/logo', [{ name: 'l.png', data: PNG_1X1 }], { night: 'false' }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
      err(await who.client.delete('/realm/logo', { night: false }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
    }
    err(await postFiles(admin.client, '/realm/icon', []), 400, 'BAD_REQUEST', 'You must upload exactly one icon.');
    err(
      await postFiles(admin.client, '/realm/icon', [
        { name: 'a.png', data: PNG_1X1 },
        { name: 'b.png', data: PNG_1X1 },
      ]),
      400,
      'BAD_REQUEST',
      'You must upload exactly one icon.',
    );
    err(await postFiles(admin.client, '/realm/logo', [], { night: 'false' }), 400, 'BAD_REQUEST', 'You must upload exactly one logo.');
    err(await postFiles(admin.client, '/realm/icon', [{ name: 'a.txt', data: Buffer.from('not an image') }]), 400, 'BAD_IMAGE', 'Invalid image format');
    const big = Buffer.concat([PNG_1X1, Buffer.alloc(5 * 1024 * 1024)]);
    err(await postFiles(admin.client, '/realm/icon', [{ name: 'big.png', data: big }]), 400, 'BAD_REQUEST', 'Uploaded file is larger than the allowed limit of 5 MiB');
    err(await postFiles(admin.client, '/realm/logo', [{ name: 'l.png', data: PNG_1X1 }]), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'night' argument");
    err(await admin.client.delete('/realm/logo'), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'night' argument");
    // Nothing changed.
    const after = ok(await hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) }));
    for (const key of ['realm_icon_url', 'realm_logo_url', 'realm_night_logo_url']) assert.equal(after[key], before[key]);
    assert.equal((await fetchRaw(`${s.url}/user_avatars/${s.realm.id}/realm/nothing.png`)).status, 404);
  });
});
