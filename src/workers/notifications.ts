import { deliverDueNotifications, processDueNotificationJobs } from '../actions/notifications.js';
import { now } from '../db/index.js';
import { fetchNextNotificationDue } from '../db/repos/notifications.js';
import { createMailer, type Mailer } from '../lib/email.js';
import type { Services } from '../services.js';
import { PeriodicWorker } from './periodic.js';

/**
 * Turns sent messages' notification jobs into push notifications and missed-message emails
 * (Zulip's missedmessage_mobile_notifications and missedmessage_emails workers). State is only in
 * the database: at start it finishes what was queued while no process ran, then sleeps until the
 * next row is due, or at most `intervalMs` so that rows queued through other processes are seen;
 * a send through this process wakes it at once. Every process of a scaled-out installation runs
 * one; the claims in db/repos/notifications.ts make each row worked on by one process.
 */
export class NotificationWorker {
  private readonly loop: PeriodicWorker;
  private readonly mailer: Mailer;

  constructor(
    private readonly services: Services,
    intervalMs: number,
  ) {
    this.mailer = createMailer(services.config, services.log);
    this.loop = new PeriodicWorker(services.log, intervalMs, 'Notification worker pass failed', () => this.pass());
  }

  start(): void {
    this.loop.start();
  }

  /**
   * A job was queued: run a pass at once (after the current event-loop turn's sends), so
   * recipients' settings are read as they were at the send; jobs queued during a pass are
   * claimed together by the next.
   */
  wake(): void {
    this.loop.wake(0);
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    this.mailer.close();
  }

  /** Works through what is due; the next pass when the next row is due. */
  private async pass(): Promise<number | void> {
    await processDueNotificationJobs(this.services);
    await deliverDueNotifications(this.services, this.mailer);
    const next = await fetchNextNotificationDue(this.services.db.kysely, now());
    if (next !== null) return next * 1000 - Date.now();
  }
}
