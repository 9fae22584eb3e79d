import { doRunNextRealmExport } from '../actions/realm_export.js';
import type { Services } from '../services.js';
import { PeriodicWorker } from './periodic.js';

/** How often a process looks for exports queued through another process, or left by a dead one. */
const INTERVAL_MS = 30_000;

/**
 * Writes the data exports administrators ask for (Zulip's deferred_work `realm_export` event).
 * The queue is the `realm_exports` rows still pending, so a restart loses nothing: at start the
 * worker takes what was left, a request through this process wakes it, and otherwise it looks
 * every 30 s. Each export is leased first (db/repos/realm_exports.ts), so with several
 * processes each is written once; one whose writer died is taken over when its lease lapses.
 */
export class RealmExportWorker {
  private readonly loop: PeriodicWorker;

  constructor(services: Services) {
    this.loop = new PeriodicWorker(services.log, INTERVAL_MS, 'Data export worker failed', async () => {
      while (!this.loop.stopping && (await doRunNextRealmExport(services)));
    });
  }

  start(): void {
    this.loop.start();
  }

  wake(): void {
    this.loop.wake(0);
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }
}
