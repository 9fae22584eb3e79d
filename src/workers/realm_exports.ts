import { doRunNextRealmExport } from '../actions/realm_export.js';
import type { Services } from '../services.js';

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
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private passQueued = false;
  private stopped = false;

  constructor(private readonly services: Services) {}

  start(): void {
    this.wake();
  }

  wake(): void {
    if (this.stopped || this.passQueued) return;
    this.passQueued = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.running.then(() => {
      this.passQueued = false;
      return this.pass();
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private async pass(): Promise<void> {
    try {
      while (!this.stopped && (await doRunNextRealmExport(this.services)));
    } catch (e) {
      this.services.log.error({ err: e }, 'Data export worker failed');
    }
    if (this.stopped || this.passQueued) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.wake();
    }, INTERVAL_MS);
    this.timer.unref();
  }
}
