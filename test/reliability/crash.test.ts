import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { testDatabases, PASSWORD, OWNER_EMAIL } from '../helpers/server.js';
import { ApiClient } from '../helpers/client.js';
import { ok } from '../helpers/assert.js';
import { openDatabase, type Database } from '../../src/db/index.js';
import { doCreateUser } from '../../src/actions/users.js';
import { fetchRealmByStringId } from '../../src/db/repos/realms.js';
import { ROLE_MEMBER } from '../../src/lib/roles.js';
import SQLite from 'better-sqlite3';
import { childDeployment, type ChildDeployment, type ChildServer } from './child_server.js';

/**
 * Crash safety of the real server process: SIGKILL in the middle of a burst of concurrent
 * sends loses nothing that was acknowledged and leaves nothing half-written; SIGTERM drains
 * in-flight requests, answers held long-polls and keeps the event queues for the next start.
 */
const SENDS = 1200;
const IN_FLIGHT = 50;
const KILL_AFTER_ANSWERS = 500;

interface Member {
  id: number;
  email: string;
  apiKey: string;
}

interface Send {
  index: number;
  sender: Member;
  content: string;
  kind: 'channel' | 'dm';
  id?: number;
  /** ms after the burst started when the answer arrived. */
  answeredAt?: number;
  error?: string;
  body?: unknown;
}

const client = (url: string, m: Member): ApiClient => new ApiClient(url, m.email, m.apiKey);

async function createCast(d: ChildDeployment): Promise<{ owner: Member; members: Member[] }> {
  return d.setup(async (app) => {
    const realm = (await fetchRealmByStringId(app.services.db.kysely, ''))!;
    const members: Member[] = [];
    for (let i = 0; i < 5; i++) {
      const u = await doCreateUser(app.services, realm, { email: `sender${i}@example.com`, fullName: `Sender ${i}`, password: PASSWORD, role: ROLE_MEMBER, actingUser: null });
      members.push({ id: u.id, email: u.email, apiKey: u.api_key });
    }
    const o = await app.services.db.kysely.selectFrom('users').select(['id', 'email', 'api_key']).where('email', '=', OWNER_EMAIL).executeTakeFirstOrThrow();
    return { owner: { id: o.id, email: o.email, apiKey: o.api_key }, members };
  });
}

/** Sends `sends` with at most `inFlight` outstanding; `onAnswer` runs after each answer. */
async function burst(url: string, sends: Send[], inFlight: number, dmParticipants: number[], onAnswer: (answered: number) => void): Promise<void> {
  const started = Date.now();
  let next = 0;
  let answered = 0;
  const worker = async (): Promise<void> => {
    while (next < sends.length) {
      const s = sends[next++]!;
      const params = s.kind === 'channel'
        ? { type: 'stream', to: 'burst', topic: `topic ${s.index % 7}`, content: s.content }
        : { type: 'direct', to: dmParticipants.filter((id) => id !== s.sender.id), content: s.content };
      try {
        const res = await client(url, s.sender).post('/messages', params);
        s.body = res.body;
        if (res.status === 200 && typeof res.body?.id === 'number') {
          s.id = res.body.id;
          s.answeredAt = Date.now() - started;
          onAnswer(++answered);
        } else {
          s.error = `HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`;
        }
      } catch (e) {
        s.error = String((e as Error).cause ?? e);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

/**
 * Every message row of the burst has exactly its recipients' user_messages rows, and every
 * acknowledged send exists exactly once with its content and sender.
 */
async function verifyDatabase(db: Database, sends: Send[], channelSubscribers: number[], dmParticipants: number[]): Promise<{ rows: number }> {
  const k = db.kysely;
  const rows = await k.selectFrom('messages').select(['id', 'content', 'sender_id', 'type']).where('content', 'like', 'burst %').execute();
  const byContent = new Map<string, typeof rows>();
  for (const r of rows) byContent.set(r.content, [...(byContent.get(r.content) ?? []), r]);
  for (const [content, list] of byContent) assert.equal(list.length, 1, `${content} stored ${list.length} times`);
  const ids = rows.map((r) => r.id);
  const recipients = new Map<number, number[]>();
  if (ids.length) {
    for (const um of await k.selectFrom('user_messages').select(['message_id', 'user_id']).where('message_id', 'in', ids).execute()) {
      recipients.set(um.message_id, [...(recipients.get(um.message_id) ?? []), um.user_id]);
    }
  }
  const sorted = (a: number[]): number[] => [...a].sort((x, y) => x - y);
  for (const r of rows) {
    const want = r.type === 'stream' ? channelSubscribers : dmParticipants;
    assert.deepEqual(sorted(recipients.get(r.id) ?? []), sorted(want), `message ${r.id} (${r.content}) has recipient rows for ${JSON.stringify(recipients.get(r.id))}`);
  }
  for (const s of sends) {
    if (s.id === undefined) continue;
    const row = byContent.get(s.content)?.[0];
    assert.ok(row, `acknowledged send ${s.index} (id ${s.id}) is missing`);
    assert.equal(row.id, s.id, `send ${s.index} was acknowledged as ${s.id} but stored as ${row.id}`);
    assert.equal(row.sender_id, s.sender.id);
  }
  return { rows: rows.length };
}

/** What a recipient sees over the API equals what the database holds. */
async function verifyApi(url: string, reader: Member, db: Database, dmParticipants: number[]): Promise<void> {
  const c = client(url, reader);
  const fetchAll = async (narrow: unknown[]): Promise<number[]> => {
    const body = ok(await c.get('/messages', { anchor: 'oldest', num_before: 0, num_after: 5000, narrow, apply_markdown: false }));
    return (body.messages as { id: number; content: string }[]).filter((m) => m.content.startsWith('burst ')).map((m) => m.id).sort((a, b) => a - b);
  };
  const inDb = async (type: string): Promise<number[]> =>
    (await db.kysely.selectFrom('messages').select('id').where('content', 'like', 'burst %').where('type', '=', type).orderBy('id').execute()).map((r) => r.id);
  assert.deepEqual(await fetchAll([{ operator: 'channel', operand: 'burst' }]), await inDb('stream'));
  assert.deepEqual(await fetchAll([{ operator: 'dm', operand: dmParticipants.filter((id) => id !== reader.id) }]), await inDb('private'));
  // The full-text index holds every stored message (on SQLite, also those still waiting to be indexed at the kill).
  assert.deepEqual(await fetchAll([{ operator: 'channel', operand: 'burst' }, { operator: 'search', operand: 'burst' }]), await inDb('stream'));
}

for (const kind of testDatabases()) {
  describe(`crash safety [${kind}]`, () => {
    let d: ChildDeployment;
    let cast: { owner: Member; members: Member[] };
    let server: ChildServer | null = null;
    let db: Database | null = null;
    let refusedDuringShutdown: Send[] = [];

    before(async () => {
      d = await childDeployment(kind);
      cast = await createCast(d);
    });
    after(async () => {
      if (server && server.process.exitCode === null && server.process.signalCode === null) {
        server.process.kill('SIGKILL');
        await server.exited;
      }
      await db?.close();
      await d.drop();
    });

    test(`SIGKILL during ${SENDS} concurrent sends (${IN_FLIGHT} in flight): every acknowledged send survives exactly once, nothing half-written`, async () => {
      server = await d.start();
      const { owner, members } = cast;
      const subscribers = [owner.id, ...members.map((m) => m.id)];
      ok(await client(server.url, owner).post('/users/me/subscriptions', { subscriptions: [{ name: 'burst' }], principals: subscribers }));
      const dmParticipants = [members[0]!.id, members[1]!.id, members[2]!.id];
      const sends: Send[] = Array.from({ length: SENDS }, (_, index) => {
        const kind = index % 3 === 2 ? 'dm' : 'channel';
        const sender = kind === 'dm' ? members[Math.floor(index / 3) % 3]! : members[index % members.length]!;
        return { index, sender, kind, content: `burst ${index} ${'x'.repeat((index % 50) + 1)}` } as Send;
      });
      const victim = server;
      let killedAt = -1;
      const started = Date.now();
      await burst(victim.url, sends, IN_FLIGHT, dmParticipants, (answered) => {
        if (answered === KILL_AFTER_ANSWERS) {
          killedAt = Date.now() - started;
          victim.process.kill('SIGKILL');
        }
      });
      assert.equal(await victim.exited, 'SIGKILL');
      const acknowledged = sends.filter((s) => s.id !== undefined);
      const afterKill = acknowledged.filter((s) => s.answeredAt! > killedAt).length;
      const failed = sends.filter((s) => s.error).length;
      assert.ok(acknowledged.length >= KILL_AFTER_ANSWERS && failed > 0, `acknowledged ${acknowledged.length}, failed ${failed}`);
      assert.ok(sends.every((s) => s.id !== undefined || !s.error?.startsWith('HTTP')), 'a send got an HTTP error instead of an id');

      // SQLite: messages whose user_messages rows or full-text entries were still staged
      // (db/receipts.ts, db/search_index.ts) when killed.
      const staged = kind === 'sqlite' ? stagedWork(d.databaseUrl) : { receipts: 0, searchEntries: 0 };
      server = await d.start();
      db = openDatabase(d.databaseUrl);
      const { rows } = await verifyDatabase(db, sends, subscribers, dmParticipants);
      await verifyApi(server.url, members[1]!, db, dmParticipants);
      ok(await client(server.url, members[0]!).post('/messages', { type: 'stream', to: 'burst', topic: 'after', content: 'alive after the crash' }));
      console.log(
        `# crash [${kind}]: ${SENDS} sends, SIGKILL at ${killedAt} ms after ${KILL_AFTER_ANSWERS} answers; ` +
          `${acknowledged.length} acknowledged (${afterKill} answered after the signal), ${failed} failed, ${rows} rows stored ` +
          `(${staged.receipts} messages' receipts and ${staged.searchEntries} messages' search entries were staged at the kill), all complete`,
      );
    });

    test('SIGTERM: in-flight sends complete, a held long-poll gets a clean answer, event queues survive the restart', async () => {
      if (server && server.process.exitCode === null && server.process.signalCode === null) {
        server.process.kill('SIGKILL');
        await server.exited;
      }
      server = await d.start();
      const { owner, members } = cast;
      const ownerClient = client(server.url, owner);
      ok(await ownerClient.post('/users/me/subscriptions', { subscriptions: [{ name: 'burst' }], principals: [owner.id, ...members.map((m) => m.id)] }));
      const queue = ok(await ownerClient.post('/register', { event_types: ['message'] }));
      // A queue nothing happens on: its GET /events is held until the shutdown releases it.
      const idle = ok(await ownerClient.post('/register', { event_types: ['realm_emoji'] }));
      const held = ownerClient.get('/events', { queue_id: idle.queue_id, last_event_id: idle.last_event_id });
      await new Promise((r) => setTimeout(r, 300));

      const sends: Send[] = Array.from({ length: 300 }, (_, index) => ({ index, sender: members[index % members.length]!, kind: 'channel', content: `burst term ${index}` }));
      const victim = server;
      let termAt = -1;
      const started = Date.now();
      await burst(victim.url, sends, 30, [], (answered) => {
        if (answered === 100) {
          termAt = Date.now() - started;
          victim.process.kill('SIGTERM');
        }
      });
      const heldRes = await held;
      assert.equal(heldRes.status, 200, JSON.stringify(heldRes.body));
      assert.equal(heldRes.body.result, 'success');
      assert.equal(await victim.exited, 0, victim.output());
      const acknowledged = sends.filter((s) => s.id !== undefined);
      const drained = acknowledged.filter((s) => s.answeredAt! > termAt).length;
      assert.ok(drained > 0, 'no request in flight at SIGTERM was answered');
      // Requests that arrive on open connections once the shutdown has begun are refused with 503.
      refusedDuringShutdown = sends.filter((s) => s.error?.startsWith('HTTP'));
      for (const s of refusedDuringShutdown) assert.match(s.error!, /^HTTP 503 /);

      server = await d.start();
      db ??= openDatabase(d.databaseUrl);
      const stored = new Set((await db.kysely.selectFrom('messages').select('id').where('content', 'like', 'burst term %').execute()).map((r) => r.id));
      for (const s of acknowledged) assert.ok(stored.has(s.id!), `acknowledged send ${s.index} (id ${s.id}) is missing after SIGTERM`);
      // The queue registered before the shutdown still exists and holds the events of every acknowledged send.
      const events = ok(await client(server.url, owner).get('/events', { queue_id: queue.queue_id, last_event_id: queue.last_event_id, dont_block: true })).events as { type: string; message?: { id: number } }[];
      const delivered = new Set(events.filter((e) => e.type === 'message').map((e) => e.message!.id));
      for (const s of acknowledged) assert.ok(delivered.has(s.id!), `the restored queue lacks the event of message ${s.id}`);
      console.log(`# sigterm [${kind}]: SIGTERM at ${termAt} ms after 100 answers; ${acknowledged.length} acknowledged (${drained} drained after the signal); queue restored with ${delivered.size} message events`);
      const total = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM messages`.execute(db.kysely);
      assert.ok(Number(total.rows[0]!.n) >= acknowledged.length);
    });

    test("requests refused during a shutdown get a Zulip JSON error (was Fastify's own 503 body)", () => {
      for (const s of refusedDuringShutdown) {
        const body = s.body as { result?: string; code?: unknown; msg?: unknown };
        assert.equal(body.result, 'error', JSON.stringify(body));
        assert.equal(typeof body.code, 'string');
        assert.equal(typeof body.msg, 'string');
      }
    });

    test('SIGTERM right after the server announces itself is a graceful shutdown (was: Node default exit by signal)', async () => {
      if (server && server.process.exitCode === null && server.process.signalCode === null) {
        server.process.kill('SIGKILL');
        await server.exited;
      }
      server = await d.start();
      server.process.kill('SIGTERM');
      assert.equal(await server.exited, 0, server.output());
    });
  });
}

function stagedWork(databaseUrl: string): { receipts: number; searchEntries: number } {
  const raw = new SQLite(databaseUrl.slice('sqlite:'.length), { readonly: true });
  const count = (table: string): number => raw.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get() as number;
  try {
    return { receipts: count('user_messages_pending'), searchEntries: count('messages_fts_pending') };
  } finally {
    raw.close();
  }
}
