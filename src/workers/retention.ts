import { doRetentionPass } from '../actions/retention.js';
import { now } from '../db/index.js';
import { claimWorkerLease, releaseWorkerLease } from '../db/repos/retention.js';
import type { Services } from '../services.js';
import { PeriodicWorker } from './periodic.js';

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
  private readonly loop: PeriodicWorker;

  constructor(
    private readonly services: Services,
    private readonly intervalMs: number,
  ) {
    this.loop = new PeriodicWorker(services.log, intervalMs, 'Message retention pass failed', () => this.pass());
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  private async pass(): Promise<void> {
    const db = this.services.db.kysely;
    const at = now();
    if (!(await claimWorkerLease(db, JOB, at, at - Math.floor(this.intervalMs / 1000), at + LEASE_SECONDS))) return;
    let finished: number | null = null;
    try {
      await doRetentionPass(this.services, at);
      finished = now();
    } finally {
      await releaseWorkerLease(db, JOB, finished);
    }
  }
}
