// What the build was made from: a digest of every build input's path, size and modification
// time, recorded beside the output. `npm start` rebuilds only when it changed, and the CLI
// runs the TypeScript sources instead of a build that no longer matches them.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Folders and files whose change needs a new build, relative to the project root. */
const INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];
const STAMP = join('dist', '.build-inputs');

function walk(root, rel, out) {
  const abs = join(root, rel);
  if (!existsSync(abs)) return;
  const st = statSync(abs);
  if (st.isDirectory()) {
    for (const name of readdirSync(abs).sort()) walk(root, join(rel, name), out);
  } else {
    out.push(`${rel}\t${st.size}\t${st.mtimeMs}`);
  }
}

export function inputsDigest(root) {
  const lines = [];
  for (const input of INPUTS) walk(root, input, lines);
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}

/** Whether dist/ was built from the sources as they are now. */
export function isBuildCurrent(root) {
  const stamp = join(root, STAMP);
  return existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === inputsDigest(root);
}

export function recordBuild(root, digest) {
  writeFileSync(join(root, STAMP), `${digest}\n`);
}
