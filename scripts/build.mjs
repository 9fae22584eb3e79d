#!/usr/bin/env node
// Builds the server (TypeScript -> dist/). `--if-stale` does nothing when dist/ was built from
// the sources as they are (scripts/build_state.mjs), so that `npm start` answers in about a
// second instead of recompiling every time.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { inputsDigest, isBuildCurrent, recordBuild } from './build_state.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (process.argv.includes('--if-stale') && isBuildCurrent(root)) process.exit(0);

// Taken before compiling: a source edited during the build leaves the build stale.
const digest = inputsDigest(root);
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit', cwd: root });
if (r.status !== 0) process.exit(r.status ?? 1);
recordBuild(root, digest);
