#!/usr/bin/env node
// Builds the server (TypeScript -> dist/) and the web app (Vite -> web/dist/). `--if-stale`
// skips each one that was built from the sources as they are (scripts/build_state.mjs), so that
// `npm start` answers in about a second instead of recompiling every time. Naming builds
// (`server`, `web`) builds only those.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { inputsDigest, isBuildCurrent, recordBuild } from './build_state.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const ifStale = process.argv.includes('--if-stale');
const named = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const require = createRequire(import.meta.url);

const builds = {
  server: [require.resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')],
  web: [join(dirname(require.resolve('vite/package.json')), 'bin', 'vite.js'), 'build', '--config', join(root, 'web', 'vite.config.ts'), '--logLevel', 'warn'],
};
for (const name of named) if (!(name in builds)) throw new Error(`unknown build ${name}: server or web`);

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
};

/**
 * Runs `f` while no other build of `name` runs. The browser test files each ask for the web
 * app when they start, several at once: Vite empties web/dist before writing it, so a second
 * build would take the files away from under a server already serving them (a page whose
 * script is missing never shows its form). Waiting here, the others find the build current.
 */
function locked(name, f) {
  const lock = join(root, `.build-${name}.lock`);
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      const holder = Number(readFileSync(lock, 'utf8').trim() || 0);
      if (holder && !alive(holder)) rmSync(lock, { force: true });
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    return f();
  } finally {
    rmSync(lock, { force: true });
  }
}

for (const [name, args] of Object.entries(builds)) {
  if (named.length && !named.includes(name)) continue;
  if (ifStale && isBuildCurrent(root, name)) continue;
  const status = locked(name, () => {
    if (ifStale && isBuildCurrent(root, name)) return 0;
    // Taken before building: a source edited during the build leaves the build stale.
    const digest = inputsDigest(root, name);
    // A production build whoever asks: under the test runner NODE_ENV is "test", which made
    // Vite compile JSX for development (larger, with file names and line numbers).
    const r = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root, env: { ...process.env, NODE_ENV: 'production' } });
    if (r.status === 0) recordBuild(root, digest, name);
    return r.status ?? 1;
  });
  if (status !== 0) process.exit(status);
}
