import type SQLite from 'better-sqlite3';
import type { ReadCache } from './cache.js';
import { DeferredWork } from './deferred.js';

/** Rows materialized per slice in the background (a few milliseconds of work). */
const SLICE_ROWS = 4000;
/** Multi-row INSERT size; a remainder goes in one row at a time. */
const INSERT_ROWS = 250;
/** Pending messages read per step. */
const HEAD = 64;
/**
 * Different recipients per background slice. A row costs a page of each of the table's
 * indexes keyed by user, unless a row of the same user in the slice shares it: a message to
 * 2,000 people dirtied some 6,000 pages in one slice, and the commit writing them to the WAL
 * stalled the event loop for 130 ms. Many messages to the same people still go 4,000 rows
 * at a time.
 */
const USERS_PER_SLICE = 256;

/** A new message's recipients: user ID -> flag bits. */
export interface MessageReceipts {
  messageId: number;
  flags: ReadonlyMap<number, number>;
}

/**
 * Deferred receipts (SQLite only). A message to N people needs N `user_messages` rows, and each
 * recipient's rows sit in a different page of every index of that table, so a send that writes
 * them in its own transaction dirties two pages per recipient: about 100 pages, written to the
 * WAL at every commit however few messages share it. Instead a send commits, with its message,
 * one `user_messages_pending` row per message (the recipients and their flags, packed), and the
 * rows are inserted later in large batches sorted by (user_id, message_id), where each page is
 * written once for many messages. Every statement naming `user_messages` (not
 * `user_messages_pending`) first inserts whatever is pending (db/deferred.ts).
 */
export class DeferredReceipts extends DeferredWork {
  /** Statements that read or write user_messages (not user_messages_pending). */
  static readonly TABLE = /\buser_messages\b/;
  private readonly insertMany: SQLite.Statement;
  private readonly insertOne: SQLite.Statement;
  private readonly stageOne: SQLite.Statement;
  private readonly head: SQLite.Statement;
  private readonly drop: SQLite.Statement;
  private readonly keep: SQLite.Statement;
  private readonly pendingOf: SQLite.Statement;
  private readonly storedOf: SQLite.Statement;

  /** Call once the schema is migrated (the statements need the tables). */
  constructor(sqlite: SQLite.Database, cache: ReadCache, background = true) {
    super(sqlite, cache, SLICE_ROWS, background);
    const tuple = '(?, ?, ?)';
    const insert = 'INSERT OR IGNORE INTO user_messages (user_id, message_id, flags) VALUES ';
    this.insertMany = sqlite.prepare(insert + Array(INSERT_ROWS).fill(tuple).join(', '));
    this.insertOne = sqlite.prepare(insert + tuple);
    this.stageOne = sqlite.prepare('INSERT INTO user_messages_pending (message_id, recipients) VALUES (?, ?)');
    this.head = sqlite.prepare(`SELECT message_id, recipients FROM user_messages_pending ORDER BY message_id LIMIT ${HEAD}`);
    this.drop = sqlite.prepare('DELETE FROM user_messages_pending WHERE message_id = ?');
    this.keep = sqlite.prepare('UPDATE user_messages_pending SET recipients = ? WHERE message_id = ?');
    this.pendingOf = sqlite.prepare('SELECT recipients FROM user_messages_pending WHERE message_id = ?');
    this.storedOf = sqlite.prepare('SELECT user_id, flags FROM user_messages WHERE message_id = ?');
    this.noteExternalWrite();
  }

  /**
   * Writes the receipts of a batch of messages, inside the caller's open transaction (they
   * commit or roll back with the messages). Call `schedule()` after the commit.
   */
  stage(messages: readonly MessageReceipts[]): void {
    if (!this.sqlite.inTransaction) throw new Error('receipts are staged inside the transaction that writes their messages');
    for (const { messageId, flags } of messages) {
      const pairs = new Uint32Array(flags.size * 2);
      let i = 0;
      flags.forEach((f, userId) => {
        if (userId > 0xffffffff || f > 0xffffffff) throw new Error('user id or flags beyond 32 bits');
        pairs[i++] = userId;
        pairs[i++] = f;
      });
      this.stageOne.run(messageId, Buffer.from(pairs.buffer));
    }
    this.markPending();
  }

  /**
   * One message's recipients and their flags, by user ID, without writing anything first: the
   * rows already inserted and those still pending (a message may be partly written), read
   * together. Statements through the query layer would first insert every message's pending
   * receipts; the notification worker reads each new message's recipients right after the
   * send, which made those inserts small and frequent instead of large and sorted.
   */
  recipients(messageId: number): { user_id: number; flags: number }[] {
    const out = (this.storedOf.all(messageId) as { user_id: number; flags: number | bigint }[]).map((r) => ({ user_id: r.user_id, flags: Number(r.flags) }));
    const pending = this.pendingOf.get(messageId) as { recipients: Buffer } | undefined;
    if (pending) {
      for (let i = 0; i < pending.recipients.length; i += 8) out.push({ user_id: pending.recipients.readUInt32LE(i), flags: pending.recipients.readUInt32LE(i + 4) });
    }
    return out.sort((a, b) => a.user_id - b.user_id);
  }

  /**
   * Materializes up to about `limit` rows, oldest messages first (a message with more is cut,
   * its remaining recipients kept pending), and in a background slice (a finite limit) rows of
   * at most USERS_PER_SLICE different people. Returns whether anything may remain.
   */
  protected step(limit: number): boolean {
    const people = limit === Infinity ? null : new Set<number>();
    const heads = this.head.all() as { message_id: number; recipients: Buffer }[];
    if (heads.length === 0) return false;
    let total = 0;
    for (const h of heads) total += h.recipients.length / 8;
    // The rows as three columns, in typed arrays: a slice is thousands of rows.
    const size = Math.min(total, limit);
    const users = new Uint32Array(size);
    const flags = new Uint32Array(size);
    const messages = new Float64Array(size);
    let n = 0;
    let cut = false;
    for (const h of heads) {
      const pairs = h.recipients.length / 8;
      const most = Math.min(pairs, size - n);
      let take = 0;
      for (; take < most; take++, n++) {
        const user = h.recipients.readUInt32LE(8 * take);
        if (people && !people.has(user)) {
          if (people.size >= USERS_PER_SLICE) break;
          people.add(user);
        }
        users[n] = user;
        flags[n] = h.recipients.readUInt32LE(8 * take + 4);
        messages[n] = h.message_id;
      }
      if (take < pairs) {
        if (take > 0) this.keep.run(h.recipients.subarray(8 * take), h.message_id);
        cut = true;
        break;
      }
      this.drop.run(h.message_id);
      if (n >= limit) {
        cut = true;
        break;
      }
    }
    const order = Uint32Array.from({ length: n }, (_, i) => i).sort((a, b) => users[a]! - users[b]! || messages[a]! - messages[b]!);
    const params: number[] = new Array(INSERT_ROWS * 3);
    let i = 0;
    for (; i + INSERT_ROWS <= n; i += INSERT_ROWS) {
      for (let k = 0; k < INSERT_ROWS; k++) {
        const r = order[i + k]!;
        params[3 * k] = users[r]!;
        params[3 * k + 1] = messages[r]!;
        params[3 * k + 2] = flags[r]!;
      }
      this.insertMany.run(params);
    }
    for (; i < n; i++) {
      const r = order[i]!;
      this.insertOne.run(users[r], messages[r], flags[r]);
    }
    this.cache.invalidate(['user_messages']);
    return cut || heads.length === HEAD;
  }
}
