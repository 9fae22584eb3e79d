import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../bench/lib/util.js';


function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection({ port, host: '127.0.0.1' });
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

// The README's `npm start`, as a process manager runs it: the first start tells the owner how
// to log in after the server's own log lines, and SIGTERM to npm (what systemd, Docker and
// `kill` send) stops the server gracefully instead of leaving it running without npm.
test('npm start: first-start instructions, then SIGTERM to npm stops the server', { timeout: 240_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-start-'));
  const port = await freePort();
  const child = spawn(npm, ['start', '--silent'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PARLEY_ENV_FILE: '/nonexistent', PARLEY_DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const deadline = Date.now() + 200_000;
    while (!/API key: {3}npx parley api-key --email \S+/.test(out)) {
      assert.ok(Date.now() < deadline, `the server did not start:\n${out}`);
      assert.equal(child.exitCode, null, `npm start exited:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const lines = out.trimEnd().split('\n');
    const serving = lines.findIndex((l) => l.startsWith('Parley is serving on'));
    assert.ok(serving >= 0, out);
    // The instructions come after every JSON log line, and name an email that logs in.
    assert.ok(lines.slice(serving).every((l) => !l.startsWith('{')), out);
    const email = /email: {5}(\S+)/.exec(out)![1]!;
    const password = /password: {2}(\S+)/.exec(out)![1]!;
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/fetch_api_key`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username: email, password }),
    });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { email: string }).email, email);

    child.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 15_000))]);
    assert.notEqual(code, 'timeout', 'npm did not exit after SIGTERM');
    assert.equal(await listening(port), false, 'the server is still listening after npm exited');
  } finally {
    child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});
