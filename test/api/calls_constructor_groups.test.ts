import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { forEachDatabase } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';

/**
 * A Constructor Groups XAPI on loopback, as Zulip's ConstructorGroupsService calls it
 * (zerver/views/video_calls.py): `POST <url>/room/default` with a bearer token and the room's
 * creator and names, answering the room with its `url`.
 */
const seen: { path: string; auth: string; type: string; body: any }[] = [];
let answer: { status: number; body: string } | null = null;

async function readBody(req: IncomingMessage): Promise<string> {
  let s = '';
  for await (const c of req) s += c;
  return s;
}

const xapi = createServer(async (req, res) => {
  const body = JSON.parse(await readBody(req));
  seen.push({ path: `${req.method} ${req.url}`, auth: req.headers.authorization ?? '', type: req.headers['content-type'] ?? '', body });
  if (req.method !== 'POST' || req.url !== '/api/groups/xapi/room/default') {
    res.writeHead(404).end();
    return;
  }
  const a = answer ?? { status: 200, body: JSON.stringify({ room_guid: 'room-123', name: body.name, url: 'https://groups.example.com/groups/room/room-123' }) };
  answer = null;
  res.writeHead(a.status, { 'Content-Type': 'application/json' }).end(a.body);
});
await new Promise<void>((r) => xapi.listen(0, '127.0.0.1', r));
const xapiUrl = `http://127.0.0.1:${(xapi.address() as AddressInfo).port}/api/groups/xapi`;
after(() => xapi.close());

forEachDatabase('POST /calls/constructorgroups/create', (server) => {
  test('unconfigured: refused, and not offered as a provider', async () => {
    const s = server();
    err(await s.cast.hamlet.client.post('/calls/constructorgroups/create'), 400, 'BAD_REQUEST', 'Constructor Groups credentials have not been configured');
    const state = ok(await s.cast.hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) }));
    assert.equal(state.realm_available_video_chat_providers.constructor_groups, undefined);
  });

  test("answers the user's default room, asked for with Zulip's token and names", async () => {
    const s = server();
    const { hamlet, admin } = s.cast;
    s.config.constructorGroups = { url: xapiUrl, accessKey: 'test-access-key', secretKey: 'test-secret-key' };
    const res = await hamlet.client.post('/calls/constructorgroups/create');
    assertConforms(res, 'POST', '/calls/constructorgroups/create');
    assert.equal(ok(res).url, 'https://groups.example.com/groups/room/room-123');
    const hash = createHash('sha256').update('test-access-key|test-secret-key').digest('hex');
    const name = `${hamlet.user.full_name}'s Zulip room`;
    assert.deepEqual(seen.at(-1), {
      path: 'POST /api/groups/xapi/room/default',
      auth: `Bearer test-access-key|${hash}`,
      type: 'application/json',
      body: { creator_email: hamlet.user.delivery_email, name, fallback_name: `${name} (${s.realm.id}-${hamlet.user.id})` },
    });
    // Zulip's endpoint takes no parameters.
    assert.deepEqual(ok(await hamlet.client.post('/calls/constructorgroups/create', { is_video_call: 'false' })).ignored_parameters_unsupported, ['is_video_call']);

    // Offered once configured, and an administrator may choose it.
    const state = ok(await hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) }));
    assert.deepEqual(state.realm_available_video_chat_providers.constructor_groups, { name: 'Constructor Groups', id: 6 });
    ok(await admin.client.patch('/realm', { video_chat_provider: '6' }));
    const after = ok(await hamlet.client.post('/register', { fetch_event_types: JSON.stringify(['realm']) }));
    assert.equal(after.realm_video_chat_provider, 6);
    ok(await admin.client.patch('/realm', { video_chat_provider: '1' }));
  });

  test('an error from the server, an answer without a URL or no server at all: the call fails', async () => {
    const s = server();
    const failed = async () =>
      err(await s.cast.hamlet.client.post('/calls/constructorgroups/create'), 400, 'BAD_REQUEST', 'Failed to create Constructor Groups call');
    s.config.constructorGroups = { url: xapiUrl, accessKey: 'k', secretKey: 'wrong' };
    answer = { status: 401, body: JSON.stringify({ detail: 'Invalid token' }) };
    await failed();
    answer = { status: 200, body: JSON.stringify({ room_guid: 'room-9', name: 'x' }) };
    await failed();
    answer = { status: 200, body: 'not json' };
    await failed();
    s.config.constructorGroups = { url: 'http://127.0.0.1:1', accessKey: 'k', secretKey: 's' };
    await failed();
  });
});
