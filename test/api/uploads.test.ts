import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { PNG_1X1, basicAuth, fetchRaw, postFiles } from '../helpers/uploads.js';
import type { ApiClient } from '../helpers/client.js';
import { createChannel, uniqueName } from './messages_send.fixtures.js';
import { startSession } from '../../src/plugins/session.js';

const TEXT = Buffer.from('zulip!\n');

async function uploadText(client: ApiClient, name = 'zulip.txt', data: Buffer = TEXT): Promise<{ url: string; pathId: string }> {
  const res = await postFiles(client, '/user_uploads', [{ field: 'file', name, data, type: 'text/plain' }]);
  const body = ok(res);
  return { url: body.url, pathId: body.url.slice('/user_uploads/'.length) };
}

async function attachmentsOf(client: ApiClient): Promise<any[]> {
  return ok(await client.get('/attachments')).attachments;
}

async function hasAttachmentIds(client: ApiClient, channel: string): Promise<number[]> {
  const body = ok(await client.get('/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow: [{ operator: 'channel', operand: channel }, { operator: 'has', operand: 'attachment' }] }));
  return body.messages.map((m: any) => m.id);
}

async function channelWith(s: TestServer, ...who: (keyof TestServer['cast'])[]): Promise<string> {
  const name = uniqueName('Files');
  await createChannel(s, name, { subscribers: who.map((k) => s.cast[k].user) });
  return name;
}

forEachDatabase('uploads and attachments', (server) => {
  test('POST /user_uploads stores one file and answers url, uri and filename; the owner gets an attachment event', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const { result, events } = await captureEvents(s, () => postFiles(hamlet.client, '/user_uploads', [{ field: 'file', name: 'zulip.txt', data: TEXT, type: 'text/plain' }]));
    const body = ok(result);
    assertConforms(result, 'POST', '/user_uploads');
    assert.match(body.url, new RegExp(`^/user_uploads/${s.realm.id}/[0-9a-f]{2}/[A-Za-z0-9_-]{24}/zulip\\.txt$`));
    assert.equal(body.uri, body.url);
    assert.equal(body.filename, 'zulip.txt');
    assert.equal(events.length, 1);
    assert.deepEqual(recipientIds(events[0]!), [hamlet.user.id]);
    const e = events[0]!.event as any;
    assert.equal(e.type, 'attachment');
    assert.equal(e.op, 'add');
    assert.deepEqual({ ...e.attachment, id: 0, create_time: 0 }, { id: 0, name: 'zulip.txt', path_id: body.url.slice(14), size: TEXT.length, create_time: 0, message_ids: [] });
    assert.ok(e.upload_space_used >= TEXT.length);
    assertEventConforms(e);

    // Names are sanitized in the URL, kept in the attachment.
    const odd = ok(await postFiles(hamlet.client, '/user_uploads', [{ field: 'file', name: 'my report (final)!.pdf', data: TEXT }]));
    assert.match(odd.url, /\/my-report-final\.pdf$/);
    assert.equal(odd.filename, 'my report (final)!.pdf');

    err(await postFiles(hamlet.client, '/user_uploads', []), 400, 'BAD_REQUEST', 'You must specify a file to upload');
    err(
      await postFiles(hamlet.client, '/user_uploads', [{ name: 'a.txt', data: TEXT }, { name: 'b.txt', data: TEXT }]),
      400,
      'BAD_REQUEST',
      'You may only upload one file at a time',
    );
    const tooBig = Buffer.alloc(25 * 1024 * 1024 + 1);
    err(await postFiles(hamlet.client, '/user_uploads', [{ name: 'big.bin', data: tooBig }]), 400, 'BAD_REQUEST', 'Uploaded file is larger than the allowed limit of 25 MiB');
    err(await postFiles(s.anonymous, '/user_uploads', [{ name: 'a.txt', data: TEXT }]), 401, 'UNAUTHORIZED');
  });

  test('files are served to their owner by Basic header, ?api_key= or session; others get 403; unknown paths 404', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const { url } = await uploadText(hamlet.client);
    const viaHeader = await fetchRaw(`${s.url}${url}`, basicAuth(hamlet.client));
    assert.equal(viaHeader.status, 200);
    assert.ok(viaHeader.data.equals(TEXT));
    assert.equal(viaHeader.headers.get('content-type'), 'text/plain');
    assert.equal(viaHeader.headers.get('content-disposition'), 'inline; filename="zulip.txt"');
    assert.equal(viaHeader.headers.get('x-content-type-options'), 'nosniff');
    assert.equal((await fetchRaw(`${s.url}${url}?api_key=${hamlet.user.api_key}`)).status, 200);
    const cookie = (await startSession(s.app.services, hamlet.user)).split(';')[0]!;
    assert.equal((await fetchRaw(`${s.url}${url}`, { Cookie: cookie })).status, 200);
    assert.equal((await fetchRaw(`${s.url}${url}`, { Cookie: 'parley_session=stale' })).status, 403);
    const download = await fetchRaw(`${s.url}${url.replace('/user_uploads/', '/user_uploads/download/')}`, basicAuth(hamlet.client));
    assert.equal(download.headers.get('content-disposition'), 'attachment; filename="zulip.txt"');

    assert.equal((await fetchRaw(`${s.url}${url}`)).status, 403);
    assert.equal((await fetchRaw(`${s.url}${url}`, basicAuth(othello.client))).status, 403);
    assert.equal((await fetchRaw(`${s.url}${url}?api_key=${othello.user.api_key}`)).status, 403);
    assert.equal((await fetchRaw(`${s.url}${url}?api_key=${'x'.repeat(32)}`)).status, 401);
    assert.equal((await fetchRaw(`${s.url}/user_uploads/${s.realm.id}/ab/nothing/here.txt`, basicAuth(hamlet.client))).status, 404);
  });

  test('a message linking an upload shares it with its readers and makes has:attachment match', async () => {
    const s = server();
    const { hamlet, othello, guest } = s.cast;
    const channel = await channelWith(s, 'hamlet', 'othello');
    const { url, pathId } = await uploadText(hamlet.client);
    const { result, events } = await captureEvents(s, () => hamlet.client.post('/messages', { type: 'stream', to: channel, topic: 'files', content: `see [zulip.txt](${url})` }));
    const id = ok(result).id;
    const update = events.find((e) => e.event.type === 'attachment')!;
    assert.equal(update.event.op, 'update');
    assert.deepEqual((update.event.attachment as any).message_ids, [id]);
    assert.deepEqual(recipientIds(update), [hamlet.user.id]);
    assertEventConforms(update.event);

    assert.equal((await fetchRaw(`${s.url}${url}`, basicAuth(othello.client))).status, 200);
    assert.equal((await fetchRaw(`${s.url}${url}`, basicAuth(guest.client))).status, 403);
    assert.deepEqual(await hasAttachmentIds(othello.client, channel), [id]);

    const list = await hamlet.client.get('/attachments');
    assertConforms(list, 'GET', '/attachments');
    const mine = ok(list).attachments.find((a: any) => a.path_id === pathId);
    assert.deepEqual(mine.message_ids, [id]);
    assert.equal(mine.name, 'zulip.txt');
    assert.equal(mine.size, TEXT.length);
    assert.ok(ok(list).upload_space_used >= TEXT.length);
    assert.deepEqual(await attachmentsOf(othello.client), []);

    // Editing the link away detaches the upload; deleting the message forgets it.
    ok(await hamlet.client.patch(`/messages/${id}`, { content: 'never mind' }));
    assert.deepEqual(await hasAttachmentIds(othello.client, channel), []);
    assert.deepEqual((await attachmentsOf(hamlet.client)).find((a: any) => a.path_id === pathId).message_ids, []);
    ok(await hamlet.client.patch(`/messages/${id}`, { content: `again [zulip.txt](${s.config.externalUrl}${url})` }));
    assert.deepEqual(await hasAttachmentIds(othello.client, channel), [id]);
    ok(await s.cast.admin.client.delete(`/messages/${id}`));
    assert.deepEqual((await attachmentsOf(hamlet.client)).find((a: any) => a.path_id === pathId).message_ids, []);
  });

  test('links to uploads the sender cannot read are not claimed', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const channel = await channelWith(s, 'hamlet', 'othello');
    const { url } = await uploadText(hamlet.client);
    const id = ok(await othello.client.post('/messages', { type: 'stream', to: channel, topic: 'files', content: `stolen [x](${url})` })).id;
    assert.equal((await fetchRaw(`${s.url}${url}`, basicAuth(othello.client))).status, 403);
    assert.ok(!(await hasAttachmentIds(hamlet.client, channel)).includes(id));
    // A link to an upload nobody made is just a link.
    const id2 = ok(await othello.client.post('/messages', { type: 'stream', to: channel, topic: 'files', content: `[x](/user_uploads/${s.realm.id}/ab/none/x.txt)` })).id;
    assert.ok(!(await hasAttachmentIds(hamlet.client, channel)).includes(id2));
  });

  test('GET /api/v1/user_uploads/... gives a temporary URL that works without credentials', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const { url, pathId } = await uploadText(hamlet.client);
    const res = await hamlet.client.get(`/user_uploads/${pathId}`);
    const body = ok(res);
    assertConforms(res, 'GET', '/user_uploads/{realm_id_str}/{filename}');
    assert.match(body.url, /^\/user_uploads\/temporary\/[^/]+\/zulip\.txt$/);
    const file = await fetchRaw(`${s.url}${body.url}`);
    assert.equal(file.status, 200);
    assert.ok(file.data.equals(TEXT));
    assert.equal((await fetchRaw(`${s.url}${body.url.replace('zulip.txt', 'other.txt')}`)).status, 404);
    assert.equal((await fetchRaw(`${s.url}${body.url.replace(/temporary\/./, 'temporary/x')}`)).status, 404);
    err(await othello.client.get(`/user_uploads/${pathId}`), 403, 'BAD_REQUEST', 'You are not authorized to view this file.');
    err(await hamlet.client.get(`/user_uploads/${s.realm.id}/ab/none/x.txt`), 404, 'NOT_FOUND');
    assert.ok(url.endsWith(pathId));
  });

  test('DELETE /attachments/{id}: only one’s own; the file is gone and the owner is told', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const { url, pathId } = await uploadText(hamlet.client);
    const id = (await attachmentsOf(hamlet.client)).find((a: any) => a.path_id === pathId).id;
    const denied = await othello.client.delete(`/attachments/${id}`);
    err(denied, 400, 'BAD_REQUEST', 'Invalid attachment');
    assertConforms(denied, 'DELETE', '/attachments/{attachment_id}');
    err(await hamlet.client.delete('/attachments/999999'), 400, 'BAD_REQUEST', 'Invalid attachment');
    const { result, events } = await captureEvents(s, () => hamlet.client.delete(`/attachments/${id}`));
    ok(result);
    assertConforms(result, 'DELETE', '/attachments/{attachment_id}');
    assert.deepEqual({ ...events[0]!.event, upload_space_used: 0 }, { type: 'attachment', op: 'remove', attachment: { id }, upload_space_used: 0 });
    assertEventConforms(events[0]!.event);
    assert.equal((await fetchRaw(`${s.url}${url}`, basicAuth(hamlet.client))).status, 404);
  });

  test('/thumbnail serves uploads after the access check (the URL older messages used) and redirects to external images', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const channel = await channelWith(s, 'hamlet', 'othello');
    const res = await postFiles(hamlet.client, '/user_uploads', [{ field: 'file', name: 'pixel.png', data: PNG_1X1, type: 'image/png' }]);
    const { url } = ok(res);
    ok(await hamlet.client.post('/messages', { type: 'stream', to: channel, topic: 'img', content: `[pixel.png](${url})` }));
    const src = `/thumbnail?url=${encodeURIComponent(url.slice(1))}&size=full`;
    const thumb = await fetchRaw(`${s.url}${src}`, basicAuth(othello.client));
    assert.equal(thumb.status, 200);
    assert.ok(thumb.data.equals(PNG_1X1));
    assert.equal((await fetchRaw(`${s.url}${src}&api_key=${othello.user.api_key}`)).status, 200);
    assert.equal((await fetchRaw(`${s.url}${src}`, basicAuth(s.cast.guest.client))).status, 403);

    const external = await fetchRaw(`${s.url}/thumbnail?url=${encodeURIComponent('https://example.com/cat.png')}&size=full`, basicAuth(othello.client));
    assert.equal(external.status, 302);
    assert.equal(external.headers.get('location'), 'https://example.com/cat.png');
    assert.equal((await fetchRaw(`${s.url}/thumbnail?url=${encodeURIComponent('https://example.com/cat.png')}&size=full`)).status, 403);
    assert.equal((await fetchRaw(`${s.url}/thumbnail?url=javascript:alert(1)&size=full`, basicAuth(othello.client))).status, 403);
  });
});
