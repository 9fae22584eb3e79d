import { doRetentionPass } from '../actions/retention.js';
import { now } from '../db/index.js';
import { claimWorkerLease, releaseWorkerLease } from '../db/repos/retention.js';
import type { Services } from '../services.js';

/** The cluster-wide job's name in `worker_leases`. */
const JOB = 'retention';
/** How long a pass may run before another process may take the job over (its process died). */
const LEASE_SECONDS = 600;

/**
 * Enforces message retention policies (Zulip's archive_messages cron job): every process looks
 * every `intervalMs`, and one that finds the last pass at least `intervalMs` old takes the
 * job's lease in `worker_leases` and runs a pass (actions/retention.ts), so the cluster runs
 * one pass per interval whatever the number of processes, and a restart does not postpone it.
 * A pass that fails is retried at the next look.
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
    const at = now();
    let finished: number | null = null;
    try {
      if (!(await claimWorkerLease(db, JOB, at, at - Math.floor(this.intervalMs / 1000), at + LEASE_SECONDS))) return;
      try {
        await doRetentionPass(this.services, at);
        finished = now();
      } finally {
        await releaseWorkerLease(db, JOB, finished);
      }
    } catch (e) {
      this.services.log.error({ err: e }, 'Message retention pass failed');
    }
  }
}
