import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BadEventQueueIdError, EventQueue, type QueueSnapshot } from '../queue.js';
import { QueueManager, type Cancel, type PollRequest, type Respond } from '../queue_manager.js';

const FILE = 'event_queues.json';

/** What event_queues.json holds: the queues and the identity of the database they belong to. */
interface SavedQueues {
  version: 2;
  database_id: string;
  queues: QueueSnapshot[];
}

/**
 * Embedded mode: every queue lives in this process. Published events are delivered
 * directly; queues are written to `<dataDir>/event_queues.json` on a graceful shutdown
 * and restored at the next start, so clients keep their queues across a restart, but only
 * into the database they were saved from: user IDs in another database are other people.
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
    const saved: SavedQueues = { version: 2, database_id: this.databaseId, queues: snapshots };
    writeFileSync(`${path}.tmp`, JSON.stringify(saved));
    renameSync(`${path}.tmp`, path);
  }

  private restore(): void {
    const path = join(this.config.dataDir, FILE);
    if (!existsSync(path)) return;
    try {
      const data = JSON.parse(readFileSync(path, 'utf8')) as Partial<SavedQueues>;
      if (data.database_id !== this.databaseId) {
        // Version 1 files named no database: whose they were cannot be known either.
        const from = data.database_id === undefined ? 'by a version that did not record their database' : 'from another database (DATABASE_URL changed?)';
        this.log.warn(
          { path, savedDatabaseId: data.database_id ?? null, databaseId: this.databaseId, queues: data.queues?.length ?? 0 },
          `not restoring saved event queues: they were saved ${from}; the file is discarded and their clients will register again`,
        );
        rmSync(path);
        return;
      }
      const now = Date.now();
      for (const s of data.queues ?? []) {
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
