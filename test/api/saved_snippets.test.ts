import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';

forEachDatabase('saved snippets', (server) => {
  test('POST /saved_snippets creates a trimmed snippet and announces it to the owner only', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const before = Math.floor(Date.now() / 1000);
    const { result, events } = await captureEvents(s, () => hamlet.client.post('/saved_snippets', { title: '  Welcome ', content: ' Welcome to the team! \n' }));
    const body = ok(result);
    assertConforms(result, 'POST', '/saved_snippets');
    assert.equal(typeof body.saved_snippet_id, 'number');
    assert.equal(events.length, 1);
    const event = events[0]!;
    assert.deepEqual(recipientIds(event), [hamlet.user.id]);
    assert.equal(event.event.type, 'saved_snippets');
    assert.equal(event.event.op, 'add');
    const snippet = event.event.saved_snippet as Record<string, unknown>;
    assert.equal(snippet.id, body.saved_snippet_id);
    assert.equal(snippet.title, 'Welcome');
    assert.equal(snippet.content, 'Welcome to the team!');
    assert.ok((snippet.date_created as number) >= before);
    assertEventConforms(event.event);

    const list = await hamlet.client.get('/saved_snippets');
    assertConforms(list, 'GET', '/saved_snippets');
    assert.deepEqual(ok(list).saved_snippets, [snippet]);
    // Snippets are private to their owner.
    assert.deepEqual(ok(await s.cast.othello.client.get('/saved_snippets')).saved_snippets, []);
  });

  test('POST /saved_snippets refuses blank, missing and oversized title or content', async () => {
    const s = server();
    const c = s.cast.othello.client;
    err(await c.post('/saved_snippets', { title: '   ', content: 'x' }), 400, 'BAD_REQUEST', 'title cannot be blank');
    err(await c.post('/saved_snippets', { title: 'x', content: '' }), 400, 'BAD_REQUEST', 'content cannot be blank');
    const missing = err(await c.post('/saved_snippets', { title: 'x' }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'content' argument");
    assert.equal(missing.var_name, 'content');
    err(await c.post('/saved_snippets', { title: 'x'.repeat(61), content: 'y' }), 400, 'BAD_REQUEST', 'title is too long (limit: 60 characters)');
    err(await c.post('/saved_snippets', { title: 'x', content: 'y'.repeat(10001) }), 400, 'BAD_REQUEST', 'content is too long (limit: 10000 characters)');
    // 60 code points is allowed even when they are astral characters.
    ok(await c.post('/saved_snippets', { title: '\u{1F600}'.repeat(60), content: 'y' }));
  });

  test('PATCH /saved_snippets/{id} edits given fields and sends an update event', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const id = ok(await hamlet.client.post('/saved_snippets', { title: 'Greeting', content: 'Hello' })).saved_snippet_id;
    const { result, events } = await captureEvents(s, () => hamlet.client.patch(`/saved_snippets/${id}`, { content: ' Hi there ' }));
    ok(result);
    assertConforms(result, 'PATCH', '/saved_snippets/{saved_snippet_id}');
    assert.equal(events.length, 1);
    assert.deepEqual(recipientIds(events[0]!), [hamlet.user.id]);
    assert.equal(events[0]!.event.op, 'update');
    const snippet = events[0]!.event.saved_snippet as Record<string, unknown>;
    assert.equal(snippet.title, 'Greeting');
    assert.equal(snippet.content, 'Hi there');
    assertEventConforms(events[0]!.event);

    ok(await hamlet.client.patch(`/saved_snippets/${id}`, { title: 'Hi' }));
    const row = ok(await hamlet.client.get('/saved_snippets')).saved_snippets.find((x: { id: number }) => x.id === id);
    assert.equal(row.title, 'Hi');
    assert.equal(row.content, 'Hi there');

    // No change requested: success without an event.
    const none = await captureEvents(s, () => hamlet.client.patch(`/saved_snippets/${id}`, {}));
    ok(none.result);
    assert.equal(none.events.length, 0);
    err(await hamlet.client.patch(`/saved_snippets/${id}`, { title: ' ' }), 400, 'BAD_REQUEST', 'title cannot be blank');
  });

  test('a missing or foreign snippet answers 404 BAD_REQUEST', async () => {
    const s = server();
    const id = ok(await s.cast.hamlet.client.post('/saved_snippets', { title: 'Mine', content: 'Mine' })).saved_snippet_id;
    for (const res of [
      await s.cast.othello.client.patch(`/saved_snippets/${id}`, { title: 'Stolen' }),
      await s.cast.othello.client.patch(`/saved_snippets/${id}`, {}),
      await s.cast.othello.client.delete(`/saved_snippets/${id}`),
      await s.cast.hamlet.client.patch('/saved_snippets/999999', { title: 'x' }),
      await s.cast.hamlet.client.patch('/saved_snippets/999999', {}),
      await s.cast.hamlet.client.delete('/saved_snippets/999999'),
    ]) {
      err(res, 404, 'BAD_REQUEST', 'Saved snippet does not exist.');
    }
    assertConforms(await s.cast.hamlet.client.delete('/saved_snippets/999999'), 'DELETE', '/saved_snippets/{saved_snippet_id}');
  });

  test('DELETE /saved_snippets/{id} removes it and sends a remove event', async () => {
    const s = server();
    const { hamlet } = s.cast;
    const id = ok(await hamlet.client.post('/saved_snippets', { title: 'Temp', content: 'Temp' })).saved_snippet_id;
    const { result, events } = await captureEvents(s, () => hamlet.client.delete(`/saved_snippets/${id}`));
    ok(result);
    assertConforms(result, 'DELETE', '/saved_snippets/{saved_snippet_id}');
    assert.deepEqual(events.map((e) => e.event), [{ type: 'saved_snippets', op: 'remove', saved_snippet_id: id }]);
    assert.deepEqual(recipientIds(events[0]!), [hamlet.user.id]);
    assertEventConforms(events[0]!.event);
    assert.equal(ok(await hamlet.client.get('/saved_snippets')).saved_snippets.some((x: { id: number }) => x.id === id), false);
  });
});
