import type SQLite from 'better-sqlite3';
import type { ReadCache } from './cache.js';
import type { UserMessageRow } from './repos/user_messages.js';

/** Rows materialized per slice in the background (a few milliseconds of work). */
const SLICE_ROWS = 4000;
/** How long staged receipts wait for more to join them before being materialized. */
const FLUSH_DELAY_MS = 50;
/** Multi-row INSERT size; a remainder goes in one row at a time. */
const INSERT_ROWS = 250;
/** Pending messages read per step. */
const HEAD = 64;

/** Statements that read or write user_messages (not user_messages_pending). */
const USER_MESSAGES = /\buser_messages\b/;

/**
 * Deferred receipts (SQLite only). A message to N people needs N `user_messages` rows, and each
 * recipient's rows sit in a different page of every index of that table, so a send that writes
 * them in its own transaction dirties two pages per recipient: about 100 pages, written to the
 * WAL at every commit however few messages share it. Instead a send commits, with its message,
 * one `user_messages_pending` row per message (the recipients and their flags, packed), and the
 * rows are inserted later in large batches sorted by (user_id, message_id), where each page is
 * written once for many messages.
 *
 * Nothing can observe the difference: every statement that names `user_messages` first
 * materializes whatever is pending, in the same transaction (the chokepoint is the statement
 * cache of db/index.ts, through which every query passes). A crash loses nothing, because the
 * pending rows commit with their messages and are materialized at the next start. Other
 * processes on the same file (the command-line tools) materialize on first use and after any
 * commit of another connection.
 */
export class DeferredReceipts {
  /** False only when this process knows the pending table is empty. */
  private mayHavePending = false;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly insertMany: SQLite.Statement;
  private readonly insertOne: SQLite.Statement;
  private readonly stageOne: SQLite.Statement;
  private readonly head: SQLite.Statement;
  private readonly drop: SQLite.Statement;
  private readonly keep: SQLite.Statement;

  /** Call once the schema is migrated (the statements need the tables). */
  constructor(
    private readonly sqlite: SQLite.Database,
    private readonly cache: ReadCache,
  ) {
    const tuple = '(?, ?, ?)';
    const insert = 'INSERT OR IGNORE INTO user_messages (user_id, message_id, flags) VALUES ';
    this.insertMany = sqlite.prepare(insert + Array(INSERT_ROWS).fill(tuple).join(', '));
    this.insertOne = sqlite.prepare(insert + tuple);
    this.stageOne = sqlite.prepare('INSERT INTO user_messages_pending (message_id, recipients) VALUES (?, ?)');
    this.head = sqlite.prepare(`SELECT message_id, recipients FROM user_messages_pending ORDER BY message_id LIMIT ${HEAD}`);
    this.drop = sqlite.prepare('DELETE FROM user_messages_pending WHERE message_id = ?');
    this.keep = sqlite.prepare('UPDATE user_messages_pending SET recipients = ? WHERE message_id = ?');
    this.noteExternalWrite();
  }

  static touches(sql: string): boolean {
    return USER_MESSAGES.test(sql);
  }

  /** Whether a statement touching user_messages must first materialize. */
  get pending(): boolean {
    return this.mayHavePending;
  }

  /**
   * Writes the receipts of a batch of messages, inside the caller's open transaction (they
   * commit or roll back with the messages). Call `schedule()` after the commit.
   */
  stage(rows: readonly UserMessageRow[]): void {
    if (!this.sqlite.inTransaction) throw new Error('receipts are staged inside the transaction that writes their messages');
    const byMessage = new Map<number, number[]>();
    for (const r of rows) {
      if (r.user_id > 0xffffffff || r.flags > 0xffffffff) throw new Error('user id or flags beyond 32 bits');
      let list = byMessage.get(r.message_id);
      if (!list) byMessage.set(r.message_id, (list = []));
      list.push(r.user_id, r.flags);
    }
    for (const [messageId, pairs] of byMessage) this.stageOne.run(messageId, Buffer.from(Uint32Array.from(pairs).buffer));
    this.mayHavePending = true;
  }

  /** Materializes staged receipts soon, in the background, in slices. */
  schedule(delayMs = FLUSH_DELAY_MS): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => this.background(), delayMs);
  }

  /** Another connection may have staged receipts (data_version moved, or at open). */
  noteExternalWrite(): void {
    this.mayHavePending = true;
    this.schedule(0);
  }

  /** Materializes everything pending now: before any statement that touches user_messages. */
  flushAll(): void {
    if (!this.sqlite.inTransaction) {
      // IMMEDIATE: it writes, so it takes the write lock up front (waiting up to busy_timeout).
      this.sqlite.transaction(() => {
        while (this.step(Infinity));
      }).immediate();
      return;
    }
    // Inside the caller's transaction, which may yet roll back and bring the pending rows back:
    // only a transaction of our own may conclude that nothing is pending.
    while (this.step(Infinity, false));
    this.schedule(0);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.mayHavePending) this.flushAll();
  }

  private background(): void {
    this.timer = null;
    if (this.closed || !this.mayHavePending || !this.sqlite.open) return;
    // A transaction of the request path is open (between two of its awaits): not ours to join.
    if (this.sqlite.inTransaction) return this.schedule(1);
    let more = false;
    try {
      more = this.sqlite.transaction(() => this.step(SLICE_ROWS)).immediate();
    } catch {
      // Another process holds the write lock for longer than busy_timeout: try again later.
      return this.schedule(FLUSH_DELAY_MS * 4);
    }
    if (more) this.timer = setTimeout(() => this.background(), 0);
  }

  /**
   * Materializes up to about `limit` rows, oldest messages first (a message with more is cut,
   * its remaining recipients kept pending). Returns whether anything may remain.
   */
  private step(limit: number, own = true): boolean {
    const heads = this.head.all() as { message_id: number; recipients: Buffer }[];
    if (heads.length === 0) {
      if (own) this.mayHavePending = false;
      return false;
    }
    const rows: number[][] = [];
    let cut = false;
    for (const h of heads) {
      const pairs = h.recipients.length / 8;
      const take = Math.min(pairs, limit - rows.length);
      for (let i = 0; i < take; i++) rows.push([h.recipients.readUInt32LE(8 * i), h.message_id, h.recipients.readUInt32LE(8 * i + 4)]);
      if (take < pairs) {
        this.keep.run(h.recipients.subarray(8 * take), h.message_id);
        cut = true;
        break;
      }
      this.drop.run(h.message_id);
      if (rows.length >= limit) {
        cut = true;
        break;
      }
    }
    rows.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
    let i = 0;
    for (; i + INSERT_ROWS <= rows.length; i += INSERT_ROWS) this.insertMany.run(rows.slice(i, i + INSERT_ROWS).flat());
    for (; i < rows.length; i++) this.insertOne.run(rows[i]);
    this.cache.invalidate(['user_messages']);
    return cut || heads.length === HEAD;
  }
}
