#!/usr/bin/env node
// `npx parley <command>`: the admin CLI, with the same configuration as the server.
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isBuildCurrent } from '../scripts/build_state.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (isBuildCurrent(root)) {
  await import(pathToFileURL(join(root, 'dist', 'cli', 'index.js')).href);
} else {
  // Never built, or built from other sources: run the TypeScript source through tsx.
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, 'src', 'cli', 'index.ts')).href);
}
