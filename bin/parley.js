#!/usr/bin/env node
// `npx parley <command>`: the admin CLI, with the same configuration as the server.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'dist', 'cli', 'index.js');
if (existsSync(built)) {
  await import(pathToFileURL(built).href);
} else {
  // A checkout that was never built: run the TypeScript source through tsx.
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, 'src', 'cli', 'index.ts')).href);
}
