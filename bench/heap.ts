/**
 * What a heap snapshot holds, by constructor: count and retained-by-itself (self) size, the
 * largest first. Comparing a server holding N long-polls with the same server idle shows
 * what one held poll costs.
 *
 *   node --import tsx bench/heap.ts file.heapsnapshot [baseline.heapsnapshot] [--per N]
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

function summarize(file: string): Map<string, { count: number; size: number }> {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = s.snapshot.meta.node_fields;
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const types = s.snapshot.meta.node_types[0];
  const out = new Map<string, { count: number; size: number }>();
  for (let i = 0; i < s.nodes.length; i += width) {
    const type = types[s.nodes[i + typeAt]!]!;
    const name = type === 'object' || type === 'closure' ? `${type}:${s.strings[s.nodes[i + nameAt]!]}` : type;
    const e = out.get(name) ?? { count: 0, size: 0 };
    e.count++;
    e.size += s.nodes[i + sizeAt]!;
    out.set(name, e);
  }
  return out;
}

const args = process.argv.slice(2);
const perAt = args.indexOf('--per');
const per = perAt >= 0 ? Number(args.splice(perAt, 2)[1]) : 1;
const [file, baseFile] = args;
if (!file) throw new Error('usage: bench/heap.ts file.heapsnapshot [baseline.heapsnapshot] [--per N]');
const now = summarize(file);
const base = baseFile ? summarize(baseFile) : new Map<string, { count: number; size: number }>();
const rows = [...now].map(([k, v]) => {
  const b = base.get(k) ?? { count: 0, size: 0 };
  return { k, count: (v.count - b.count) / per, size: (v.size - b.size) / per };
});
rows.sort((a, b) => b.size - a.size);
let total = 0;
for (const r of rows) total += r.size;
process.stdout.write(`total ${total.toFixed(0)} bytes${per > 1 ? ' per item' : ''}\n`);
for (const r of rows.slice(0, 40)) process.stdout.write(`${r.size.toFixed(0).padStart(10)}  ${r.count.toFixed(2).padStart(8)}  ${r.k}\n`);
