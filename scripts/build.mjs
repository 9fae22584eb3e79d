#!/usr/bin/env node
// Builds the server (TypeScript -> dist/) and the web app (Vite -> web/dist/). `--if-stale`
// skips each one that was built from the sources as they are (scripts/build_state.mjs), so that
// `npm start` answers in about a second instead of recompiling every time.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { inputsDigest, isBuildCurrent, recordBuild } from './build_state.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const ifStale = process.argv.includes('--if-stale');
const require = createRequire(import.meta.url);

const builds = {
  server: [require.resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')],
  web: [join(dirname(require.resolve('vite/package.json')), 'bin', 'vite.js'), 'build', '--config', join(root, 'web', 'vite.config.ts'), '--logLevel', 'warn'],
};
for (const [name, args] of Object.entries(builds)) {
  if (ifStale && isBuildCurrent(root, name)) continue;
  // Taken before building: a source edited during the build leaves the build stale.
  const digest = inputsDigest(root, name);
  const r = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root });
  if (r.status !== 0) process.exit(r.status ?? 1);
  recordBuild(root, digest, name);
}
