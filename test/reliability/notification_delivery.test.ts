import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../helpers/client.js';
import { ok } from '../helpers/assert.js';
import { loopbackSmtp } from '../helpers/smtp.js';
import { OWNER_EMAIL, PASSWORD, testDatabases } from '../helpers/server.js';
import { doCreateUser } from '../../src/actions/users.js';
import { fetchRealmByStringId } from '../../src/db/repos/realms.js';
import { fetchUserByEmail, updateUserRow } from '../../src/db/repos/users.js';
import { ROLE_MEMBER } from '../../src/lib/roles.js';
import { childDeployment, type ChildDeployment, type ChildServer } from './child_server.js';

/**
 * The notification queue in real server processes: its state is the database, so messages sent
 * before a SIGKILL (queued but not yet worked out, or worked out but not yet due) are emailed
 * after the restart, each once; with two processes on PostgreSQL + Redis each message is emailed
 * once. Emails are read by a real SMTP server on loopback.
 */

const { url: SMTP_URL, inbox } = await loopbackSmtp();

interface Member {
  id: number;
  email: string;
  apiKey: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, timeoutMs: number, check: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The owner and `n` readers who are away and batch missed-message emails over `batching` seconds. */
async function cast(d: ChildDeployment, label: string, n: number, batching: number): Promise<{ owner: Member; readers: Member[] }> {
  return d.setup(async (app) => {
    const db = app.services.db.kysely;
    const realm = (await fetchRealmByStringId(db, ''))!;
    const readers: Member[] = [];
    for (let i = 0; i < n; i++) {
      const r = await doCreateUser(app.services, realm, { email: `reader${i}-${label}@example.com`, fullName: `Reader ${i}`, password: PASSWORD, role: ROLE_MEMBER, actingUser: null });
      await updateUserRow(db, r.id, { settings: JSON.stringify({ email_notifications_batching_period_seconds: batching }) });
      readers.push({ id: r.id, email: r.email, apiKey: r.api_key });
    }
    const o = (await fetchUserByEmail(db, realm.id, OWNER_EMAIL))!;
    return { owner: { id: o.id, email: o.email, apiKey: o.api_key }, readers };
  });
}

const client = (server: ChildServer, m: Member): ApiClient => new ApiClient(server.url, m.email, m.apiKey);

/** How many times each of `contents` appears in the emails to `email`. */
function deliveries(email: string, contents: readonly string[]): number[] {
  const texts = inbox.filter((m) => m.to === email).map((m) => m.mail.text ?? '');
  return contents.map((c) => texts.reduce((n, t) => n + t.split(`${c}\n`).length - 1, 0));
}

for (const kind of testDatabases()) {
  describe(`notification delivery across a SIGKILL [${kind}]`, () => {
    test('messages queued before a kill, and notifications not yet due at a kill, are emailed once after the restart', async () => {
      const d = await childDeployment(kind);
      const env = { SMTP_URL, PARLEY_NOTIFICATIONS_INTERVAL_MS: '200' };
      let server: ChildServer | undefined;
      try {
        const { owner, readers } = await cast(d, `kill-${kind}`, 1, 6);
        const reader = readers[0]!;
        const send = async (s: ChildServer, content: string) =>
          ok(await client(s, owner).post('/messages', { type: 'private', to: JSON.stringify([reader.id]), content }));
        // Queued while no worker runs: the jobs wait in the database.
        server = await d.start({ ...env, PARLEY_NOTIFICATIONS: 'off' });
        const queued = ['queued-0', 'queued-1', 'queued-2'];
        for (const c of queued) await send(server, c);
        server.process.kill('SIGKILL');
        await server.exited;

        // The worker works the jobs out at start and then more arrive; all of them are due in 6 s.
        server = await d.start(env);
        const pending = ['pending-0', 'pending-1'];
        for (const c of pending) await send(server, c);
        await sleep(1000);
        server.process.kill('SIGKILL');
        await server.exited;
        const all = [...queued, ...pending];
        assert.deepEqual(deliveries(reader.email, all), [0, 0, 0, 0, 0], 'nothing was due before the kill');

        server = await d.start(env);
        await waitFor('the missed-message email', 15_000, () => deliveries(reader.email, all).every((n) => n > 0));
        await sleep(2000);
        assert.deepEqual(deliveries(reader.email, all), [1, 1, 1, 1, 1]);
        assert.equal(inbox.filter((m) => m.to === reader.email).length, 1, 'one email gathering the batch');
      } finally {
        server?.process.kill('SIGTERM');
        await server?.exited;
        await d.drop();
      }
    });
  });
}

const scaledOut = process.env.TEST_POSTGRES_URL && process.env.TEST_REDIS_URL;

describe('notification delivery with two processes on PostgreSQL + Redis', () => {
  test(
    'each message is emailed exactly once',
    { skip: scaledOut ? false : 'needs TEST_POSTGRES_URL and TEST_REDIS_URL (two processes share PostgreSQL and Redis)' },
    async () => {
      const d = await childDeployment('postgres');
      const secondDataDir = mkdtempSync(join(tmpdir(), 'parley-child-b-'));
      const servers: ChildServer[] = [];
      try {
        const { owner, readers } = await cast(d, 'race', 5, 2);
        // Both workers look at the database every 100 ms, so they race for every row.
        const env = { SMTP_URL, REDIS_URL: process.env.TEST_REDIS_URL!, PARLEY_REDIS_PREFIX: `parley-notif-${process.pid}:`, PARLEY_NOTIFICATIONS_INTERVAL_MS: '100' };
        servers.push(await d.start(env), await d.start({ ...env, PARLEY_DATA_DIR: secondDataDir }));
        const [a, b] = servers as [ChildServer, ChildServer];
        // One reader is present through process A only: whichever process works a job out must
        // see that queue (through Redis) and send that reader no email.
        const present = readers.pop()!;
        ok(await client(a, present).post('/register', {}));
        ok(await client(a, present).post('/users/me/presence', { status: 'active' }));
        const contents = (r: Member) => Array.from({ length: 6 }, (_, i) => `race-${r.id}-${i}`);
        await Promise.all(
          [...readers, present].flatMap((r) =>
            contents(r).map((c, i) => client(i % 2 ? a : b, owner).post('/messages', { type: 'private', to: JSON.stringify([r.id]), content: c }).then(ok)),
          ),
        );
        for (const r of readers) await waitFor(`the emails to ${r.email}`, 20_000, () => deliveries(r.email, contents(r)).every((n) => n > 0));
        await sleep(2500);
        for (const r of readers) assert.deepEqual(deliveries(r.email, contents(r)), [1, 1, 1, 1, 1, 1], r.email);
        assert.deepEqual(deliveries(present.email, contents(present)), [0, 0, 0, 0, 0, 0], 'the present reader is not emailed');
      } finally {
        for (const s of servers) {
          s.process.kill('SIGTERM');
          await s.exited;
        }
        await d.drop();
        rmSync(secondDataDir, { recursive: true, force: true });
      }
    },
  );
});
