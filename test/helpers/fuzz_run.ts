import assert from 'node:assert/strict';
import { join } from 'node:path';
import fc from 'fast-check';
import { ok } from './assert.js';
import type { TestServer } from './server.js';
import type { User } from '../../src/db/tables.js';
import {
  buildRequest,
  collectRoutes,
  describe as describeRequest,
  diffSnapshots,
  requestFor,
  responseViolation,
  routeParams,
  sendRaw,
  sweepRequests,
  SWEEP_STRINGS,
  snapshotDb,
  sourceParamNames,
  type CallerName,
  type Credentials,
  type Pools,
  type RouteInfo,
  type RouteParams,
  type FuzzRequest,
  type RawResponse,
  type Built,
  type Snapshot,
} from './fuzz.js';

/**
 * One fuzzing session against a running test server: seeds data, then drives every route
 * with `runsPerRoute` generated requests (one fast-check property per route, seeded from
 * `seed`), checking after each request that it got no 5xx, that errors are Zulip-shaped,
 * and that a failed request left every table unchanged.
 */
export interface FuzzOptions {
  seed: number;
  runsPerRoute: number;
  /** Stop early (between routes) after this many milliseconds. */
  budgetMs?: number;
  log?: (line: string) => void;
  /** Record violations and go on (scripts/fuzz-long.mjs) instead of failing at the first. */
  keepGoing?: boolean;
  /** Strings the deterministic sweep puts into every string of every documented parameter. */
  sweep?: string[];
  /** Also snapshot the database after GET and HEAD requests (slower; the long run does). */
  checkReads?: boolean;
  /** Known violations to count (in `tolerated`) rather than fail on, while their fix is pending. */
  tolerate?: (res: RawResponse) => boolean;
}

export interface FuzzStats {
  routes: number;
  documented: number;
  requests: number;
  byStatus: Record<string, number>;
  ms: number;
  violations: string[];
  tolerated: string[];
}

/** Codes of error responses that, as Zulip documents, still carry out part of the request. */
const PARTIAL_SUCCESS_CODES = new Set(['INVITATION_FAILED']);

export async function seedFuzzData(s: TestServer): Promise<void> {
  const { owner, hamlet, othello } = s.cast;
  ok(await owner.client.post('/users/me/subscriptions', {
    subscriptions: [{ name: 'fuzz public' }, { name: 'fuzz other' }],
    principals: [owner.user.id, hamlet.user.id, othello.user.id, s.cast.guest.user.id, s.cast.bot.user.id],
  }));
  ok(await owner.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'fuzz private' }], invite_only: true, principals: [owner.user.id, othello.user.id] }));
  for (let i = 0; i < 4; i++) {
    ok(await hamlet.client.post('/messages', { type: 'stream', to: 'fuzz public', topic: `topic ${i % 2}`, content: `seed **${i}** @**King Hamlet**` }));
    ok(await owner.client.post('/messages', { type: 'private', to: [hamlet.user.id, othello.user.id], content: `dm ${i}` }));
  }
  ok(await owner.client.post('/messages', { type: 'stream', to: 'fuzz private', topic: 'secret', content: 'private seed' }));
  ok(await owner.client.post('/user_groups/create', { name: 'fuzzers', description: 'fuzz', members: [hamlet.user.id, othello.user.id] }));
  // The rest is best effort: these pools only make valid-shaped values likelier.
  await hamlet.client.post('/drafts', { drafts: [{ type: 'stream', to: [1], topic: 'draft', content: 'draft', timestamp: 1700000000 }] });
  await hamlet.client.post('/saved_snippets', { title: 'snippet', content: 'snippet body' });
  await owner.client.post('/realm/playgrounds', { name: 'Python', highlighter_language: 'python', url_template: 'https://python.example/?c={code}' });
  await owner.client.post('/realm/domains', { domain: 'example.org', allow_subdomains: false });
  await owner.client.post('/realm/profile_fields', { name: 'Phone', field_type: 1, hint: '' });
  await hamlet.client.post('/navigation_views', { fragment: 'narrow/channel/1-fuzz', is_pinned: true, name: 'Fuzz view' });
}

async function loadPools(s: TestServer, queueIds: string[]): Promise<Pools> {
  const k = s.app.services.db.kysely;
  const realmId = s.realm.id;
  const users = await k.selectFrom('users').select(['id', 'email']).where('realm_id', '=', realmId).execute();
  const streams = await k.selectFrom('streams').select(['id', 'name']).where('realm_id', '=', realmId).execute();
  const messages = await k.selectFrom('messages').select(['id', 'topic']).where('realm_id', '=', realmId).orderBy('id', 'desc').limit(50).execute();
  const ids = async (table: 'user_groups' | 'realm_playgrounds' | 'custom_profile_fields'): Promise<number[]> =>
    (await k.selectFrom(table).select('id').where('realm_id', '=', realmId).execute()).map((r) => r.id);
  const userIds = users.map((u) => u.id);
  return {
    userIds,
    streamIds: streams.map((x) => x.id),
    messageIds: messages.map((m) => m.id),
    groupIds: await ids('user_groups'),
    draftIds: (await k.selectFrom('drafts').select('id').where('user_id', 'in', userIds).execute()).map((r) => r.id),
    snippetIds: (await k.selectFrom('saved_snippets').select('id').where('user_id', 'in', userIds).execute()).map((r) => r.id),
    playgroundIds: await ids('realm_playgrounds'),
    fieldIds: await ids('custom_profile_fields'),
    emails: users.map((u) => u.email),
    streamNames: streams.map((x) => x.name),
    topics: [...new Set(messages.map((m) => m.topic))],
    domains: (await k.selectFrom('realm_domains').select('domain').where('realm_id', '=', realmId).execute()).map((r) => r.domain),
    fragments: (await k.selectFrom('navigation_views').select('fragment').where('user_id', 'in', userIds).execute()).map((r) => r.fragment),
    queueIds,
  };
}

const headerBytes = (b: Built): number =>
  b.path.length + Object.entries(b.headers).reduce((n, [k, v]) => n + k.length + v.length + 4, 0);

/** Drives every route; throws (with the seed and a reproducer) on the first broken invariant. */
export async function runFuzz(s: TestServer, opts: FuzzOptions): Promise<FuzzStats> {
  const started = Date.now();
  const log = opts.log ?? (() => undefined);
  const services = s.app.services;
  const routes = (await collectRoutes(services)).filter((r) => r.method !== 'OPTIONS');
  for (const r of routes) {
    for (const prefix of r.prefixes) {
      const url = prefix + r.path;
      assert.ok(s.app.fastify.hasRoute({ method: r.method as 'GET', url }), `collected route is not served: ${r.method} ${url}`);
    }
  }
  const sourceNames = sourceParamNames(join(process.cwd(), 'src/routes'));
  const defs = new Map<RouteInfo, RouteParams>(routes.map((r) => [r, routeParams(r, sourceNames)]));

  const castUsers: Record<Exclude<CallerName, 'anonymous'>, User> = {
    owner: s.cast.owner.user,
    member: s.cast.hamlet.user,
    guest: s.cast.guest.user,
    bot: s.cast.bot.user,
  };
  const original = new Map(Object.values(castUsers).map((u) => [u.id, { role: u.role, is_active: u.is_active }]));
  const creds = new Map<CallerName, Credentials>();
  const refreshCredentials = async (): Promise<boolean> => {
    let restored = false;
    for (const [name, u] of Object.entries(castUsers) as [Exclude<CallerName, 'anonymous'>, User][]) {
      let row = await services.db.kysely.selectFrom('users').selectAll().where('id', '=', u.id).executeTakeFirstOrThrow();
      const o = original.get(u.id)!;
      // A successful call may deactivate or demote a caller; put it back so later runs keep all roles.
      if (row.role !== o.role || row.is_active !== o.is_active) {
        await services.db.kysely.updateTable('users').set(o).where('id', '=', u.id).execute();
        row = { ...row, ...o };
        restored = true;
      }
      creds.set(name, { email: row.email, apiKey: row.api_key });
    }
    return restored;
  };
  await refreshCredentials();

  const queueIds: string[] = [];
  for (const c of [s.cast.owner, s.cast.hamlet, s.cast.guest]) {
    const res = await c.client.post('/register', { event_types: ['message'] });
    if (res.status === 200) queueIds.push(res.body.queue_id);
  }
  let pools = await loadPools(s, queueIds);
  let baseline: Snapshot = await snapshotDb(services);
  let baselineStale = false;
  const stats: FuzzStats = { routes: routes.length, documented: 0, requests: 0, byStatus: {}, ms: 0, violations: [], tolerated: [] };
  const bodyLimit = s.config.bodyLimitBytes;

  const fail = (message: string): void => {
    if (!opts.keepGoing) throw new Error(message);
    stats.violations.push(message);
    log(message);
  };

  /** Sends one request and checks every invariant; returns a violation or null. */
  const check = async (route: RouteInfo, r: FuzzRequest): Promise<string | null> => {
    const built = buildRequest(r, pools, r.caller === 'anonymous' ? null : creds.get(r.caller)!, bodyLimit);
    // Reads are not snapshotted (the snapshot is most of a request's cost) unless checkReads;
    // a successful read may still write (lazy state), so the baseline is retaken before the next write.
    const reads = (built.method === 'GET' || built.method === 'HEAD') && !opts.checkReads;
    if (!reads && baselineStale) {
      baseline = await snapshotDb(services);
      baselineStale = false;
    }
    const where = `route ${route.method} ${route.path}, caller ${r.caller}\n${describeRequest(built)}`;
    let res;
    try {
      res = await sendRaw(s.url, built);
    } catch (e) {
      // Node closes the connection on headers beyond its 16 KiB limit, sometimes before the
      // client has finished writing or can read the 431 (a HEAD, say). The next request
      // shows whether the server is still up.
      if (headerBytes(built) > 16 * 1024) {
        stats.byStatus.reset = (stats.byStatus.reset ?? 0) + 1;
        return null;
      }
      return `request failed (${String(e)}); ${where}`;
    }
    stats.requests++;
    stats.byStatus[res.status] = (stats.byStatus[res.status] ?? 0) + 1;
    const violation = responseViolation(built.method, res, r.prefix !== '');
    if (violation && opts.tolerate?.(res)) {
      stats.tolerated.push(`${violation.split('\n')[0]} (${route.method} ${route.path})`);
    } else if (violation) {
      return `${violation}\n${where}`;
    }
    if (reads) {
      if (res.status < 300) baselineStale = true;
      return null;
    }
    const after = await snapshotDb(services);
    const code = typeof res.body === 'object' && res.body ? (res.body as { code?: string }).code : undefined;
    if (res.status >= 300 && !PARTIAL_SUCCESS_CODES.has(code ?? '')) {
      const diff = diffSnapshots(baseline, after);
      baseline = after;
      return diff.length ? `a failed request (${res.status} ${code}) changed data:\n${diff.join('\n')}\n${where}` : null;
    }
    baseline = (await refreshCredentials()) ? await snapshotDb(services) : after;
    pools = await loadPools(s, queueIds);
    return null;
  };

  for (const [index, route] of routes.entries()) {
    if (opts.budgetMs !== undefined && Date.now() - started > opts.budgetMs) {
      log(`fuzz: time budget reached after ${index} of ${routes.length} routes`);
      break;
    }
    const rp = defs.get(route)!;
    if (rp.operation) stats.documented++;
    const seed = (opts.seed + index * 7919) | 0;
    for (const r of sweepRequests(route, rp, seed, opts.sweep ?? SWEEP_STRINGS)) {
      const v = await check(route, r);
      if (v) fail(`hostile string sweep (FUZZ_SEED=${opts.seed}): ${v}`);
    }
    const property = fc.asyncProperty(requestFor(route, rp), async (r) => {
      const v = await check(route, r);
      if (v && !opts.keepGoing) throw new Error(v);
      if (v) fail(v);
    });
    // fc.check rather than fc.assert: fast-check's own report would print whole (huge) requests.
    const details = await fc.check(property, { seed, numRuns: opts.runsPerRoute, endOnFailure: true });
    if (details.failed) {
      const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
      throw new Error(`fuzz invariant broken (FUZZ_SEED=${opts.seed}; fast-check seed ${seed}, run ${details.numRuns}):\n${cause}`);
    }
  }
  const alive = await s.anonymous.get('/server_settings');
  assert.equal(alive.status, 200, 'the server stopped answering');
  stats.ms = Date.now() - started;
  return stats;
}
