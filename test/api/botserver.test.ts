import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, connect, type AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { forEachDatabase } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';

type Dict = Record<string, any>;

/**
 * The real zulip_botserver (python-zulip-api) running a bot against Parley. It needs Python 3
 * with Flask, requests, distro, typing_extensions and importlib_metadata: on Debian,
 * `apt-get install python3-flask python3-requests python3-distro python3-typing-extensions
 * python3-importlib-metadata` (.ci/run does this).
 */
const API_DIR = process.env.ZULIP_PYTHON_API_DIR ?? resolve(process.cwd(), '../shared/clients/python-zulip-api');
const PYTHONPATH = ['zulip', 'zulip_bots', 'zulip_botserver'].map((d) => join(API_DIR, d)).join(':');

function findPython(): { python: string } | { skip: string } {
  if (!existsSync(join(API_DIR, 'zulip_botserver'))) return { skip: `python-zulip-api not found at ${API_DIR} (set ZULIP_PYTHON_API_DIR)` };
  const probe = 'import flask, requests, distro, typing_extensions, importlib_metadata, zulip_botserver.server, zulip_bots.bots.helloworld.helloworld';
  const tried: string[] = [];
  for (const python of ['/usr/bin/python3', 'python3']) {
    const r = spawnSync(python, ['-c', probe], { env: { ...process.env, PYTHONPATH }, encoding: 'utf8' });
    if (r.status === 0) return { python };
    tried.push(`${python}: ${(r.stderr || String(r.error)).trim().split('\n').pop()}`);
  }
  return {
    skip: `zulip_botserver's Python dependencies are missing (apt-get install python3-flask python3-requests python3-distro python3-typing-extensions python3-importlib-metadata): ${tried.join('; ')}`,
  };
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

async function waitForPort(port: number, child: ChildProcess, log: () => string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) assert.fail(`zulip_botserver exited (${child.exitCode}):\n${log()}`);
    const up = await new Promise<boolean>((res) => {
      const sock = connect(port, '127.0.0.1', () => {
        sock.end();
        res(true);
      });
      sock.on('error', () => res(false));
    });
    if (up) return;
    if (Date.now() > until) assert.fail(`zulip_botserver did not listen on ${port}:\n${log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const found = findPython();

forEachDatabase('zulip_botserver', (server) => {
  test('the helloworld bot, served by the real zulip_botserver, answers a mention in the channel', { skip: 'skip' in found ? found.skip : false }, async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const port = await freePort();
    const created = ok(await hamlet.client.post('/bots', { full_name: 'Hello World', short_name: 'helloworld', bot_type: 3, payload_url: JSON.stringify(`http://127.0.0.1:${port}/`) }));
    const token = (ok(await hamlet.client.post('/register', { fetch_event_types: ['realm_bot'] })).realm_bots as Dict[]).find((b) => b.user_id === created.user_id)!.services[0].token;
    const dir = mkdtempSync(join(tmpdir(), 'parley-botserver-'));
    const rc = join(dir, 'botserverrc');
    writeFileSync(rc, `[helloworld]\nemail=helloworld-bot@localhost\nkey=${created.api_key}\nsite=${s.url}\ntoken=${token}\n`);
    let output = '';
    const child = spawn((found as { python: string }).python, ['-m', 'zulip_botserver.server', '--config-file', rc, '--hostname', '127.0.0.1', '--port', String(port)], {
      env: { ...process.env, PYTHONPATH },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    try {
      await waitForPort(port, child, () => output);
      ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'botserver' }] }));
      ok(await hamlet.client.post('/messages', { type: 'stream', to: 'botserver', topic: 'hello', content: '@**Hello World** hi there' }));
      const narrow = JSON.stringify([{ operator: 'channel', operand: 'botserver' }, { operator: 'topic', operand: 'hello' }]);
      const until = Date.now() + 20_000;
      let reply: Dict | undefined;
      while (!reply) {
        const messages = ok(await othello.client.get('/messages', { anchor: 'newest', num_before: 10, num_after: 0, apply_markdown: false, narrow })).messages as Dict[];
        reply = messages.find((m) => m.sender_id === created.user_id);
        if (!reply && Date.now() > until) assert.fail(`no reply from the bot; botserver output:\n${output}`);
        if (!reply) await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(reply.content, 'beep boop');
      assert.equal(reply.subject, 'hello');
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
