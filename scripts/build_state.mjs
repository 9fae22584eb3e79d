// What the build was made from: a digest of every build input's path, size and modification
// time, recorded beside the output. `npm start` rebuilds only when it changed, and the CLI
// runs the TypeScript sources instead of a build that no longer matches them.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The two builds, each with the folders and files whose change needs it again (relative to the
 * project root) and where its stamp is kept: the server (tsc -> dist/) and the web app
 * (Vite -> web/dist/).
 */
const BUILDS = {
  server: { inputs: ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json'], stamp: join('dist', '.build-inputs') },
  web: { inputs: ['web/src', 'web/index.html', 'web/login.html', 'web/vite.config.ts', 'web/tsconfig.json', 'package.json'], stamp: join('web', 'dist', '.build-inputs') },
};

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

export function inputsDigest(root, build = 'server') {
  const lines = [];
  for (const input of BUILDS[build].inputs) walk(root, input, lines);
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}

/** Whether dist/ (or, for 'web', web/dist/) was built from the sources as they are now. */
export function isBuildCurrent(root, build = 'server') {
  const stamp = join(root, BUILDS[build].stamp);
  return existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === inputsDigest(root, build);
}

export function recordBuild(root, digest, build = 'server') {
  writeFileSync(join(root, BUILDS[build].stamp), `${digest}\n`);
}
