import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, PASSWORD, type TestServer } from '../helpers/server.js';
import { ApiClient } from '../helpers/client.js';
import { ok } from '../helpers/assert.js';
import { doCreateUser, doDeactivateUser, doReactivateUser, doSetSpecialPermission } from '../../src/actions/users.js';
import { doCreateRealm } from '../../src/actions/realms.js';
import { fetchUserById } from '../../src/db/repos/users.js';
import { ROLE_MEMBER } from '../../src/lib/roles.js';
import { collectRoutes } from '../helpers/fuzz.js';
import { CALLERS, MATRIX, type Caller, type MatrixContext } from './permission_matrix.js';

/** The only API routes that need no credentials. */
const UNAUTHENTICATED_ROUTES = new Set(['GET /server_settings', 'POST /fetch_api_key', 'POST /jwt/fetch_api_key']);

/** Runs every cell of permission_matrix.ts: each row is one test, listing every cell that differs. */
forEachDatabase('permission matrix', (server) => {
  let ctx: MatrixContext;
  let clients: Record<Caller, ApiClient>;

  before(async () => {
    const s: TestServer = server();
    const services = s.app.services;
    const { owner, admin, moderator, hamlet, othello, guest, bot } = s.cast;
    const target = await doCreateUser(services, s.realm, { email: 'target@example.com', fullName: 'Target', password: PASSWORD, role: ROLE_MEMBER, actingUser: null });
    const gone = await doCreateUser(services, s.realm, { email: 'gone@example.com', fullName: 'Gone', password: PASSWORD, role: ROLE_MEMBER, actingUser: null });
    await doDeactivateUser(services, s.realm, gone, null);
    const zephyr = await doCreateRealm(services, { stringId: 'zephyr', name: 'Zephyr' });
    const outsider = await doCreateUser(services, zephyr, { email: 'outsider@zephyr.example', fullName: 'Outsider', password: PASSWORD, role: ROLE_MEMBER, actingUser: null });

    const everyone = [owner, admin, moderator, hamlet, othello, guest, bot].map((c) => c.user.id);
    ok(await owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'matrix' }], principals: [...everyone, target.id] }));
    const streamId = ok(await owner.client.get('/get_stream_id', { stream: 'matrix' })).stream_id as number;
    ok(await hamlet.client.post('/user_groups/create', { name: 'matrix group', description: 'made by the bot owner', members: [hamlet.user.id, othello.user.id] }));
    const groups = ok(await owner.client.get('/user_groups')).user_groups as { id: number; name: string }[];
    const groupId = groups.find((g) => g.name === 'matrix group')!.id;

    let counter = 0;
    ctx = {
      streamId,
      streamName: 'matrix',
      groupId,
      targetId: target.id,
      targetEmail: target.email,
      botId: bot.user.id,
      domain: 'matrix.example',
      fresh: (prefix) => `${prefix}${++counter}x${Date.now() % 100000}`,
      sendToTopic: async (topic) => {
        ok(await owner.client.post('/messages', { type: 'stream', to: streamId, topic, content: 'to be deleted' }));
      },
      resetTarget: async () => {
        const row = (await fetchUserById(services.db.kysely, s.realm.id, target.id))!;
        if (!row.is_active) await doReactivateUser(services, s.realm, row, null);
        await services.db.kysely.updateTable('users').set({ role: ROLE_MEMBER }).where('id', '=', target.id).execute();
      },
      deactivateTarget: async () => {
        const row = (await fetchUserById(services.db.kysely, s.realm.id, target.id))!;
        if (row.is_active) await doDeactivateUser(services, s.realm, row, null);
      },
      subscribe: async (userId) => {
        ok(await owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'matrix' }], principals: [userId] }));
      },
      setOwnerCanChangeEmails: async (value) => {
        const row = (await fetchUserById(services.db.kysely, s.realm.id, owner.user.id))!;
        await doSetSpecialPermission(services, s.realm, row, 'can_change_user_emails', value);
      },
      ensureDomain: async (domain) => {
        const listed = ok(await owner.client.get('/realm/domains')).domains as { domain: string }[];
        if (!listed.some((d) => d.domain === domain)) ok(await owner.client.post('/realm/domains', { domain, allow_subdomains: false }));
      },
      hasRoute: (method, path) => s.app.fastify.hasRoute({ method: method as 'GET', url: `/api/v1${path}` }),
    };
    clients = {
      owner: owner.client,
      admin: admin.client,
      moderator: moderator.client,
      member: othello.client,
      guest: guest.client,
      bot: bot.client,
      botOwner: hamlet.client,
      deactivated: s.clientFor(gone),
      // Its own (valid) key, sent to this organization's host.
      otherOrg: new ApiClient(s.url, outsider.email, outsider.api_key),
      anonymous: s.anonymous,
    };
  });

  test('every authenticated route: the deactivated user, the other organization\'s user and no credentials get the exact 401', async () => {
    const s = server();
    const routes = (await collectRoutes(s.app.services)).filter((r) => r.prefixes.includes('/api/v1') && r.method !== 'HEAD' && !UNAUTHENTICATED_ROUTES.has(`${r.method} ${r.path}`));
    const wrong: string[] = [];
    for (const route of routes) {
      // An incoming webhook's URL names a real integration (an unknown one is a 404 route, as in Zulip).
      const path = route.path.replace(':integration_name', 'json').replace(/:[a-z_]+/g, String(ctx.targetId)).replace('*', 'narrow');
      const encoding = route.method === 'GET' ? 'query' : 'form';
      for (const caller of ['deactivated', 'otherOrg', 'anonymous'] as const) {
        // Without credentials, an incoming webhook asks for its api_key, as Zulip's webhook_view does.
        const want =
          caller === 'anonymous' && route.path.startsWith('/external/')
            ? { status: 400, code: 'REQUEST_VARIABLE_MISSING', msg: "Missing 'api_key' argument" }
            : (MATRIX[0]!.expect[caller] as { status: number; code: string; msg: string });
        const res = await clients[caller].request(route.method, path, {}, encoding);
        if (res.status !== want.status || res.body?.code !== want.code || res.body?.msg !== want.msg) {
          wrong.push(`${route.method} ${route.path} as ${caller}: ${res.status} ${JSON.stringify(res.body).slice(0, 120)}`);
        }
      }
      // A browser without a session on /json (incoming webhooks are served under /api/v1 only).
      if (!route.prefixes.includes('/json')) continue;
      const res = await s.anonymous.request(route.method, path, {}, encoding, '/json');
      if (res.status !== 401 || res.body?.msg !== 'Not logged in: API authentication or user session required') {
        wrong.push(`/json${route.path} without a session: ${res.status} ${JSON.stringify(res.body).slice(0, 120)}`);
      }
    }
    assert.ok(routes.length > 80, `only ${routes.length} routes`);
    assert.ok(wrong.length === 0, wrong.join('\n'));
    console.log(`# permission matrix: ${MATRIX.length} rows x ${CALLERS.length} callers, plus ${routes.length} authenticated routes x 4 unauthenticated callers`);
  });

  for (const row of MATRIX) {
    test(row.name, async (t) => {
      if (!ctx.hasRoute(row.method, row.route)) {
        t.skip(`${row.method} ${row.route} is not served yet`);
        return;
      }
      const wrong: string[] = [];
      for (const caller of CALLERS) {
        await row.setup?.(ctx);
        const params = (await row.params?.(ctx, caller)) ?? {};
        const res = await clients[caller].request(row.method, row.path(ctx), params);
        const want = row.expect[caller];
        const got = `${res.status} ${res.body?.code ?? ''} ${JSON.stringify(res.body?.msg ?? '')}`;
        if (want === 'ok') {
          if (res.status !== 200 || res.body?.result !== 'success') wrong.push(`${caller}: expected success, got ${got}`);
        } else if (res.status !== want.status || res.body?.code !== want.code || (want.msg !== undefined && res.body?.msg !== want.msg)) {
          wrong.push(`${caller}: expected ${want.status} ${want.code} ${JSON.stringify(want.msg ?? '*')}, got ${got}`);
        } else if (res.body?.result !== 'error' || typeof res.body?.msg !== 'string') {
          wrong.push(`${caller}: not a Zulip error body: ${JSON.stringify(res.body)}`);
        }
      }
      assert.ok(wrong.length === 0, `${row.name}:\n${wrong.join('\n')}`);
    });
  }
});
