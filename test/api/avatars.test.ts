import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { PNG_1X1, basicAuth, fetchRaw, postFiles } from '../helpers/uploads.js';

forEachDatabase('avatars', (server) => {
  test('POST /users/me/avatar stores the image, bumps the version and tells everyone; DELETE goes back to Gravatar', async () => {
    const s = server();
    const { othello, hamlet } = s.cast;
    const { result, events } = await captureEvents(s, () => postFiles(othello.client, '/users/me/avatar', [{ field: 'file', name: 'me.png', data: PNG_1X1, type: 'image/png' }]));
    const body = ok(result);
    assertConforms(result, 'POST', '/users/me/avatar');
    assert.match(body.avatar_url, new RegExp(`^${s.config.externalUrl}/user_avatars/${s.realm.id}/[0-9a-f]{40}\\.png\\?version=2$`));
    const update = events.find((e) => e.event.type === 'realm_user')!;
    assert.deepEqual(update.event, {
      type: 'realm_user',
      op: 'update',
      person: {
        user_id: othello.user.id,
        avatar_source: 'U',
        avatar_url: body.avatar_url,
        avatar_url_medium: body.avatar_url.replace('.png?', '-medium.png?'),
        avatar_version: 2,
      },
    });
    assert.ok(recipientIds(update).includes(hamlet.user.id));
    assertEventConforms(update.event);

    const me = ok(await hamlet.client.get(`/users/${othello.user.id}`)).user;
    assert.equal(me.avatar_url, body.avatar_url);
    const path = new URL(body.avatar_url).pathname;
    const image = await fetchRaw(`${s.url}${path}?version=2`);
    assert.equal(image.status, 200);
    assert.equal(image.headers.get('content-type'), 'image/png');
    assert.ok(image.data.equals(PNG_1X1));
    assert.equal((await fetchRaw(`${s.url}${path.replace('.png', '-medium.png')}`)).status, 200);

    const del = await othello.client.delete('/users/me/avatar');
    assertConforms(del, 'DELETE', '/users/me/avatar');
    assert.match(ok(del).avatar_url, /^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?d=identicon&version=3$/);
    assert.equal(ok(await hamlet.client.get(`/users/${othello.user.id}`)).user.avatar_version, 3);
  });

  test('errors: one image, size, format, and avatar_changes_disabled for non-administrators', async () => {
    const s = server();
    const { hamlet, admin, owner } = s.cast;
    err(await postFiles(hamlet.client, '/users/me/avatar', []), 400, 'BAD_REQUEST', 'You must upload exactly one avatar.');
    err(await postFiles(hamlet.client, '/users/me/avatar', [{ name: 'a.txt', data: Buffer.from('text') }]), 400, 'BAD_IMAGE', 'Invalid image format');
    const big = Buffer.concat([PNG_1X1, Buffer.alloc(5 * 1024 * 1024)]);
    err(await postFiles(hamlet.client, '/users/me/avatar', [{ name: 'big.png', data: big }]), 400, 'BAD_REQUEST', 'Uploaded file is larger than the allowed limit of 5 MiB');
    ok(await owner.client.patch('/realm', { avatar_changes_disabled: true }));
    err(await postFiles(hamlet.client, '/users/me/avatar', [{ name: 'a.png', data: PNG_1X1 }]), 400, 'BAD_REQUEST', 'Avatar changes are disabled in this organization.');
    err(await hamlet.client.delete('/users/me/avatar'), 400, 'BAD_REQUEST', 'Avatar changes are disabled in this organization.');
    ok(await postFiles(admin.client, '/users/me/avatar', [{ name: 'a.png', data: PNG_1X1 }]));
    ok(await owner.client.patch('/realm', { avatar_changes_disabled: false }));
    assert.equal((await fetchRaw(`${s.url}/user_avatars/${s.realm.id}/nothing.png`)).status, 404);
  });

  test('GET /avatar/{id or email} redirects to the avatar, with the Basic header or ?api_key=', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    ok(await postFiles(othello.client, '/users/me/avatar', [{ field: 'file', name: 'me.png', data: PNG_1X1, type: 'image/png' }]));
    const expected = ok(await hamlet.client.get(`/users/${othello.user.id}`)).user.avatar_url as string;
    const byId = await fetchRaw(`${s.url}/avatar/${othello.user.id}?api_key=${hamlet.user.api_key}&s=50`);
    assert.equal(byId.status, 302);
    assert.equal(byId.headers.get('location'), `${expected}&s=50`);
    const byEmail = await fetchRaw(`${s.url}/avatar/${othello.user.email}/medium`, basicAuth(hamlet.client));
    assert.equal(byEmail.headers.get('location'), expected.replace('.png?', '-medium.png?'));
    const unknown = await fetchRaw(`${s.url}/avatar/nobody@example.com`, basicAuth(hamlet.client));
    assert.match(unknown.headers.get('location')!, /^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?d=identicon&version=1$/);
    assert.equal((await fetchRaw(`${s.url}/avatar/${othello.user.id}`)).status, 401);
    assert.equal((await fetchRaw(`${s.url}/avatar/99999999999999999999`, basicAuth(hamlet.client))).status, 302);
  });
});
