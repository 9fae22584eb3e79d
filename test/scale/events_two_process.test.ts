import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../helpers/client.js';
import { ok } from '../helpers/assert.js';
import { TestQueue, registerQueue } from '../helpers/events.js';
import { freshDatabaseUrl, OWNER_EMAIL, PASSWORD } from '../helpers/server.js';

/**
 * Scale-out: two real server processes (`node --import tsx src/server.ts`) sharing one
 * PostgreSQL database and one Redis behave as one server. A queue registered through one
 * process is served by the other, messages sent through either reach it, and it survives a
 * graceful restart of either process.
 */

const redisUrl = process.env.TEST_REDIS_URL;
const postgresUrl = process.env.TEST_POSTGRES_URL;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

class ServerProcess {
  private child: ChildProcess | null = null;
  private output = '';

  constructor(
    readonly name: string,
    readonly port: number,
    private readonly env: Record<string, string>,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const dataDir = mkdtempSync(join(tmpdir(), `parley-${this.name}-`));
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: { ...this.env, PORT: String(this.port), PARLEY_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} did not start:\n${this.output}`)), 60_000);
      const onData = (chunk: Buffer): void => {
        this.output += chunk.toString();
        if (this.output.includes('Parley is serving on')) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', (c: Buffer) => (this.output += c.toString()));
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited with ${code}:\n${this.output}`));
      });
    });
    child.removeAllListeners('exit');
  }

  /** A graceful stop (SIGTERM), as a deployment restarting the process does. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    this.child = null;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    const code = await exited;
    assert.equal(code, 0, `${this.name} did not shut down cleanly:\n${this.output}`);
  }

  kill(): void {
    this.child?.kill('SIGKILL');
    this.child = null;
  }
}

const describeOrSkip = redisUrl && postgresUrl ? describe : describe.skip;
if (!redisUrl || !postgresUrl) {
  test('two server processes share queues through Redis', { skip: 'TEST_REDIS_URL and TEST_POSTGRES_URL are needed' }, () => undefined);
}

describeOrSkip('two server processes sharing PostgreSQL and Redis', () => {
  let a: ServerProcess;
  let b: ServerProcess;
  let drop: () => Promise<void> = async () => undefined;
  let userId = 0;
  let apiKey = '';
  const clientOf = (p: ServerProcess): ApiClient => new ApiClient(p.url, OWNER_EMAIL, apiKey);
  const sendDm = async (via: ServerProcess, content: string): Promise<number> =>
    ok(await clientOf(via).post('/messages', { type: 'direct', to: [userId], content })).id;

  before(async () => {
    const db = await freshDatabaseUrl('postgres');
    drop = db.drop;
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      PARLEY_ENV_FILE: '/nonexistent',
      DATABASE_URL: db.url,
      REDIS_URL: redisUrl!,
      PARLEY_REDIS_PREFIX: `parley-2p-${process.pid}-${Date.now()}:`,
      HOST: '127.0.0.1',
      PARLEY_OWNER_EMAIL: OWNER_EMAIL,
      PARLEY_OWNER_PASSWORD: PASSWORD,
      PARLEY_HEARTBEAT_SECONDS: '5',
      PARLEY_RATE_LIMITS: 'off',
      LOG_LEVEL: 'warn',
    };
    a = new ServerProcess('A', await freePort(), env);
    b = new ServerProcess('B', await freePort(), env);
    // One after the other: the first start creates the schema and the organization.
    await a.start();
    await b.start();
    const login = ok(await new ApiClient(a.url, null, null).post('/fetch_api_key', { username: OWNER_EMAIL, password: PASSWORD }));
    apiKey = login.api_key;
    userId = login.user_id;
  });

  after(async () => {
    a?.kill();
    b?.kill();
    await drop();
  });

  test('a queue registered on A is served by B, with messages sent through either', async () => {
    const q = await registerQueue(clientOf(a), { event_types: ['message'] });
    const viaB = new TestQueue(clientOf(b), q.queueId, q.lastEventId, q.state);
    // B holds the poll (forwarded to A, which owns the queue) until the message arrives.
    const polling = viaB.next('message', 10_000);
    await new Promise((r) => setTimeout(r, 300));
    const first = await sendDm(b, 'sent through B');
    const e1 = await polling;
    assert.equal(e1.message.id, first);
    assert.equal(e1.message.content, 'sent through B');
    const second = await sendDm(a, 'sent through A');
    const e2 = await viaB.next('message', 10_000);
    assert.equal(e2.message.id, second);
    assert.equal(e2.id, e1.id + 1);
    // Both processes see the same queue state: A answers with what B acknowledged.
    q.lastEventId = viaB.lastEventId;
    assert.deepEqual(await q.poll({ dontBlock: true }), []);
  });

  test('queues survive a restart of either process', async () => {
    const qa = await registerQueue(clientOf(a), { event_types: ['message'] });
    const qb = await registerQueue(clientOf(b), { event_types: ['message'] });

    await a.stop();
    // A handed its queues over: B serves A's queue and delivers what is sent meanwhile.
    const whileADown = await sendDm(b, 'while A is down');
    const viaB = new TestQueue(clientOf(b), qa.queueId, qa.lastEventId, qa.state);
    assert.equal((await viaB.next('message', 10_000)).message.id, whileADown);
    await a.start();

    await b.stop();
    const whileBDown = await sendDm(a, 'while B is down');
    const viaA = new TestQueue(clientOf(a), qb.queueId, qb.lastEventId, qb.state);
    const got = await viaA.next((e) => e.type === 'message' && e.message.id === whileBDown, 10_000);
    assert.equal(got.message.content, 'while B is down');
    // B's queue also kept the message sent while A was down, before it.
    assert.deepEqual((await viaA.collect(0)).map((e) => e.message.id), [whileADown]);
    await b.start();

    // A's queue moved to B, then back to A while B restarted: nothing was lost on the way.
    const later = await sendDm(b, 'after both restarts');
    const rest = new TestQueue(clientOf(b), qa.queueId, viaB.lastEventId, qa.state);
    await rest.next((e) => e.type === 'message' && e.message.id === later, 10_000);
    assert.deepEqual((await rest.collect(0)).map((e) => e.message.id), [whileBDown]);
    await a.stop();
    await b.stop();
  });
});
