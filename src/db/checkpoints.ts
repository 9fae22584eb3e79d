import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

// Runs in the worker thread (CommonJS, so that it needs no file of its own under tsx or tsc).
const WORKER = `
const { workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file);
db.pragma('busy_timeout = 1000');
setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or closing: the next round checkpoints.
  }
}, workerData.intervalMs);
`;

/**
 * Checkpoints a SQLite WAL from a worker thread. SQLite's automatic checkpoint runs inside
 * whichever commit crosses 1,000 WAL pages: on the event loop, copying pages and syncing the
 * file, which made one commit in ten tens of milliseconds long (a message to 10,000 people
 * committed in 52 ms with automatic checkpoints, 15 ms without). The caller turns automatic
 * checkpoints off; PASSIVE checkpoints never block the writer. `onFailure` runs if the thread
 * stops on its own (the caller then turns automatic checkpoints back on). Returns a function
 * that stops the thread.
 */
export function startCheckpointer(file: string, onFailure: () => void, intervalMs = 200): () => Promise<void> {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  // No inherited node flags (a loader, a profiler): the thread only runs the code above.
  const worker = new Worker(WORKER, { eval: true, execArgv: [], workerData: { file, driver, intervalMs } });
  let stopping = false;
  worker.on('error', () => undefined);
  worker.on('exit', () => {
    if (!stopping) onFailure();
  });
  worker.unref();
  return async () => {
    stopping = true;
    await worker.terminate();
  };
}
