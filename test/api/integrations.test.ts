import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { createChannel } from './messages_send.fixtures.js';
import { doCreateUser } from '../../src/actions/users.js';
import { BOT_INCOMING_WEBHOOK, ROLE_MEMBER } from '../../src/lib/roles.js';
import type { User } from '../../src/db/tables.js';
import type { ApiResponse } from '../helpers/client.js';
import { INTEGRATION_CASES, fixture } from './integrations.cases.js';

const CHANNEL = 'integrations';

async function postWebhook(s: TestServer, name: string, query: Record<string, string>, body: string, contentType: string, headers: Record<string, string> = {}): Promise<ApiResponse> {
  const url = `${s.url}/api/v1/external/${name}?${new URLSearchParams(query).toString()}`;
  const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': contentType, ...headers }, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) };
}

/** The newest message hamlet can see in the narrow, with its raw Markdown. */
async function lastMessage(s: TestServer, narrow: unknown[]): Promise<any> {
  const body = ok(await s.cast.hamlet.client.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow, apply_markdown: false, allow_empty_topic_name: true }));
  return body.messages.at(-1);
}

forEachDatabase('incoming integrations', (server) => {
  let hook: User;
  before(async () => {
    const s = server();
    await createChannel(s, CHANNEL, { subscribers: [s.cast.hamlet.user] });
    hook = await doCreateUser(s.app.services, s.realm, {
      email: 'hook-bot@example.com',
      fullName: 'Hook Bot',
      role: ROLE_MEMBER,
      isBot: true,
      botType: BOT_INCOMING_WEBHOOK,
      botOwnerId: s.cast.hamlet.user.id,
      actingUser: null,
    });
    // Jira's fixtures name this address; Zulip shows the account's name for it.
    await doCreateUser(s.app.services, s.realm, { email: 'othello@zulip.com', fullName: 'Othello, the Moor of Venice', role: ROLE_MEMBER, actingUser: null });
  });

  for (const c of INTEGRATION_CASES) {
    test(`${c.integration}: ${c.fixture} renders as Zulip does`, async () => {
      const s = server();
      const res = await postWebhook(s, c.integration, { api_key: hook.api_key, stream: CHANNEL, ...(c.query ?? {}) }, fixture(c.integration, c.fixture), c.contentType ?? 'application/json', c.headers);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, { result: 'success', msg: '' });
      const m = await lastMessage(s, [{ operator: 'channel', operand: CHANNEL }]);
      assert.equal(m.sender_id, hook.id);
      assert.equal(m.client, c.client);
      assert.equal(m.subject, c.topic);
      assert.equal(m.content, c.content);
    });
  }

  test('the query topic overrides the integration\'s; a channel may be given by ID', async () => {
    const s = server();
    const stream = await s.app.services.db.kysely.selectFrom('streams').select('id').where('name', '=', CHANNEL).executeTakeFirstOrThrow();
    ok(await postWebhook(s, 'slack_incoming', { api_key: hook.api_key, stream: String(stream.id), topic: 'chosen' }, '{"text":"by id"}', 'application/json'));
    const m = await lastMessage(s, [{ operator: 'channel', operand: CHANNEL }]);
    assert.equal(m.subject, 'chosen');
    assert.equal(m.content, 'by id');
  });

  test('without a stream the message is a DM to the bot\'s owner', async () => {
    const s = server();
    ok(await postWebhook(s, 'json', { api_key: hook.api_key }, '{"a": 1}', 'application/json'));
    const m = await lastMessage(s, [{ operator: 'dm', operand: [hook.id] }]);
    assert.equal(m.type, 'private');
    assert.equal(m.sender_id, hook.id);
    assert.deepEqual(m.display_recipient.map((r: { id: number }) => r.id).sort(), [hook.id, s.cast.hamlet.user.id].sort());
    assert.equal(m.content, '```json\n{\n  "a": 1\n}\n```');
  });

  test('Basic authentication works as the api_key parameter does; a generic bot may post, as in Zulip', async () => {
    const s = server();
    const basic = `Basic ${Buffer.from(`${hook.email}:${hook.api_key}`).toString('base64')}`;
    ok(await postWebhook(s, 'slack_incoming', { stream: CHANNEL, topic: 'basic' }, '{"text":"basic auth"}', 'application/json', { Authorization: basic }));
    assert.equal((await lastMessage(s, [{ operator: 'channel', operand: CHANNEL }])).content, 'basic auth');
    const generic = s.cast.bot.user;
    ok(await postWebhook(s, 'slack_incoming', { api_key: generic.api_key, stream: CHANNEL, topic: 'generic' }, '{"text":"from a generic bot"}', 'application/json'));
    const m = await lastMessage(s, [{ operator: 'channel', operand: CHANNEL }]);
    assert.equal(m.sender_id, generic.id);
  });

  test('authentication errors are Zulip\'s', async () => {
    const s = server();
    const body = '{"text":"x"}';
    err(await postWebhook(s, 'slack_incoming', { stream: CHANNEL }, body, 'application/json'), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'api_key' argument");
    err(await postWebhook(s, 'slack_incoming', { api_key: 'x'.repeat(32), stream: CHANNEL }, body, 'application/json'), 401, 'INVALID_API_KEY', 'Invalid API key');
    err(await postWebhook(s, 'slack_incoming', { api_key: 'short', stream: CHANNEL }, body, 'application/json'), 401, 'INVALID_API_KEY', 'Malformed API key');
    const wrongBasic = `Basic ${Buffer.from(`${hook.email}:${'y'.repeat(32)}`).toString('base64')}`;
    err(await postWebhook(s, 'slack_incoming', { stream: CHANNEL }, body, 'application/json', { Authorization: wrongBasic }), 401, 'INVALID_API_KEY', 'Invalid API key');
  });

  test('a user who is not a bot must name a stream (Zulip sends no-stream messages to the bot\'s owner)', async () => {
    const s = server();
    err(await postWebhook(s, 'json', { api_key: s.cast.othello.user.api_key }, '{}', 'application/json'), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'stream' argument");
  });

  test('malformed JSON is a 400, never a 500; an unknown integration is a 404', async () => {
    const s = server();
    for (const name of ['json', 'slack_incoming']) {
      err(await postWebhook(s, name, { api_key: hook.api_key, stream: CHANNEL }, '{"text": ', 'application/json'), 400, 'INVALID_JSON', 'Malformed JSON');
    }
    err(await postWebhook(s, 'slack_incoming', { api_key: hook.api_key, stream: CHANNEL }, 'other=1', 'application/x-www-form-urlencoded'), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'payload' argument");
    err(await postWebhook(s, 'slack_incoming', { api_key: hook.api_key, stream: CHANNEL }, '{"attachments":[{"title":"t","title_link":"not a url"}]}', 'application/json'), 400, 'ANOMALOUS_WEBHOOK_PAYLOAD', 'Unable to parse request: Did SlackIncoming generate this event?');
    err(await postWebhook(s, 'nonexistent', { api_key: hook.api_key }, '{}', 'application/json'), 404, 'NOT_FOUND');
  });

  test('a channel that does not exist drops the message and succeeds, as in Zulip', async () => {
    const s = server();
    ok(await postWebhook(s, 'json', { api_key: hook.api_key, stream: 'no such channel' }, '{}', 'application/json'));
  });

  test('GitHub: a missing event header, an unsupported event (200, as Zulip answers) and an ignored one', async () => {
    const s = server();
    const q = { api_key: hook.api_key, stream: CHANNEL };
    const payload = fixture('github', 'issues.json');
    err(await postWebhook(s, 'github', q, payload, 'application/json'), 400, 'MISSING_HTTP_EVENT_HEADER', "Missing the HTTP event header 'X-GitHub-Event'");
    const before = await lastMessage(s, [{ operator: 'channel', operand: CHANNEL }]);
    const unsupported = await postWebhook(s, 'github', q, '{"action":"exploded"}', 'application/json', { 'X-GitHub-Event': 'marketplace_purchase' });
    assert.equal(unsupported.status, 200);
    assert.deepEqual(unsupported.body, {
      result: 'error',
      msg: "The 'marketplace_purchase:exploded' event isn't currently supported by the GitHub webhook; ignoring",
      code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE',
      webhook_name: 'GitHub',
      event_type: 'marketplace_purchase:exploded',
    });
    ok(await postWebhook(s, 'github', q, '{"action":"created"}', 'application/json', { 'X-GitHub-Event': 'milestone' }));
    err(await postWebhook(s, 'github', q, '{"action": 5}', 'application/json', { 'X-GitHub-Event': 'issues' }), 400, 'ANOMALOUS_WEBHOOK_PAYLOAD', 'Unable to parse request: Did GitHub generate this event?');
    assert.equal((await lastMessage(s, [{ operator: 'channel', operand: CHANNEL }])).id, before.id, 'nothing was posted');
  });

  test('only_events and exclude_events filter by Zulip\'s event names with shell wildcards', async () => {
    const s = server();
    const post = (extra: Record<string, string>) =>
      postWebhook(s, 'github', { api_key: hook.api_key, stream: CHANNEL, topic: 'filtered', ...extra }, fixture('github', 'issues.json'), 'application/json', { 'X-GitHub-Event': 'issues' });
    const newest = async () => (await lastMessage(s, [{ operator: 'channel', operand: CHANNEL }])).id as number;
    let last = await newest();
    ok(await post({ only_events: '["push_commits","pull_request*"]' }));
    assert.equal(await newest(), last, 'only_events without a match posts nothing');
    ok(await post({ exclude_events: '["iss?es"]' }));
    assert.equal(await newest(), last, 'exclude_events with a match posts nothing');
    ok(await post({ only_events: '["issue*"]', exclude_events: '["push_commits"]' }));
    assert.notEqual(await newest(), last);
    last = await newest();
    err(await post({ only_events: 'issues' }), 400, 'BAD_REQUEST');
    assert.equal(await newest(), last);
  });

  test('the generic send-a-message webhook (IFTTT) answers Zulip\'s errors for a missing or non-string topic or content', async () => {
    const s = server();
    const q = { api_key: hook.api_key, stream: CHANNEL };
    err(await postWebhook(s, 'ifttt', q, '{"content": "x"}', 'application/json'), 400, 'BAD_REQUEST', "Topic can't be empty");
    err(await postWebhook(s, 'ifttt', q, '{"topic": "x"}', 'application/json'), 400, 'BAD_REQUEST', "Content can't be empty");
    err(await postWebhook(s, 'ifttt', q, '{"topic": {"a": 1}, "content": "x"}', 'application/json'), 400, 'BAD_REQUEST', 'Malformed payload');
    err(await postWebhook(s, 'ifttt', q, '{"topic": "x", "content": ["x"]}', 'application/json'), 400, 'BAD_REQUEST', 'Malformed payload');
  });

  test('Jira: ignored events succeed without a message; a payload without an event is anomalous', async () => {
    const s = server();
    const q = { api_key: hook.api_key, stream: CHANNEL };
    const before = (await lastMessage(s, [{ operator: 'channel', operand: CHANNEL }])).id;
    ok(await postWebhook(s, 'jira', q, '{"webhookEvent": "sprint_started"}', 'application/json'));
    err(await postWebhook(s, 'jira', q, '{"issue": {}}', 'application/json'), 400, 'ANOMALOUS_WEBHOOK_PAYLOAD', 'Unable to parse request: Did Jira generate this event?');
    const unsupported = await postWebhook(s, 'jira', q, '{"webhookEvent": "board_created"}', 'application/json');
    assert.equal(unsupported.status, 200);
    assert.equal(unsupported.body.code, 'UNSUPPORTED_WEBHOOK_EVENT_TYPE');
    assert.equal(unsupported.body.msg, "The 'board_created' event isn't currently supported by the Jira webhook; ignoring");
    assert.equal((await lastMessage(s, [{ operator: 'channel', operand: CHANNEL }])).id, before);
  });

  test('odd payloads to every integration answer 200 or a 4xx, never a 500', async () => {
    const s = server();
    const q = { api_key: hook.api_key, stream: CHANNEL };
    const bodies = ['null', '5', '"text"', '[]', '[{}]', '{}', '{"alerts": 5}', '{"alerts": [null]}', '{"data": {"event": {}}}', '{"object_attributes": null}', '['.repeat(20000) + ']'.repeat(20000), '['.repeat(1000) + ']'.repeat(1000)];
    const headers = { 'X-GitHub-Event': 'push', 'X-GitLab-Event': 'Merge Request Hook' };
    for (const name of ['json', 'ifttt', 'slack_incoming', 'github', 'gitlab', 'sentry', 'grafana', 'alertmanager', 'jira']) {
      for (const body of bodies) {
        const res = await postWebhook(s, name, q, body, 'application/json', headers);
        assert.ok(res.status === 200 || (res.status >= 400 && res.status < 500), `${name} ${body.slice(0, 30)}: ${res.status} ${JSON.stringify(res.body)}`);
      }
    }
  });

  test('a body sent without a Content-Type is read as the payload', async () => {
    const s = server();
    const url = `${s.url}/api/v1/external/ifttt?${new URLSearchParams({ api_key: hook.api_key, stream: CHANNEL }).toString()}`;
    const res = await fetch(url, { method: 'POST', body: new TextEncoder().encode('{"topic": "no type", "content": "untyped body"}') });
    assert.equal(res.status, 200, await res.clone().text());
    const m = await lastMessage(s, [{ operator: 'channel', operand: CHANNEL }]);
    assert.equal(m.subject, 'no type');
    assert.equal(m.content, 'untyped body');
  });
});
