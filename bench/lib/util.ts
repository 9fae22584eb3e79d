import { createServer } from 'node:net';
import { cpus } from 'node:os';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Milliseconds on a clock shared by every process of the machine (sub-millisecond resolution). */
export const wallMs = (): number => performance.timeOrigin + performance.now();

export interface LatencySummary {
  count: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
}

/** p50/p99/mean/max of a list of milliseconds (nearest-rank percentiles). */
export function summarize(values: number[]): LatencySummary {
  if (values.length === 0) return { count: 0, p50: NaN, p99: NaN, mean: NaN, max: NaN };
  const sorted = Float64Array.from(values).sort();
  const at = (p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
  let sum = 0;
  for (const v of sorted) sum += v;
  return { count: sorted.length, p50: at(50), p99: at(99), mean: sum / sorted.length, max: sorted[sorted.length - 1]! };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export function basicAuth(email: string, apiKey: string): string {
  return `Basic ${Buffer.from(`${email}:${apiKey}`).toString('base64')}`;
}

/** Runs `fn` over `items` with at most `limit` calls in flight. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Busy and total CPU time of the whole machine so far, all cores together (ms). */
export function machineCpu(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const { times } of cpus()) {
    busy += times.user + times.nice + times.sys + times.irq;
    total += times.user + times.nice + times.sys + times.irq + times.idle;
  }
  return { busy, total };
}

/** How busy the machine's cores were between two `machineCpu` readings, in percent of all of them. */
export function machineBusyPercent(a: { busy: number; total: number }, b: { busy: number; total: number }): number {
  return b.total > a.total ? ((b.busy - a.busy) / (b.total - a.total)) * 100 : 0;
}
