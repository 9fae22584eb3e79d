import { now } from '../db/index.js';
import { sendDueDigests } from '../lib/digest.js';
import { createMailer, type Mailer } from '../lib/email.js';
import type { Services } from '../services.js';

/**
 * Sends digest emails (Zulip's enqueue_digest_emails cron job and digest_emails worker): every
 * `intervalMs` it looks whose digest day it is. Its state is only the database's record of
 * each user's last digest, claimed before the email goes out, so every process of a
 * scaled-out installation can run one and a restart loses nothing but the wait.
 */
export class DigestWorker {
  private timer: NodeJS.Timeout | null = null;
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

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    this.mailer.close();
  }

  private arm(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.running.then(() => this.pass());
    }, delayMs);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    if (this.stopped) return;
    try {
      const sent = await sendDueDigests(this.services, this.mailer, now());
      if (sent) this.services.log.info({ sent }, 'digest emails sent');
    } catch (e) {
      this.services.log.error({ err: e }, 'Digest worker pass failed');
    }
    this.arm(this.intervalMs);
  }
}
