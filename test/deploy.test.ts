import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ANALYZE = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((p) => existsSync(p));

function verify(unit: string): Promise<{ code: number; stderr: string }> {
  return new Promise((done) => {
    execFile(ANALYZE!, ['verify', unit], { timeout: 30_000 }, (error, _stdout, stderr) =>
      done({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stderr }),
    );
  });
}

test('deploy/parley.service passes systemd-analyze verify', { skip: ANALYZE ? false : 'systemd-analyze is not installed' }, async () => {
  const unit = readFileSync('deploy/parley.service', 'utf8');
  assert.match(unit, /^ExecStart=\/usr\/bin\/node \/opt\/parley\/dist\/server\.js$/m);
  // Checked as installed here: this checkout for /opt/parley, this node for /usr/bin/node, so
  // the verifier also proves the command it would start exists.
  const dir = mkdtempSync(join(tmpdir(), 'parley-unit-'));
  try {
    const local = join(dir, 'parley.service');
    writeFileSync(local, unit.replaceAll('/usr/bin/node', process.execPath).replaceAll('/opt/parley', resolve('.')));
    const good = await verify(local);
    assert.equal(good.code, 0, good.stderr);
    assert.equal(good.stderr.trim(), '');
    assert.ok(existsSync(resolve('dist/server.js')), 'npm run build makes dist/server.js');

    const broken = join(dir, 'broken.service');
    writeFileSync(broken, unit.replaceAll('/usr/bin/node', join(dir, 'no-such-node')));
    const bad = await verify(broken);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /is not executable/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
