import { loadConfig } from './config.js';
import { buildApp } from './app.js';
import { startDebugStats } from './debug_stats.js';

const config = loadConfig();
// What the first start has to tell a person (the owner's email and password), printed after the
// server's own log lines so that it is the last thing on the screen, not lost among them.
const firstStart: string[] = [];
const app = await buildApp(config, { announce: (line) => firstStart.push(line) });
// Installed before the server announces itself, so that a supervisor signalling right after
// "serving" gets a graceful shutdown, not Node's default exit.
let closing = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

await app.fastify.listen({ port: config.port, host: config.host });
if (process.env.PARLEY_DEBUG_STATS_PORT) await startDebugStats(Number(process.env.PARLEY_DEBUG_STATS_PORT), app.services);
process.stdout.write(`Parley is serving on ${config.externalUrl} (database: ${config.databaseUrl.replace(/\/\/[^@]*@/, '//')})\n`);
for (const line of firstStart) process.stdout.write(`${line}\n`);
