import type SQLite from 'better-sqlite3';
import type { ReadCache } from './cache.js';

/** How long deferred work waits for more to join it before running. */
const FLUSH_DELAY_MS = 50;

/**
 * Work a commit leaves behind in a pending table, to be done later in large batches where
 * it costs a fraction per row (SQLite only): the receipts of new messages (db/receipts.ts)
 * and their full-text index entries (db/search_index.ts).
 *
 * Nothing may observe the delay. The statement cache of db/index.ts, through which every
 * query is prepared, calls `flushAll()` before any statement that names the target table
 * (each subclass's `TABLE`), so readers and writers always see it complete. The pending rows commit with the
 * writes that caused them, so a crash loses nothing: the next connection finishes the work.
 * A background timer does it in slices of `sliceRows`, with the event loop free between them;
 * a one-shot process (the CLI: `background` false) starts none, and does the work it left
 * itself when it closes.
 */
export abstract class DeferredWork {
  /** False only when this process knows nothing is pending. */
  private mayHavePending = false;
  /** This process left work pending. */
  private left = false;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    protected readonly sqlite: SQLite.Database,
    protected readonly cache: ReadCache,
    private readonly sliceRows: number,
    private readonly background: boolean,
  ) {}

  /** Whether a statement touching the target table must first flush. */
  get pending(): boolean {
    return this.mayHavePending;
  }

  /** Work is being left in the open transaction: statements touching the target flush from now on. */
  protected markPending(): void {
    this.mayHavePending = true;
    this.left = true;
  }

  /** Does the pending work soon, in the background, in slices. */
  schedule(delayMs = FLUSH_DELAY_MS): void {
    if (this.timer || this.closed || !this.background) return;
    this.timer = setTimeout(() => this.runSlice(), delayMs);
  }

  /** Another connection may have left work (data_version moved, or at open). */
  noteExternalWrite(): void {
    this.mayHavePending = true;
    this.schedule(0);
  }

  /** Does everything pending now: before any statement that touches the target table. */
  flushAll(): void {
    if (!this.sqlite.inTransaction) {
      // IMMEDIATE: it writes, so it takes the write lock up front (waiting up to busy_timeout).
      this.sqlite.transaction(() => this.drain(Infinity, true)).immediate();
      return;
    }
    // Inside the caller's transaction, which may yet roll back and bring the pending rows back:
    // only a transaction of our own may conclude that nothing is pending.
    this.drain(Infinity, false);
    this.schedule(0);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // Without background work, what other processes left is theirs to finish.
    if (this.mayHavePending && (this.background || this.left)) this.flushAll();
  }

  private drain(limit: number, own: boolean): boolean {
    let more: boolean;
    do more = this.step(limit);
    while (more && limit === Infinity);
    if (!more && own) this.mayHavePending = false;
    return more;
  }

  private runSlice(): void {
    this.timer = null;
    if (this.closed || !this.mayHavePending || !this.sqlite.open) return;
    // A transaction of the request path is open (between two of its awaits): not ours to join.
    if (this.sqlite.inTransaction) return this.schedule(1);
    let more = false;
    try {
      more = this.sqlite.transaction(() => this.drain(this.sliceRows, true)).immediate();
    } catch {
      // Another process holds the write lock for longer than busy_timeout: try again later.
      return this.schedule(FLUSH_DELAY_MS * 4);
    }
    if (more) this.timer = setTimeout(() => this.runSlice(), 0);
  }

  /**
   * Does up to about `limit` rows of the pending work, oldest first, inside the open
   * transaction. Returns false only when nothing is left.
   */
  protected abstract step(limit: number): boolean;
}
