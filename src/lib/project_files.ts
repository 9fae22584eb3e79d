import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project's root folder: the nearest folder above this module holding Parley's
 * package.json. The server runs from src/ (tsx), dist/ (the build) and the benchmark's own
 * build under bench/results/, each at another depth, and reads static/ and web/dist/ beside it.
 */
function findProjectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'parley') return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`Parley's package.json was not found above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

export const PROJECT_ROOT = findProjectRoot();
