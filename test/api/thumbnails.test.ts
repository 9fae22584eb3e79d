import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { basicAuth, fetchRaw, postFiles } from '../helpers/uploads.js';
import type { ApiClient } from '../helpers/client.js';
import { createChannel, uniqueName } from './messages_send.fixtures.js';

/**
 * Thumbnails of uploaded images as Zulip makes them (zerver/lib/thumbnail.py): the upload only
 * reads the header; a message shows a spinner with the original's dimensions until the
 * thumbnail worker (or a request for the thumbnail) has made Zulip's formats; then the message
 * is re-rendered with a rendering-only update_message event, and the thumbnail is served at
 * /user_uploads/thumbnail/<path_id>/<format>.
 */

const png = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: '#3a7' } }).png().toBuffer();
const jpeg = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: '#a37' } }).jpeg().toBuffer();
const tiff = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: '#37a' } }).tiff().toBuffer();
async function animatedGif(width: number, height: number): Promise<Buffer> {
  const frame = (background: string) => sharp({ create: { width, height, channels: 4, background } }).png().toBuffer();
  return sharp([await frame('#f00'), await frame('#00f'), await frame('#0f0')], { join: { animated: true } }).gif().toBuffer();
}

async function upload(client: ApiClient, name: string, data: Buffer, type: string): Promise<string> {
  return ok(await postFiles(client, '/user_uploads', [{ field: 'file', name, data, type }])).url.slice('/user_uploads/'.length);
}

async function send(s: TestServer, client: ApiClient, channel: string, content: string): Promise<number> {
  return ok(await client.post('/messages', { type: 'stream', to: channel, topic: 'pictures', content })).id;
}

async function contentOf(client: ApiClient, id: number): Promise<string> {
  return ok(await client.get(`/messages/${id}`)).message.content;
}

const spinner = (pathId: string, title: string, dims: string, type: string) =>
  `<div class="message_inline_image"><a href="/user_uploads/${pathId}" title="${title}"><img class="image-loading-placeholder" data-original-content-type="${type}" data-original-dimensions="${dims}" src="/static/images/loading/loader-black.svg"></a></div>`;

const waitFor = async (what: string, check: () => Promise<boolean>) => {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

forEachDatabase('thumbnails made on request (no worker)', (server) => {
  test("register lists Zulip's server_thumbnail_formats", async () => {
    const body = ok(await server().cast.hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) }));
    assert.deepEqual(body.server_thumbnail_formats, [
      { name: '840x560-anim.webp', max_width: 840, max_height: 560, format: 'webp', animated: true },
      { name: '840x560.webp', max_width: 840, max_height: 560, format: 'webp', animated: false },
    ]);
  });

  test('a spinner until the thumbnail exists; asking for it makes it and re-renders the message with a rendering-only update', async () => {
    const s = server();
    const { hamlet, othello, guest } = s.cast;
    const channel = uniqueName('Pictures');
    await createChannel(s, channel, { subscribers: [hamlet.user, othello.user] });
    const pathId = await upload(hamlet.client, 'wide picture.png', await png(1200, 600), 'image/png');
    const id = await send(s, hamlet.client, channel, `[wide picture.png](/user_uploads/${pathId})`);
    const link = `<p><a href="/user_uploads/${pathId}">wide picture.png</a></p>`;
    assert.equal(await contentOf(othello.client, id), `${link}\n${spinner(pathId, 'wide picture.png', '1200x600', 'image/png')}`);

    const status = await hamlet.client.get(`/thumbnail/status/${pathId}`);
    assertConforms(status, 'GET', '/thumbnail/status/{realm_id_str}/{filename}');
    assert.equal(ok(status).has_thumbnail, false);
    // Only the uploader may ask.
    err(await othello.client.get(`/thumbnail/status/${pathId}`), 400, 'BAD_REQUEST', 'Invalid attachment');
    err(await hamlet.client.get(`/thumbnail/status/${s.realm.id}/ab/nothing/here.png`), 400, 'BAD_REQUEST', 'Invalid attachment');

    const url = `${s.url}/user_uploads/thumbnail/${pathId}/840x560.webp`;
    assert.equal((await fetchRaw(url, basicAuth(guest.client))).status, 403);
    const { result: thumb, events } = await captureEvents(s, () => fetchRaw(url, basicAuth(othello.client)));
    assert.equal(thumb.status, 200);
    assert.equal(thumb.headers.get('content-type'), 'image/webp');
    const meta = await sharp(thumb.data).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 840, 420]);

    const rendered = `${link}\n<div class="message_inline_image"><a href="/user_uploads/${pathId}" title="wide picture.png"><img data-original-content-type="image/png" data-original-dimensions="1200x600" src="/user_uploads/thumbnail/${pathId}/840x560.webp"></a></div>`;
    assert.equal(await contentOf(othello.client, id), rendered);
    const updates = events.filter((e) => e.event.type === 'update_message');
    assert.equal(updates.length, 1);
    assert.deepEqual(recipientIds(updates[0]!).sort(), [hamlet.user.id, othello.user.id].sort());
    const e = updates[0]!.event as any;
    assert.deepEqual({ ...e, edit_timestamp: 0 }, {
      type: 'update_message',
      user_id: null,
      edit_timestamp: 0,
      message_id: id,
      message_ids: [id],
      content: `[wide picture.png](/user_uploads/${pathId})`,
      rendered_content: rendered,
      rendering_only: true,
    });
    // Each queue adds its user's flags.
    assertEventConforms({ ...e, flags: [] });
    assert.equal(ok(await hamlet.client.get(`/thumbnail/status/${pathId}`)).has_thumbnail, true);

    // A message sent now shows the thumbnail at once.
    const again = await send(s, hamlet.client, channel, `[again](/user_uploads/${pathId})`);
    assert.ok((await contentOf(othello.client, again)).includes(`<img data-original-content-type="image/png" data-original-dimensions="1200x600" src="/user_uploads/thumbnail/${pathId}/840x560.webp">`));
    // No animated version of a still image: the nearest still one is served.
    const anim = await fetchRaw(`${s.url}/user_uploads/thumbnail/${pathId}/840x560-anim.webp`, basicAuth(othello.client));
    assert.equal(anim.status, 200);
    assert.ok(anim.data.equals(thumb.data));
    for (const bad of ['300x200.png', 'nonsense', '840x560.webp/extra']) {
      assert.equal((await fetchRaw(`${s.url}/user_uploads/thumbnail/${pathId}/${bad}`, basicAuth(othello.client))).status, bad === '300x200.png' ? 200 : 404);
    }
  });

  test('the image syntax shows an uploaded image in place: a spinner, then the thumbnail; an edit renders it again', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const channel = uniqueName('Pictures');
    await createChannel(s, channel, { subscribers: [hamlet.user, othello.user] });
    const pathId = await upload(hamlet.client, 'cat.png', await png(900, 300), 'image/png');
    const id = await send(s, hamlet.client, channel, `A ![black cat](/user_uploads/${pathId}) and ![](/user_uploads/${pathId}).`);
    const pending = (alt: string) =>
      `<img alt="${alt}" class="inline-image image-loading-placeholder" data-original-content-type="image/png" data-original-dimensions="900x300" data-original-src="/user_uploads/${pathId}" src="/static/images/loading/loader-black.svg">`;
    assert.equal(await contentOf(othello.client, id), `<p>A ${pending('black cat')} and ${pending('')}.</p>`);
    const [message] = ok(await othello.client.get('/messages', { anchor: id, num_before: 0, num_after: 0, narrow: JSON.stringify([{ operator: 'has', operand: 'image' }]) })).messages;
    assert.equal(message.id, id);
    // The upload is claimed by the message, so another subscriber may see it.
    assert.equal((await fetchRaw(`${s.url}/user_uploads/${pathId}`, basicAuth(othello.client))).status, 200);

    const { events } = await captureEvents(s, () => fetchRaw(`${s.url}/user_uploads/thumbnail/${pathId}/840x560.webp`, basicAuth(othello.client)));
    // BeautifulSoup's rewrite: the loading class and spinner go, an empty alt is written bare.
    const done = (alt: string) =>
      `<img ${alt ? `alt="${alt}"` : 'alt'} class="inline-image" data-original-content-type="image/png" data-original-dimensions="900x300" data-original-src="/user_uploads/${pathId}" src="/user_uploads/thumbnail/${pathId}/840x560.webp">`;
    const rendered = `<p>A ${done('black cat')} and ${done('')}.</p>`;
    assert.equal(await contentOf(othello.client, id), rendered);
    const update = events.find((e) => e.event.type === 'update_message')!.event as any;
    assert.deepEqual([update.rendered_content, update.rendering_only], [rendered, true]);

    // The composer's preview (POST /messages/render) shows it the same way.
    assert.equal(ok(await hamlet.client.post('/messages/render', { content: `![black cat](/user_uploads/${pathId})` })).rendered, `<p>${done('black cat')}</p>`);
    // Edited, the content is rendered again, with the thumbnail at once.
    ok(await hamlet.client.patch(`/messages/${id}`, { content: `Now ![grey cat](/user_uploads/${pathId} "Grey")` }));
    assert.equal(
      await contentOf(othello.client, id),
      `<p>Now <img alt="grey cat" class="inline-image" data-original-content-type="image/png" data-original-dimensions="900x300" data-original-src="/user_uploads/${pathId}" src="/user_uploads/thumbnail/${pathId}/840x560.webp" title="Grey"></p>`,
    );
  });

  test('what does not parse as an image gets no preview at all; other files keep their link only', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const channel = uniqueName('Pictures');
    await createChannel(s, channel, { subscribers: [hamlet.user] });
    const fake = await upload(hamlet.client, 'fake.png', Buffer.from('not a picture'), 'image/png');
    const id = await send(s, hamlet.client, channel, `[fake.png](/user_uploads/${fake})`);
    assert.equal(await contentOf(hamlet.client, id), `<p><a href="/user_uploads/${fake}">fake.png</a></p>`);
    // The image syntax makes a plain link of what is not an uploaded image.
    const syntax = await send(s, hamlet.client, channel, `![fake](/user_uploads/${fake}) ![](https://example.com/x.txt)`);
    assert.equal(await contentOf(hamlet.client, syntax), `<p><a href="/user_uploads/${fake}">fake</a> <a href="https://example.com/x.txt">https://example.com/x.txt</a></p>`);
    err(await hamlet.client.get(`/thumbnail/status/${fake}`), 400, 'BAD_REQUEST', 'Invalid attachment');
    assert.equal((await fetchRaw(`${s.url}/user_uploads/thumbnail/${fake}/840x560.webp`, basicAuth(hamlet.client))).status, 404);
  });
});

forEachDatabase(
  'thumbnails made by the worker',
  (server) => {
    test('the worker makes the formats in the background: still, animated and transcoded images', async () => {
      const s = server();
      const { hamlet, othello } = s.cast;
      const channel = uniqueName('Pictures');
      await createChannel(s, channel, { subscribers: [hamlet.user, othello.user] });
      const photo = await upload(hamlet.client, 'photo.jpg', await jpeg(1200, 900), 'image/jpeg');
      const gif = await upload(hamlet.client, 'dance.gif', await animatedGif(60, 40), 'image/gif');
      const scan = await upload(hamlet.client, 'scan.tiff', await tiff(500, 1000), 'image/tiff');
      const id = await send(s, hamlet.client, channel, `[photo](/user_uploads/${photo})\n[dance](/user_uploads/${gif})\n[scan](/user_uploads/${scan})`);
      await waitFor('the three thumbnails', async () => !(await contentOf(othello.client, id)).includes('image-loading-placeholder'));
      const content = await contentOf(othello.client, id);
      assert.ok(content.includes(`<img data-original-content-type="image/jpeg" data-original-dimensions="1200x900" src="/user_uploads/thumbnail/${photo}/840x560.webp">`), content);
      assert.ok(content.includes(`<img data-original-content-type="image/gif" data-original-dimensions="60x40" src="/user_uploads/thumbnail/${gif}/840x560-anim.webp" data-animated="true">`), content);
      assert.ok(content.includes(`<img data-original-content-type="image/tiff" data-original-dimensions="500x1000" src="/user_uploads/thumbnail/${scan}/840x560.webp" data-transcoded-image="3024x4032.webp">`), content);

      const get = async (path: string) => {
        const r = await fetchRaw(`${s.url}/user_uploads/thumbnail/${path}`, basicAuth(othello.client));
        assert.equal(r.status, 200, path);
        return sharp(r.data, { pages: -1 }).metadata();
      };
      const p = await get(`${photo}/840x560.webp`);
      assert.deepEqual([p.width, p.height], [747, 560]);
      const a = await get(`${gif}/840x560-anim.webp`);
      assert.deepEqual([a.width, a.pageHeight, a.pages], [60, 40, 3]);
      const still = await get(`${gif}/840x560.webp`);
      assert.deepEqual([still.width, still.height, still.pages ?? 1], [60, 40, 1]);
      const t = await get(`${scan}/3024x4032.webp`);
      assert.deepEqual([t.format, t.width, t.height], ['webp', 500, 1000]);
      for (const path of [photo, gif, scan]) assert.equal(ok(await hamlet.client.get(`/thumbnail/status/${path}`)).has_thumbnail, true);

      // Deleting the upload deletes its thumbnails.
      const attachment = ok(await hamlet.client.get('/attachments')).attachments.find((x: any) => x.path_id === photo);
      ok(await hamlet.client.delete(`/attachments/${attachment.id}`));
      assert.equal((await fetchRaw(`${s.url}/user_uploads/thumbnail/${photo}/840x560.webp`, basicAuth(hamlet.client))).status, 404);
    });
  },
  { thumbnailer: { enabled: true, intervalMs: 10_000 } },
);

