import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate } from '../../src/lib/gate.js';

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('Gate: at most `limit` run at once, the rest in arrival order; a failure frees its slot', async () => {
  const gate = new Gate(2);
  const started: number[] = [];
  const release = new Map<number, () => void>();
  let running = 0;
  let most = 0;
  const job = (i: number, fail = false) =>
    gate.run(async () => {
      started.push(i);
      most = Math.max(most, ++running);
      await new Promise<void>((resolve) => release.set(i, resolve));
      running--;
      if (fail) throw new Error(`job ${i}`);
      return i;
    });
  const results = [job(0), job(1, true), job(2), job(3), job(4)];
  await tick();
  assert.deepEqual(started, [0, 1]);
  assert.equal(gate.queued, 3);
  release.get(1)!();
  await assert.rejects(results[1]!, /job 1/);
  await tick();
  assert.deepEqual(started, [0, 1, 2]);
  // A newcomer waits behind those already queued.
  results.push(job(5));
  release.get(0)!();
  await tick();
  assert.deepEqual(started, [0, 1, 2, 3]);
  for (const i of [2, 3, 4, 5]) {
    await tick();
    release.get(i)!();
  }
  assert.deepEqual(await Promise.all([results[0], results[2], results[3], results[4], results[5]]), [0, 2, 3, 4, 5]);
  assert.equal(most, 2);
  assert.equal(gate.queued, 0);
});
