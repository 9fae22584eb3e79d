/**
 * Summarizes a V8 CPU profile (from `npm run bench -- --cpu-prof`): the functions with the
 * most self time, and the source files and packages with the most total self time.
 *
 *   node --import tsx bench/profile.ts bench/results/profiles/send/<file>.cpuprofile [--top 40]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--'));
if (!file) throw new Error('usage: bench/profile.ts <file.cpuprofile> [--top N] [--inclusive name]');
const topIndex = args.indexOf('--top');
const top = topIndex >= 0 ? Number(args[topIndex + 1]) : 40;

const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const self = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!;
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);

function where(n: Node): string {
  const url = n.callFrame.url.replace(/^file:\/\//, '');
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return `pkg:${m[1]}`;
  const src = /\/(src\/.*|bench\/.*)$/.exec(url);
  if (src) return src[1]!;
  return url || '(native)';
}

function label(n: Node): string {
  return `${n.callFrame.functionName || '(anonymous)'} ${where(n)}:${n.callFrame.lineNumber + 1}`;
}

const fnSelf = new Map<string, number>();
const fileSelf = new Map<string, number>();
for (const [id, t] of self) {
  const n = byId.get(id)!;
  fnSelf.set(label(n), (fnSelf.get(label(n)) ?? 0) + t);
  fileSelf.set(where(n), (fileSelf.get(where(n)) ?? 0) + t);
}

// Inclusive time per function label, counting a recursive frame once per sample.
const inclusive = new Map<string, number>();
for (const [id, t] of self) {
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    if (seen.has(l)) continue;
    seen.add(l);
    inclusive.set(l, (inclusive.get(l) ?? 0) + t);
  }
}

const pct = (t: number): string => `${((t / total) * 100).toFixed(1).padStart(5)}%`;
const print = (title: string, m: Map<string, number>): void => {
  process.stdout.write(`\n${title}\n`);
  for (const [k, t] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${pct(t)}  ${k}\n`);
};
process.stdout.write(`${file}: ${(total / 1000).toFixed(0)} ms sampled\n`);
print('self time by function', fnSelf);
print('self time by file or package', fileSelf);
print('inclusive time by function', inclusive);
