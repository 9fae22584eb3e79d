import { deliverDueNotifications, processDueNotificationJobs } from '../actions/notifications.js';
import { now } from '../db/index.js';
import { fetchNextNotificationDue } from '../db/repos/notifications.js';
import { createMailer, type Mailer } from '../lib/email.js';
import type { Services } from '../services.js';

/**
 * Turns sent messages' notification jobs into push notifications and missed-message emails
 * (Zulip's missedmessage_mobile_notifications and missedmessage_emails workers). State is only in
 * the database: at start it finishes what was queued while no process ran, then sleeps until the
 * next row is due, or at most `intervalMs` so that rows queued through other processes are seen;
 * a send through this process wakes it at once. Every process of a scaled-out installation runs
 * one; the claims in db/repos/notifications.ts make each row worked on by one process.
 */
export class NotificationWorker {
  private timer: NodeJS.Timeout | null = null;
  private dueAt = Infinity;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly mailer: Mailer;

  constructor(
    private readonly services: Services,
    private readonly intervalMs: number,
  ) {
    this.mailer = createMailer(services.config, services.log);
  }

  start(): void {
    this.arm(0);
  }

  /** A job was queued: run a pass soon (after the current event-loop turn's sends). */
  wake(): void {
    this.arm(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    this.mailer.close();
  }

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
      await processDueNotificationJobs(this.services);
      await deliverDueNotifications(this.services, this.mailer);
      const next = await fetchNextNotificationDue(this.services.db.kysely, now());
      if (next !== null) delay = Math.max(0, Math.min(delay, next * 1000 - Date.now()));
    } catch (e) {
      this.services.log.error({ err: e }, 'Notification worker pass failed');
    }
    this.arm(delay);
  }
}
