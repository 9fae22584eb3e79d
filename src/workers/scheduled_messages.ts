import { deliverDueScheduledMessages } from '../actions/scheduled_messages.js';
import { fetchNextScheduledTimestamp } from '../db/repos/scheduled_messages.js';
import type { Services } from '../services.js';

/**
 * Delivers scheduled messages and reminders when they fall due (Zulip's
 * deliver_scheduled_messages worker). State is only in the database: at start it delivers what
 * fell due while no process was running, then sleeps until the next row is due, or at most
 * `intervalMs` so that rows scheduled through other processes are seen. Scheduling through this
 * process wakes it earlier. Every process of a scaled-out installation runs one; the claim in
 * actions/scheduled_messages.ts makes each row go out once.
 */
export class ScheduledMessageWorker {
  private timer: NodeJS.Timeout | null = null;
  /** When the armed timer fires (ms), Infinity when none is armed. */
  private dueAt = Infinity;
  /** The pass in progress (passes run one after another). */
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly services: Services,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.arm(0);
  }

  /** A row now falls due at `timestamp` (Unix seconds): make sure a pass runs by then. */
  wake(timestamp: number): void {
    this.arm(Math.max(0, timestamp * 1000 - Date.now()));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Arms the timer for `delayMs` from now, unless it is armed to fire sooner already. */
  private arm(delayMs: number): void {
    if (this.stopped || Date.now() + delayMs >= this.dueAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.dueAt = Date.now() + delayMs;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.dueAt = Infinity;
      this.running = this.running.then(() => this.pass());
    }, delayMs);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    if (this.stopped) return;
    let delay = this.intervalMs;
    try {
      await deliverDueScheduledMessages(this.services);
      // Rows already due and still pending are another process's (or a dead one's, until its
      // claim lapses): they are looked at again after the interval, and must not hide the next
      // row falling due sooner (which they did: a message due in 2 s waited the whole interval).
      const next = await fetchNextScheduledTimestamp(this.services.db.kysely, Math.floor(Date.now() / 1000));
      if (next !== null) delay = Math.max(0, Math.min(delay, next * 1000 - Date.now()));
    } catch (e) {
      this.services.log.error({ err: e }, 'Scheduled message delivery failed');
    }
    this.arm(delay);
  }
}
