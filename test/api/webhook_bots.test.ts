import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { ApiClient, type ApiResponse } from '../helpers/client.js';
import { basicAuth, fetchRaw, postFiles, PNG_1X1 } from '../helpers/uploads.js';
import { createChannel } from './messages_send.fixtures.js';
import { doCreateUser } from '../../src/actions/users.js';
import { BOT_GENERIC, BOT_INCOMING_WEBHOOK, ROLE_MEMBER } from '../../src/lib/roles.js';
import type { User } from '../../src/db/tables.js';

/**
 * Incoming-webhook bots as Zulip treats them (zerver/decorator.py): their key works for the
 * integrations and for sending messages, and nowhere else; a request an integration cannot
 * read (invalid JSON, a missing event header) is refused and the bot's owner is told by
 * Notification Bot, at most once a minute per bot (zerver/lib/webhooks/common.py).
 */

const CHANNEL = 'webhook bots';

async function postWebhook(s: TestServer, name: string, apiKey: string, body: string, headers: Record<string, string> = {}): Promise<ApiResponse> {
  const url = `${s.url}/api/v1/external/${name}?${new URLSearchParams({ api_key: apiKey, stream: CHANNEL }).toString()}`;
  const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body });
  return { status: res.status, headers: res.headers, body: JSON.parse(await res.text()) };
}

/** The direct messages Notification Bot sent hamlet, oldest first. */
async function noticesTo(s: TestServer): Promise<string[]> {
  const body = ok(
    await s.cast.hamlet.client.get('/messages', {
      anchor: 'newest',
      num_before: 100,
      num_after: 0,
      narrow: [{ operator: 'is', operand: 'dm' }],
      apply_markdown: false,
    }),
  );
  return body.messages.filter((m: any) => m.sender_email.startsWith('notification-bot@')).map((m: any) => m.content);
}

forEachDatabase('incoming-webhook bots', (server) => {
  let hook: User;
  let generic: User;
  const makeBot = (s: TestServer, email: string, fullName: string, botType: number) =>
    doCreateUser(s.app.services, s.realm, { email, fullName, role: ROLE_MEMBER, isBot: true, botType, botOwnerId: s.cast.hamlet.user.id, actingUser: null });

  before(async () => {
    const s = server();
    await createChannel(s, CHANNEL, { subscribers: [s.cast.hamlet.user] });
    hook = await makeBot(s, 'alerts-bot@example.com', 'Alerts', BOT_INCOMING_WEBHOOK);
    generic = await makeBot(s, 'helper-bot@example.com', 'Helper', BOT_GENERIC);
  });

  test('their key sends messages and is refused by the rest of the API with a 401', async () => {
    const s = server();
    const c = new ApiClient(s.url, hook.email, hook.api_key);
    ok(await c.post('/messages', { type: 'stream', to: CHANNEL, topic: 'alerts', content: 'disk full' }));
    const refused = 'This API is not available to incoming webhook bots.';
    err(await c.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0 }), 401, 'UNAUTHORIZED', refused);
    err(await c.post('/register', {}), 401, 'UNAUTHORIZED', refused);
    err(await c.get('/users/me'), 401, 'UNAUTHORIZED', refused);
    err(await c.get('/events', { queue_id: 'x', last_event_id: -1 }), 401, 'UNAUTHORIZED', refused);
    err(await postFiles(c, '/user_uploads', [{ field: 'file', name: 'a.png', data: PNG_1X1, type: 'image/png' }]), 401, 'UNAUTHORIZED', refused);
    const upload = ok(await postFiles(s.cast.hamlet.client, '/user_uploads', [{ field: 'file', name: 'a.png', data: PNG_1X1, type: 'image/png' }])).url;
    assert.equal((await fetchRaw(`${s.url}${upload}`, basicAuth(c))).status, 401);
    assert.equal((await fetchRaw(`${s.url}${upload}?api_key=${hook.api_key}`)).status, 401);
    // Other bots are not affected.
    ok(await new ApiClient(s.url, generic.email, generic.api_key).get('/users/me'));
  });

  test("invalid JSON is refused and the bot's owner is told, once a minute", async () => {
    const s = server();
    const before = (await noticesTo(s)).length;
    err(await postWebhook(s, 'github', hook.api_key, '{"zen": ', { 'X-GitHub-Event': 'ping' }), 400, 'INVALID_JSON', 'Malformed JSON');
    err(await postWebhook(s, 'grafana', hook.api_key, 'not json'), 400, 'INVALID_JSON', 'Malformed JSON');
    const notices = (await noticesTo(s)).slice(before);
    assert.deepEqual(notices, [
      'Hi there! It looks like you tried to set up the Zulip GitHub integration,\n' +
        "but didn't correctly configure the webhook to send data in the JSON format\n" +
        'that this integration expects!',
    ]);
  });

  test("a missing event header is refused and the bot's owner is told which", async () => {
    const s = server();
    const before = (await noticesTo(s)).length;
    err(await postWebhook(s, 'gitlab', generic.api_key, '{}'), 400, 'MISSING_HTTP_EVENT_HEADER', "Missing the HTTP event header 'X-GitLab-Event'");
    const notices = (await noticesTo(s)).slice(before);
    assert.deepEqual(notices, [
      'Hi there!  Your bot Helper just sent an HTTP request to /api/v1/external/gitlab that\n' +
        'is missing the HTTP X-GitLab-Event header.  Because this header is how\n' +
        'GitLab indicates the event type, this usually indicates a configuration\n' +
        'issue, where you either entered the URL for a different integration, or are running\n' +
        "an older version of the third-party service that doesn't provide that header.\n" +
        `Contact ${s.app.services.config.supportEmail} if you need help debugging!`,
    ]);
    // A person's key: the error only.
    err(await postWebhook(s, 'gitlab', s.cast.othello.user.api_key, '{}'), 400, 'MISSING_HTTP_EVENT_HEADER', "Missing the HTTP event header 'X-GitLab-Event'");
    assert.equal((await noticesTo(s)).length, before + 1);
  });
});
