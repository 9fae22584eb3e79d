import { doRetentionPass } from '../actions/retention.js';
import { now } from '../db/index.js';
import { claimWorkerLease, setWorkerNextRun } from '../db/repos/retention.js';
import type { Services } from '../services.js';

/** The cluster-wide job's name in `worker_leases`. */
const JOB = 'retention';
/** How long a pass may run before another process may take the job over (its process died). */
const LEASE_SECONDS = 600;

/**
 * Enforces message retention policies (Zulip's archive_messages cron job): every process looks
 * every `intervalMs`, and the one that takes the job's lease in `worker_leases` runs a pass
 * (actions/retention.ts), then sets the next run `intervalMs` later, so the cluster runs one
 * pass per interval whatever the number of processes, and a restart does not postpone it.
 */
export class RetentionWorker {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly services: Services,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.arm(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private arm(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.pass().finally(() => this.arm(this.intervalMs));
    }, delayMs);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    const db = this.services.db.kysely;
    try {
      const at = now();
      if (!(await claimWorkerLease(db, JOB, at, at + LEASE_SECONDS))) return;
      await doRetentionPass(this.services, at);
      await setWorkerNextRun(db, JOB, now() + Math.floor(this.intervalMs / 1000));
    } catch (e) {
      this.services.log.error({ err: e }, 'Message retention pass failed');
    }
  }
}
