import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { registerQueue } from '../helpers/events.js';
import { captureEvents } from '../helpers/bus.js';
import { ApiClient } from '../helpers/client.js';
import { startSession } from '../../src/plugins/session.js';

forEachDatabase('organization-level operations', (server) => {
  test('POST /realm/test_welcome_bot_custom_message: a Welcome Bot DM to the administrator', async () => {
    const s = server();
    const { admin, hamlet } = s.cast;
    const { result: res, events } = await captureEvents(s, () =>
      admin.client.post('/realm/test_welcome_bot_custom_message', { welcome_message_custom_text: 'Read **#rules** first.' }),
    );
    const body = ok(res);
    assertConforms(res, 'POST', '/realm/test_welcome_bot_custom_message');
    const message = ok(await admin.client.get(`/messages/${body.message_id}`, { apply_markdown: false })).message;
    assert.equal(message.sender_full_name, 'Welcome Bot');
    assert.equal(message.content, 'Read **#rules** first.');
    assert.deepEqual(
      message.display_recipient.map((r: { id: number }) => r.id).includes(admin.user.id),
      true,
    );
    const sent = events.find((e) => e.event.type === 'message')!;
    assert.ok(sent);
    err(await admin.client.post('/realm/test_welcome_bot_custom_message', { welcome_message_custom_text: '' }), 400, 'BAD_REQUEST', 'Message must not be empty');
    err(await admin.client.post('/realm/test_welcome_bot_custom_message', {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'welcome_message_custom_text' argument");
    err(await admin.client.post('/realm/test_welcome_bot_custom_message', { welcome_message_custom_text: 'x'.repeat(8001) }), 400, 'BAD_REQUEST');
    err(await hamlet.client.post('/realm/test_welcome_bot_custom_message', { welcome_message_custom_text: 'hi' }), 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
  });

  test('POST /realm/deactivate: owners only; then every client is told, sessions end and requests answer REALM_DEACTIVATED', async () => {
    const s = server();
    const { owner, admin, hamlet } = s.cast;
    const res = await admin.client.post('/realm/deactivate');
    // zulip.yaml's 400 for this operation is a oneOf of identical CodedError schemas, which no
    // single error body can match exactly once; the code and message are Zulip's.
    err(res, 400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    err(await owner.client.post('/realm/deactivate', { deletion_delay_days: 'soon' }), 400, 'BAD_REQUEST');
    err(await owner.client.post('/realm/deactivate', { deletion_delay_days: 30 }), 400, 'BAD_REQUEST', 'Scheduled deletion of organization data is not supported by this server.');

    const cookie = (await startSession(s.app.services, hamlet.user)).split(';')[0]!;
    const browser = new ApiClient(s.url, null, null, { Cookie: cookie });
    ok(await browser.request('GET', '/users/me', {}, 'query', '/json'));
    const q = await registerQueue(hamlet.client, { event_types: ['realm'] });

    // Only a poll in progress can receive the event: afterwards the queue's owner cannot authenticate.
    const polled = q.next((ev) => ev.type === 'realm' && ev.op === 'deactivated');
    await new Promise((r) => setTimeout(r, 200));
    const done = await owner.client.post('/realm/deactivate', { deletion_delay_days: null });
    ok(done);
    assertConforms(done, 'POST', '/realm/deactivate');
    const e = await polled;
    assertEventConforms(e);
    assert.deepEqual({ type: e.type, op: e.op, realm_id: e.realm_id }, { type: 'realm', op: 'deactivated', realm_id: s.realm.id });

    for (const client of [hamlet.client, owner.client]) {
      err(await client.get('/users/me'), 401, 'REALM_DEACTIVATED', 'This organization has been deactivated');
    }
    err(await hamlet.client.get('/events', { queue_id: 'x', last_event_id: -1 }), 401, 'REALM_DEACTIVATED');
    err(await browser.request('GET', '/users/me', {}, 'query', '/json'), 401, 'UNAUTHORIZED', 'Not logged in: API authentication or user session required');
    const sessions = await s.app.services.db.kysely.selectFrom('sessions').select('id').execute();
    assert.equal(sessions.length, 0);
    const audit = await s.app.services.db.kysely.selectFrom('audit_log').selectAll().where('event_type', '=', 'realm_deactivated').execute();
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.acting_user_id, owner.user.id);
  });
});
