import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import type { ApiClient } from '../helpers/client.js';

type Dict = Record<string, any>;

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

/** One bot's URL on the endpoint: the requests it received, and how it answers. */
class Route {
  readonly received: Received[] = [];
  respond: (req: Received, res: ServerResponse) => void = (_r, res) => res.end('{}');

  constructor(readonly url: string) {}

  async next(count: number, timeoutMs = 8000): Promise<Received[]> {
    const until = Date.now() + timeoutMs;
    while (this.received.length < count) {
      if (Date.now() > until) assert.fail(`expected ${count} requests, got ${this.received.length}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.received.splice(0, count);
  }
}

/**
 * A real HTTP endpoint standing in for the bots' services. Each bot gets a path of its own, so
 * a late delivery for one test's bot can never be counted by another test.
 */
class Endpoint {
  private readonly routes = new Map<string, Route>();
  private server!: Server;
  private base = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const route = this.routes.get(req.url ?? '');
        if (!route) {
          res.statusCode = 404;
          res.end();
          return;
        }
        const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        route.received.push(r);
        route.respond(r, res);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** A new path, for one bot. */
  route(name: string): Route {
    const path = `/hook/${name}/${this.routes.size}`;
    const route = new Route(`${this.base}${path}`);
    this.routes.set(path, route);
    return route;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function waitForMessage(client: ApiClient, narrow: Dict[], match: (m: Dict) => boolean, timeoutMs = 8000): Promise<Dict> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const messages = ok(await client.get('/messages', { anchor: 'newest', num_before: 20, num_after: 0, apply_markdown: false, narrow: JSON.stringify(narrow) })).messages as Dict[];
    const found = messages.find(match);
    if (found) return found;
    if (Date.now() > until) assert.fail(`no matching message; have ${JSON.stringify(messages.map((m) => [m.sender_full_name, m.content]))}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function createOutgoingBot(s: TestServer, fullName: string, shortName: string, url: string, interfaceType = 1): Promise<{ id: number; token: string; email: string }> {
  const { hamlet } = s.cast;
  const id = ok(await hamlet.client.post('/bots', { full_name: fullName, short_name: shortName, bot_type: 3, payload_url: JSON.stringify(url), interface_type: interfaceType })).user_id;
  const bots = ok(await hamlet.client.post('/register', { fetch_event_types: ['realm_bot'] })).realm_bots as Dict[];
  return { id, token: bots.find((b) => b.user_id === id)!.services[0].token, email: `${shortName}-bot@localhost` };
}

const hooks = new Endpoint();
before(() => hooks.start());
after(() => hooks.close());

forEachDatabase(
  'outgoing webhooks',
  (server) => {
    test("a mention POSTs Zulip's payload; the response's content is the bot's reply in the topic", async () => {
      const s = server();
      const { hamlet, othello } = s.cast;
      const endpoint = hooks.route('echo');
      const bot = await createOutgoingBot(s, 'Echo Bot', 'echo', endpoint.url);
      ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'hooks' }] }));
      const streamId = ok(await hamlet.client.get('/get_stream_id', { stream: 'hooks' })).stream_id;
      endpoint.respond = (_r, res) => res.setHeader('content-type', 'application/json').end(JSON.stringify({ content: 'pong **there**' }));

      ok(await hamlet.client.post('/messages', { type: 'stream', to: 'hooks', topic: 'silence', content: 'no bot here' }));
      const sent = ok(await hamlet.client.post('/messages', { type: 'stream', to: 'hooks', topic: 'pings', content: '@**Echo Bot** ping' }));
      const [req] = await endpoint.next(1);
      assert.equal(req!.headers['content-type'], 'application/json');
      assert.match(String(req!.headers['user-agent']), /^ZulipOutgoingWebhook\//);
      const payload = JSON.parse(req!.body);
      assertConforms({ status: 200, headers: new Headers(), body: payload }, 'POST', '/zulip-outgoing-webhook');
      assert.deepEqual(Object.keys(payload).sort(), ['bot_email', 'bot_full_name', 'data', 'message', 'token', 'trigger']);
      assert.equal(payload.data, '@**Echo Bot** ping');
      assert.equal(payload.token, bot.token);
      assert.equal(payload.trigger, 'mention');
      assert.equal(payload.bot_email, bot.email);
      assert.equal(payload.bot_full_name, 'Echo Bot');
      const m = payload.message;
      assert.equal(m.id, sent.id);
      assert.equal(m.content, '@**Echo Bot** ping');
      assert.equal(m.content_type, 'text/x-markdown');
      assert.equal(m.rendered_content, `<p><span class="user-mention" data-user-id="${bot.id}">@Echo Bot</span> ping</p>`);
      assert.equal(m.type, 'stream');
      assert.equal(m.display_recipient, 'hooks');
      assert.equal(m.stream_id, streamId);
      assert.equal(m.subject, 'pings');
      assert.equal(m.sender_id, hamlet.user.id);
      assert.equal(m.sender_email, hamlet.user.email);
      assert.equal(m.flags, undefined);

      const reply = await waitForMessage(othello.client, [{ operator: 'channel', operand: 'hooks' }, { operator: 'topic', operand: 'pings' }], (x) => x.sender_id === bot.id);
      assert.equal(reply.content, 'pong **there**');
      assert.equal(reply.client, 'OutgoingWebhookResponse');
      // The bot's own reply (it mentions nobody) and the unmentioning message triggered nothing.
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(endpoint.received.length, 0);
    });

    test('a direct message triggers direct_message; response_string, response_not_required and an empty answer', async () => {
      const s = server();
      const { hamlet } = s.cast;
      const endpoint = hooks.route('dm');
      const bot = await createOutgoingBot(s, 'Dm Bot', 'dm', endpoint.url);
      const dm = [{ operator: 'dm', operand: [bot.id] }];
      endpoint.respond = (_r, res) => res.end(JSON.stringify({ response_string: 'from response_string', content: 'ignored' }));
      ok(await hamlet.client.post('/messages', { type: 'direct', to: JSON.stringify([bot.id]), content: 'hello bot' }));
      const [req] = await endpoint.next(1);
      const payload = JSON.parse(req!.body);
      assert.equal(payload.trigger, 'direct_message');
      assert.equal(payload.message.type, 'private');
      assert.deepEqual(payload.message.display_recipient.map((u: Dict) => u.id).sort(), [hamlet.user.id, bot.id].sort());
      await waitForMessage(hamlet.client, dm, (x) => x.sender_id === bot.id && x.content === 'from response_string');

      endpoint.respond = (_r, res) => res.end(JSON.stringify({ response_not_required: true, content: 'not sent' }));
      ok(await hamlet.client.post('/messages', { type: 'direct', to: JSON.stringify([bot.id]), content: 'quiet please' }));
      await endpoint.next(1);
      endpoint.respond = (_r, res) => res.end(JSON.stringify(''));
      ok(await hamlet.client.post('/messages', { type: 'direct', to: JSON.stringify([bot.id]), content: 'old botserver' }));
      await endpoint.next(1);
      await new Promise((r) => setTimeout(r, 300));
      const fromBot = ok(await hamlet.client.get('/messages', { anchor: 'newest', num_before: 20, num_after: 0, narrow: JSON.stringify(dm) })).messages.filter((x: Dict) => x.sender_id === bot.id);
      assert.equal(fromBot.length, 1);
    });

    test('the Slack-compatible format: form fields, and the reply from `text`', async () => {
      const s = server();
      const { hamlet } = s.cast;
      const endpoint = hooks.route('slack');
      const bot = await createOutgoingBot(s, 'Slack Bot', 'slack', endpoint.url, 2);
      ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'slacky' }] }));
      const streamId = ok(await hamlet.client.get('/get_stream_id', { stream: 'slacky' })).stream_id;
      endpoint.respond = (_r, res) => res.end(JSON.stringify({ text: 'slack reply' }));
      const sent = ok(await hamlet.client.post('/messages', { type: 'stream', to: 'slacky', topic: 't', content: 'hey @**Slack Bot**' }));
      const [req] = await endpoint.next(1);
      assert.equal(req!.headers['content-type'], 'application/x-www-form-urlencoded');
      const form = Object.fromEntries(new URLSearchParams(req!.body));
      const ts = String(ok(await hamlet.client.get(`/messages/${sent.id}`)).message.timestamp);
      assert.deepEqual(form, {
        token: bot.token,
        team_id: `T${s.realm.id}`,
        team_domain: new URL(s.config.externalUrl).host,
        channel_id: `C${streamId}`,
        channel_name: 'slacky',
        thread_ts: ts,
        timestamp: ts,
        user_id: `U${hamlet.user.id}`,
        user_name: 'King Hamlet',
        text: 'hey @**Slack Bot**',
        trigger_word: 'mention',
        service_id: String(bot.id),
      });
      await waitForMessage(hamlet.client, [{ operator: 'channel', operand: 'slacky' }], (x) => x.sender_id === bot.id && x.content === 'slack reply');
    });

    test('failures: an error status, bad JSON, and a connection dropped on every try (4 tries) are reported in the conversation and to the owner', async () => {
      const s = server();
      const { hamlet, othello } = s.cast;
      const endpoint = hooks.route('flaky');
      const bot = await createOutgoingBot(s, 'Flaky Bot', 'flaky', endpoint.url);
      ok(await othello.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'flaky' }] }));
      const ownerDm = [{ operator: 'dm', operand: [bot.id] }];
      const narrow = (topic: string) => [{ operator: 'channel', operand: 'flaky' }, { operator: 'topic', operand: topic }];

      endpoint.respond = (_r, res) => {
        res.statusCode = 500;
        res.end("it's broken");
      };
      const first = ok(await othello.client.post('/messages', { type: 'stream', to: 'flaky', topic: 'status', content: '@**Flaky Bot** hi' }));
      await endpoint.next(1);
      await waitForMessage(othello.client, narrow('status'), (x) => x.sender_id === bot.id && x.content === 'Failure! Third party responded with 500');
      const notice = await waitForMessage(hamlet.client, ownerDm, (x) => x.sender_id === bot.id && x.content.includes('status code'));
      const link = notice.content.match(/^\[A message\]\(([^)]+)\)/)![1];
      assert.match(link, new RegExp(`/#narrow/channel/\\d+-flaky/topic/status/near/${first.id}$`));
      assert.equal(
        notice.content,
        `[A message](${link}) to your bot @_**Flaky Bot** triggered an outgoing webhook.\nThe webhook got a response with status code *500*.\nThe response contains the following payload:\n\`\`\`\nb"it's broken"\n\`\`\``,
      );

      endpoint.respond = (_r, res) => res.end('not json');
      ok(await othello.client.post('/messages', { type: 'stream', to: 'flaky', topic: 'json', content: '@**Flaky Bot** hi' }));
      await endpoint.next(1);
      await waitForMessage(othello.client, narrow('json'), (x) => x.sender_id === bot.id && x.content === 'Failure! Invalid JSON in response');
      await waitForMessage(hamlet.client, ownerDm, (x) =>
        x.content.endsWith(
          'triggered an outgoing webhook.\nThe outgoing webhook server attempted to send a message in Zulip, but that request resulted in the following error:\n> Invalid JSON in response',
        ),
      );

      endpoint.respond = (_r, res) => res.socket?.destroy();
      ok(await othello.client.post('/messages', { type: 'stream', to: 'flaky', topic: 'down', content: '@**Flaky Bot** anyone?' }));
      await endpoint.next(4);
      await waitForMessage(othello.client, narrow('down'), (x) => x.sender_id === bot.id && x.content === 'Failure! Bot is unavailable');
      await waitForMessage(hamlet.client, ownerDm, (x) =>
        x.content.endsWith(
          'triggered an outgoing webhook.\nThe message `@**Flaky Bot** anyone?` resulted in a connection error when sending a request to an outgoing webhook! See the Zulip server logs for more information.',
        ),
      );
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(endpoint.received.length, 0);
    });

    test('a mention through a group triggers the bot; a silent mention and a message from a bot do not', async () => {
      const s = server();
      const { hamlet, admin } = s.cast;
      const endpoint = hooks.route('groupie');
      const bot = await createOutgoingBot(s, 'Group Bot', 'groupie', endpoint.url);
      ok(await admin.client.post('/user_groups/create', { name: 'bot fans', description: 'with a bot', members: JSON.stringify([bot.id, hamlet.user.id]) }));
      ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'groups' }] }));
      endpoint.respond = (_r, res) => res.end(JSON.stringify({ response_not_required: true }));
      ok(await hamlet.client.post('/messages', { type: 'stream', to: 'groups', topic: 't', content: 'quietly @_**Group Bot**' }));
      ok(await s.cast.bot.client.post('/messages', { type: 'stream', to: 'groups', topic: 't', content: '@**Group Bot** from a bot' }));
      ok(await hamlet.client.post('/messages', { type: 'stream', to: 'groups', topic: 't', content: 'hey @*bot fans*' }));
      const [req] = await endpoint.next(1);
      const payload = JSON.parse(req!.body);
      assert.equal(payload.data, 'hey @*bot fans*');
      assert.equal(payload.trigger, 'mention');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(endpoint.received.length, 0);
    });

    test('a timeout is retried, then reported', async () => {
      const s = server();
      const { hamlet } = s.cast;
      const endpoint = hooks.route('slow');
      const bot = await createOutgoingBot(s, 'Slow Bot', 'slow', endpoint.url);
      endpoint.respond = (_r, res) => setTimeout(() => res.end('{}'), 600);
      ok(await hamlet.client.post('/messages', { type: 'direct', to: JSON.stringify([bot.id]), content: 'wake up' }));
      await endpoint.next(4);
      const dm = [{ operator: 'dm', operand: [bot.id] }];
      await waitForMessage(hamlet.client, dm, (x) => x.sender_id === bot.id && x.content === 'Failure! Bot is unavailable');
      await waitForMessage(hamlet.client, dm, (x) => x.content.endsWith('triggered an outgoing webhook.\nRequest timed out after 0.3 seconds.'));
    });
  },
  { outgoingWebhookTimeoutMs: 300 },
);
