/**
 * Summarizes a V8 CPU profile (from `npm run bench -- --cpu-prof`): the functions with the
 * most self time, and the source files and packages with the most total self time.
 *
 *   node --import tsx bench/profile.ts bench/results/profiles/send/<file>.cpuprofile [--top 40] [--last SECONDS]
 *
 * --last counts only the final seconds of the profile (the load, not the start-up); --skip-last
 * then leaves out the final seconds of those (e.g. the send scenario's half-rate phase).
 * --stalls lists the longest stretches without an idle sample (event-loop stalls) and what ran in them.
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
const file = args.find((a, i) => !a.startsWith('--') && !['--top', '--last', '--skip-last'].includes(args[i - 1] ?? ''));
if (!file) throw new Error('usage: bench/profile.ts <file.cpuprofile> [--top N] [--inclusive name]');
const topIndex = args.indexOf('--top');
const top = topIndex >= 0 ? Number(args[topIndex + 1]) : 40;
const lastIndex = args.indexOf('--last');
const lastUs = lastIndex >= 0 ? Number(args[lastIndex + 1]) * 1e6 : Infinity;
const skipIndex = args.indexOf('--skip-last');
const skipUs = skipIndex >= 0 ? Number(args[skipIndex + 1]) * 1e6 : 0;

const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const self = new Map<number, number>();
let at = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i] ?? 0;
  if (profile.endTime - at > lastUs || profile.endTime - at < skipUs) continue;
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

if (args.includes('--stalls')) {
  // Busy stretches: consecutive samples none of which is the idle node.
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  const stretches: { start: number; end: number; first: number; last: number }[] = [];
  let t = profile.startTime;
  let cur: { start: number; end: number; first: number; last: number } | null = null;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (profile.endTime - t > lastUs) continue;
    if (idle.has(profile.samples[i]!)) {
      if (cur) stretches.push(cur);
      cur = null;
    } else if (cur) {
      cur.end = t;
      cur.last = i;
    } else cur = { start: t, end: t, first: i, last: i };
  }
  if (cur) stretches.push(cur);
  stretches.sort((a, b) => b.end - b.start - (a.end - a.start));
  for (const st of stretches.slice(0, Number(process.env.STALLS ?? 6))) {
    process.stdout.write(`\nbusy ${((st.end - st.start) / 1000).toFixed(1)} ms at ${((st.start - profile.startTime) / 1e6).toFixed(2)} s\n`);
    const incl = new Map<string, number>();
    for (let i = st.first; i <= st.last; i++) {
      const seen = new Set<string>();
      for (let c: number | undefined = profile.samples[i]!; c !== undefined; c = parent.get(c)) {
        const l = label(byId.get(c)!);
        if (seen.has(l)) continue;
        seen.add(l);
        incl.set(l, (incl.get(l) ?? 0) + (profile.timeDeltas[i] ?? 0));
      }
    }
    const span = st.end - st.start || 1;
    for (const [k, v] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, 25)) process.stdout.write(`  ${((v / span) * 100).toFixed(0).padStart(4)}%  ${k}\n`);
  }
}
