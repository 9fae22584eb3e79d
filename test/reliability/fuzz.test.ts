import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { loadConfig } from '../../src/config.js';
import { runFuzz, seedFuzzData } from '../helpers/fuzz_run.js';
import { diffSnapshots, snapshotDb, SWEEP_STRINGS } from '../helpers/fuzz.js';

/**
 * Bounded fuzzing of every route the server serves (npm run fuzz runs the same for longer).
 * FUZZ_SEED reproduces a run; the seed is printed and named in every failure.
 */
const seed = Number(process.env.FUZZ_SEED ?? 20240607);
const runsPerRoute = Number(process.env.FUZZ_RUNS_PER_ROUTE ?? 3);
const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent' });

forEachDatabase(
  'fuzz',
  (server) => {
    test('the database snapshot notices a changed row', async () => {
      const s = server();
      const k = s.app.services.db.kysely;
      const before = await snapshotDb(s.app.services);
      await k.updateTable('users').set({ full_name: 'Changed behind the API' }).where('id', '=', s.cast.othello.user.id).execute();
      const diff = diffSnapshots(before, await snapshotDb(s.app.services));
      await k.updateTable('users').set({ full_name: s.cast.othello.user.full_name }).where('id', '=', s.cast.othello.user.id).execute();
      assert.equal(diff.length, 1);
      assert.match(diff[0]!, /^users: -1 \+1 /);
    });

    test(`every route, ${runsPerRoute} generated requests each plus a hostile-string sweep (seed ${seed}): no 5xx, Zulip errors, failed requests change nothing`, async () => {
      const s = server();
      await seedFuzzData(s);
      const stats = await runFuzz(s, { seed, runsPerRoute, sweep: SWEEP_STRINGS.slice(0, 2), log: (l) => console.log(l) });
      console.log(`# fuzz [${s.kind}]: ${stats.requests} requests over ${stats.routes} routes (${stats.documented} with zulip.yaml parameters) in ${stats.ms} ms; statuses ${JSON.stringify(stats.byStatus)}`);
      assert.ok(stats.requests >= stats.routes * runsPerRoute);
    });

  },
  // A small body limit makes the oversized-body cases cheap; a short heartbeat keeps long-polls short.
  { bodyLimitBytes: 64 * 1024, events: { ...base.events, heartbeatSeconds: 1 } },
);
