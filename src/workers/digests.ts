import { now } from '../db/index.js';
import { sendDueDigests } from '../lib/digest.js';
import { createMailer, type Mailer } from '../lib/email.js';
import type { Services } from '../services.js';
import { PeriodicWorker } from './periodic.js';

/**
 * Sends digest emails (Zulip's enqueue_digest_emails cron job and digest_emails worker): every
 * `intervalMs` it looks whose digest day it is. Its state is only the database's record of
 * each user's last digest, claimed before the email goes out, so every process of a
 * scaled-out installation can run one and a restart loses nothing but the wait.
 */
export class DigestWorker {
  private readonly loop: PeriodicWorker;
  private readonly mailer: Mailer;

  constructor(
    private readonly services: Services,
    intervalMs: number,
  ) {
    this.mailer = createMailer(services.config, services.log);
    this.loop = new PeriodicWorker(services.log, intervalMs, 'Digest worker pass failed', async () => {
      const sent = await sendDueDigests(this.services, this.mailer, now());
      if (sent) this.services.log.info({ sent }, 'digest emails sent');
    });
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    this.mailer.close();
  }
}
