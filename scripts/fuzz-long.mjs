#!/usr/bin/env node
// The long fuzz run (npm run fuzz): the same fuzzer as test/reliability/fuzz.test.ts, with many
// more requests per route, on SQLite and (when TEST_POSTGRES_URL is set) PostgreSQL. It keeps
// going after a violation and lists them all at the end; each one belongs in
// test/reliability/regressions.test.ts once fixed.
//
//   npm run fuzz -- [--runs N] [--seed S] [--minutes M]
import { register } from 'tsx/esm/api';

register();
const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : fallback;
};
const seed = opt('seed', Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31));
const runsPerRoute = opt('runs', 50);
const minutes = opt('minutes', 30);

const { startServer, testDatabases } = await import('../test/helpers/server.ts');
const { runFuzz, seedFuzzData } = await import('../test/helpers/fuzz_run.ts');
const { loadConfig } = await import('../src/config.ts');

const base = loadConfig({}, { PATH: process.env.PATH, PARLEY_ENV_FILE: '/nonexistent' });
let failed = 0;
for (const kind of testDatabases()) {
  console.log(`fuzz [${kind}]: seed ${seed}, ${runsPerRoute} requests per route, at most ${minutes} minutes`);
  const server = await startServer(kind, { bodyLimitBytes: 64 * 1024, events: { ...base.events, heartbeatSeconds: 1 } });
  try {
    await seedFuzzData(server);
    const stats = await runFuzz(server, {
      seed,
      runsPerRoute,
      keepGoing: true,
      checkReads: true,
      budgetMs: minutes * 60_000,
      log: (line) => console.log(line),
    });
    console.log(`fuzz [${kind}]: ${stats.requests} requests over ${stats.routes} routes in ${stats.ms} ms; statuses ${JSON.stringify(stats.byStatus)}`);
    console.log(`fuzz [${kind}]: ${stats.violations.length} violations (reproduce with --seed ${seed} --runs ${runsPerRoute})`);
    failed += stats.violations.length;
  } finally {
    await server.close();
  }
}
process.exit(failed ? 1 : 0);
