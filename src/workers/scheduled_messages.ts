import { deliverDueScheduledMessages } from '../actions/scheduled_messages.js';
import { fetchNextScheduledTimestamp } from '../db/repos/scheduled_messages.js';
import type { Services } from '../services.js';
import { PeriodicWorker } from './periodic.js';

/**
 * Delivers scheduled messages and reminders when they fall due (Zulip's
 * deliver_scheduled_messages worker). State is only in the database: at start it delivers what
 * fell due while no process was running, then sleeps until the next row is due, or at most
 * `intervalMs` so that rows scheduled through other processes are seen. Scheduling through this
 * process wakes it earlier. Every process of a scaled-out installation runs one; the claim in
 * actions/scheduled_messages.ts makes each row go out once.
 */
export class ScheduledMessageWorker {
  private readonly loop: PeriodicWorker;

  constructor(
    private readonly services: Services,
    intervalMs: number,
  ) {
    this.loop = new PeriodicWorker(services.log, intervalMs, 'Scheduled message delivery failed', () => this.pass());
  }

  start(): void {
    this.loop.start();
  }

  /** A row now falls due at `timestamp` (Unix seconds): make sure a pass runs by then. */
  wake(timestamp: number): void {
    this.loop.wake(timestamp * 1000 - Date.now());
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  private async pass(): Promise<number | void> {
    await deliverDueScheduledMessages(this.services);
    // Rows already due and still pending are another process's (or a dead one's, until its
    // claim lapses): they are looked at again after the interval, and must not hide the next
    // row falling due sooner (which they did: a message due in 2 s waited the whole interval).
    const next = await fetchNextScheduledTimestamp(this.services.db.kysely, Math.floor(Date.now() / 1000));
    if (next !== null) return Math.max(0, next * 1000 - Date.now());
  }
}
