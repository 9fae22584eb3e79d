import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents } from '../helpers/bus.js';
import { registerQueue } from '../helpers/events.js';
import { PNG_1X1, fetchRaw, postFiles } from '../helpers/uploads.js';
import type { ApiClient } from '../helpers/client.js';
import { createChannel, systemGroups, uniqueName } from './messages_send.fixtures.js';

const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

function upload(client: ApiClient, name: string, data: Buffer = PNG_1X1) {
  return postFiles(client, `/realm/emoji/${encodeURIComponent(name)}`, [{ name: 'emoji.png', data, type: 'image/png' }]);
}

async function emojiByName(client: ApiClient, name: string): Promise<any> {
  const all = ok(await client.get('/realm/emoji')).emoji;
  return Object.values(all).find((e: any) => e.name === name && !e.deactivated);
}

forEachDatabase('custom emoji', (server) => {
  test('POST /realm/emoji/{name} stores the image; GET /realm/emoji lists it; the image is served at source_url', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const { result, events } = await captureEvents(s, () => upload(hamlet.client, 'green tick'));
    ok(result);
    assertConforms(result, 'POST', '/realm/emoji/{emoji_name}');
    const list = await hamlet.client.get('/realm/emoji');
    assertConforms(list, 'GET', '/realm/emoji');
    const emoji = await emojiByName(hamlet.client, 'green_tick');
    assert.ok(emoji, 'spaces become underscores');
    assert.deepEqual(Object.keys(emoji).sort(), ['author_id', 'deactivated', 'id', 'name', 'source_url', 'still_url']);
    assert.equal(emoji.author_id, hamlet.user.id);
    assert.equal(emoji.still_url, null);
    assert.equal(emoji.deactivated, false);
    assert.match(emoji.source_url, new RegExp(`^/user_avatars/${s.realm.id}/emoji/images/[0-9a-f]{16}\\.png$`));
    assert.equal(list.body.emoji[emoji.id].id, emoji.id);

    const modern = events.find((e) => e.onlyIf?.capability === 'individual_emoji_changes' && e.onlyIf.value)!;
    const legacy = events.find((e) => e.onlyIf?.capability === 'individual_emoji_changes' && !e.onlyIf.value)!;
    assert.deepEqual(modern.event, { type: 'realm_emoji', op: 'add', emoji });
    assert.equal(legacy.event.op, 'update');
    assert.deepEqual((legacy.event.realm_emoji as Record<string, unknown>)[emoji.id], emoji);
    assertEventConforms(modern.event);
    assertEventConforms(legacy.event);
    assert.ok(modern.users.includes(s.cast.guest.user.id));

    // Public like the list itself; the bytes are the uploaded ones.
    const image = await fetchRaw(`${s.url}${emoji.source_url}`);
    assert.equal(image.status, 200);
    assert.equal(image.headers.get('content-type'), 'image/png');
    assert.ok(image.data.equals(PNG_1X1));
    assert.equal((await fetchRaw(`${s.url}/user_avatars/${s.realm.id}/emoji/images/nope.png`)).status, 404);
  });

  test('messages render custom emoji and reactions may use them', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    ok(await upload(hamlet.client, 'blobparrot', GIF));
    const emoji = await emojiByName(hamlet.client, 'blobparrot');
    assert.match(emoji.source_url, /\.gif$/);
    const name = uniqueName('Emoji');
    await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
    const id = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 't', content: 'look :blobparrot:' })).id;
    const content = ok(await othello.client.get(`/messages/${id}`)).message.content;
    assert.equal(content, `<p>look <img alt=":blobparrot:" class="emoji" src="${emoji.source_url}" title="blobparrot"></p>`);

    const { result, events } = await captureEvents(s, () => othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'blobparrot' }));
    ok(result);
    assert.deepEqual(
      { ...events.find((e) => e.event.type === 'reaction')!.event },
      {
        type: 'reaction',
        op: 'add',
        user_id: othello.user.id,
        user: { user_id: othello.user.id, email: othello.user.email, full_name: othello.user.full_name },
        message_id: id,
        emoji_name: 'blobparrot',
        emoji_code: emoji.id,
        reaction_type: 'realm_emoji',
      },
    );
    // A vote for the existing reaction keeps its name, whatever the request says.
    ok(await hamlet.client.post(`/messages/${id}/reactions`, { emoji_name: 'other', emoji_code: emoji.id, reaction_type: 'realm_emoji' }));
    const id2 = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 't', content: 'again :blobparrot:' })).id;
    err(await hamlet.client.post(`/messages/${id2}/reactions`, { emoji_name: 'other', emoji_code: emoji.id, reaction_type: 'realm_emoji' }), 400, 'BAD_REQUEST', 'Invalid custom emoji name.');

    // Deactivated: no new reactions, but voting for the existing one still works.
    ok(await hamlet.client.delete('/realm/emoji/blobparrot'));
    ok(await s.cast.admin.client.post(`/messages/${id}/reactions`, { emoji_name: 'blobparrot', emoji_code: emoji.id, reaction_type: 'realm_emoji' }));
    const id3 = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 't', content: 'again :blobparrot:' })).id;
    err(
      await othello.client.post(`/messages/${id3}/reactions`, { emoji_name: 'blobparrot', emoji_code: emoji.id, reaction_type: 'realm_emoji' }),
      400,
      'BAD_REQUEST',
      'This custom emoji has been deactivated.',
    );
    err(await othello.client.post(`/messages/${id3}/reactions`, { emoji_name: 'blobparrot' }), 400, 'BAD_REQUEST', "Emoji 'blobparrot' does not exist");
    assert.equal(ok(await othello.client.get(`/messages/${id3}`)).message.content, '<p>again :blobparrot:</p>');
    // The image stays for old messages and reactions.
    assert.equal((await fetchRaw(`${s.url}${emoji.source_url}`)).status, 200);
  });

  test('upload errors follow Zulip', async () => {
    const s = server();
    const { hamlet, admin, guest, bot } = s.cast;
    ok(await upload(hamlet.client, 'taken'));
    err(await upload(hamlet.client, 'taken'), 400, 'BAD_REQUEST', 'A custom emoji with this name already exists.');
    err(await postFiles(hamlet.client, '/realm/emoji/nofile', []), 400, 'BAD_REQUEST', 'You must upload exactly one file.');
    err(
      await postFiles(hamlet.client, '/realm/emoji/twofiles', [{ name: 'a.png', data: PNG_1X1 }, { name: 'b.png', data: PNG_1X1 }]),
      400,
      'BAD_REQUEST',
      'You must upload exactly one file.',
    );
    err(await upload(hamlet.client, 'Bad!'), 400, 'BAD_REQUEST', 'Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.');
    err(await upload(hamlet.client, 'ends_'), 400, 'BAD_REQUEST', 'Emoji names must end with either a letter or digit.');
    err(await upload(hamlet.client, 'smile'), 400, 'BAD_REQUEST', 'Only administrators can override built-in emoji.');
    err(await upload(hamlet.client, 'textfile', Buffer.from('hello')), 400, 'BAD_IMAGE', 'Invalid image format');
    const big = Buffer.concat([PNG_1X1, Buffer.alloc(5 * 1024 * 1024)]);
    err(await upload(hamlet.client, 'huge', big), 400, 'BAD_REQUEST', 'Uploaded file is larger than the allowed limit of 5 MiB');
    err(await upload(guest.client, 'guestemoji'), 400, 'BAD_REQUEST', 'Not allowed for guest users');
    err(await upload(bot.client, 'botemoji'), 400, 'BAD_REQUEST', 'This endpoint does not accept bot requests.');
    ok(await upload(admin.client, 'smile'));

    const g = await systemGroups(s);
    ok(await s.cast.owner.client.patch('/realm', { can_add_custom_emoji_group: { new: g['role:administrators'] } }));
    err(await upload(hamlet.client, 'membersnomore'), 400, 'BAD_REQUEST', 'Insufficient permission');
    ok(await upload(admin.client, 'adminsonly'));
    ok(await s.cast.owner.client.patch('/realm', { can_add_custom_emoji_group: { new: g['role:members'] } }));
  });

  test('DELETE deactivates: only the author or an administrator; unknown names are 404', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    ok(await upload(hamlet.client, 'doomed'));
    ok(await upload(hamlet.client, 'doomed2'));
    const emoji = await emojiByName(hamlet.client, 'doomed');
    err(await othello.client.delete('/realm/emoji/doomed'), 400, 'BAD_REQUEST', 'Must be an organization administrator or emoji author');
    const missing = await othello.client.delete('/realm/emoji/never_was');
    err(missing, 404, 'BAD_REQUEST', "Emoji 'never_was' does not exist");
    assertConforms(missing, 'DELETE', '/realm/emoji/{emoji_name}');

    const { result, events } = await captureEvents(s, () => hamlet.client.delete('/realm/emoji/doomed'));
    ok(result);
    assertConforms(result, 'DELETE', '/realm/emoji/{emoji_name}');
    const modern = events.find((e) => e.onlyIf?.value === true)!;
    assert.deepEqual(modern.event, { type: 'realm_emoji', op: 'update_one', emoji_id: emoji.id, data: { deactivated: true } });
    assertEventConforms(modern.event);
    const legacy = events.find((e) => e.onlyIf?.value === false)!;
    assert.equal((legacy.event.realm_emoji as any)[emoji.id].deactivated, true);
    assertEventConforms(legacy.event);
    assert.equal(ok(await hamlet.client.get('/realm/emoji')).emoji[emoji.id].deactivated, true);
    err(await hamlet.client.delete('/realm/emoji/doomed'), 404, 'BAD_REQUEST', "Emoji 'doomed' does not exist");
    ok(await admin.client.delete('/realm/emoji/doomed2'));
    // The name is free again.
    ok(await upload(othello.client, 'doomed'));
  });

  test('register returns realm_emoji; queues get add/update_one or the legacy full update by capability', async () => {
    const s: TestServer = server();
    const { hamlet, othello } = s.cast;
    const modern = await registerQueue(othello.client, { event_types: ['realm_emoji'], client_capabilities: { individual_emoji_changes: true } });
    const legacy = await registerQueue(othello.client, { event_types: ['realm_emoji'] });
    const reg = await othello.client.post('/register', { fetch_event_types: ['realm_emoji'] });
    assertConforms(reg, 'POST', '/register');
    const before = ok(reg).realm_emoji;
    assert.deepEqual(before, ok(await othello.client.get('/realm/emoji')).emoji);
    ok(await upload(hamlet.client, 'live'));
    const added = await modern.next('realm_emoji');
    assert.equal(added.op, 'add');
    assert.equal(added.emoji.name, 'live');
    const full = await legacy.next('realm_emoji');
    assert.equal(full.op, 'update');
    assert.deepEqual(full.realm_emoji, ok(await othello.client.get('/realm/emoji')).emoji);
    assert.deepEqual(ok(await othello.client.post('/register', { fetch_event_types: ['realm_emoji'] })).realm_emoji, full.realm_emoji);
    await modern.expectNone((e) => e.type === 'realm_emoji', 200);
    await modern.delete();
    await legacy.delete();
  });
});
