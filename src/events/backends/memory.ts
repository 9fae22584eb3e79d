import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BadEventQueueIdError, EventQueue, type QueueSnapshot } from '../queue.js';
import { QueueManager, type Cancel, type PollRequest, type Respond } from '../queue_manager.js';

const FILE = 'event_queues.json';

/**
 * Embedded mode: every queue lives in this process. Published events are delivered
 * directly; queues are written to `<dataDir>/event_queues.json` on a graceful shutdown
 * and restored at the next start, so clients keep their queues across a restart.
 */
export class MemoryQueueManager extends QueueManager {
  private unsubscribe: (() => void) | null = null;

  protected async open(): Promise<void> {
    this.restore();
    this.unsubscribe = this.bus.subscribe((envelope) => this.dispatcher.dispatch(envelope));
  }

  async poll(req: PollRequest, respond: Respond): Promise<Cancel | null> {
    const q = this.localQueueFor(req.userId, req.queueId);
    if (!q) throw new BadEventQueueIdError(req.queueId);
    return this.pollLocal(q, req, respond);
  }

  async delete(userId: number, queueId: string): Promise<void> {
    const q = this.localQueueFor(userId, queueId);
    if (!q) throw new BadEventQueueIdError(queueId);
    this.removeLocal(q);
  }

  protected async persist(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = null;
    const snapshots: QueueSnapshot[] = [];
    for (const q of this.local.all()) snapshots.push(q.snapshot());
    mkdirSync(this.config.dataDir, { recursive: true });
    const path = join(this.config.dataDir, FILE);
    writeFileSync(`${path}.tmp`, JSON.stringify({ version: 1, queues: snapshots }));
    renameSync(`${path}.tmp`, path);
  }

  private restore(): void {
    const path = join(this.config.dataDir, FILE);
    if (!existsSync(path)) return;
    try {
      const data = JSON.parse(readFileSync(path, 'utf8')) as { version: number; queues: QueueSnapshot[] };
      const now = Date.now();
      for (const s of data.queues) {
        const q = EventQueue.restore(s);
        if (!q.expired(now)) this.local.add(q);
      }
      this.log.info(`restored ${this.local.size} event queues`);
    } catch (e) {
      // A damaged file costs clients their queues (they re-register), never the start.
      this.log.error({ err: e }, 'could not restore event queues');
    }
    // Kept for inspection; never loaded twice.
    renameSync(path, `${path}.last`);
  }
}
