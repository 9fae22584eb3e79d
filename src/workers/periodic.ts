import type { FastifyBaseLogger } from 'fastify';

/**
 * The loop every database-queued worker shares: passes run one after another, the first at
 * start(); after each pass the next runs `intervalMs` later (to see rows queued by other
 * processes, or whose claimant died), sooner when the pass names an earlier time, or as soon
 * as wake() asks. A failed pass is logged and retried at the next one.
 */
export class PeriodicWorker {
  private timer: NodeJS.Timeout | null = null;
  /** When the armed timer fires (ms), Infinity when none is armed. */
  private dueAt = Infinity;
  /** The pass in progress. */
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  /**
   * `pass` returns how soon (ms) the next pass is wanted, or nothing for `intervalMs`;
   * `failure` is the log line of a pass that threw.
   */
  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly intervalMs: number,
    private readonly failure: string,
    private readonly pass: () => Promise<number | void>,
  ) {}

  /** Whether stop() was called: a long pass checks it between items. */
  get stopping(): boolean {
    return this.stopped;
  }

  start(): void {
    this.wake(0);
  }

  /** Makes sure a pass runs within `delayMs` (after the one in progress). */
  wake(delayMs = 0): void {
    delayMs = Math.max(0, delayMs);
    if (this.stopped || Date.now() + delayMs >= this.dueAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.dueAt = Date.now() + delayMs;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.dueAt = Infinity;
      this.running = this.running.then(() => this.runPass());
    }, delayMs);
    this.timer.unref();
  }

  /** Stops arming passes and waits for the one in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private async runPass(): Promise<void> {
    if (this.stopped) return;
    let delay = this.intervalMs;
    try {
      const next = await this.pass();
      if (typeof next === 'number') delay = Math.min(delay, next);
    } catch (e) {
      this.log.error({ err: e }, this.failure);
    }
    this.wake(delay);
  }
}
