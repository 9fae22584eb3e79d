import type SQLite from 'better-sqlite3';
import type { ReadCache } from './cache.js';
import { DeferredWork } from './deferred.js';

/** Messages indexed per slice in the background (a few milliseconds of work). */
const SLICE_ROWS = 1000;

/**
 * Deferred full-text indexing (SQLite only). FTS5 writes a new index segment for every
 * transaction that adds entries, and merges segments as they pile up: a group commit of a few
 * messages paid about 100 µs per message for its index entries, more than the rest of its
 * writes together. Since migration 0102 the insert trigger on `messages` records the new id in
 * `messages_fts_pending` instead, and the entries are added later, a thousand messages per
 * transaction, at a few µs each. The update and delete triggers leave a pending message's
 * entries (it has none yet) alone, so the index always holds exactly the messages not pending.
 * Every statement naming `messages_fts` (not `messages_fts_pending`) indexes whatever is
 * pending first (db/deferred.ts).
 */
export class DeferredSearchIndex extends DeferredWork {
  /** Statements that read or write the full-text index. */
  static readonly TABLE = /\bmessages_fts\b/;
  /** Statements that add messages (which the insert trigger leaves pending). */
  static readonly ADDS = /^\s*insert\s+(?:or\s+\w+\s+)?into\s+"?messages"?[\s(]/i;

  private readonly index: SQLite.Statement;
  private readonly done: SQLite.Statement;

  /** Call once the schema is migrated (the statements need the tables). */
  constructor(sqlite: SQLite.Database, cache: ReadCache, background = true) {
    super(sqlite, cache, SLICE_ROWS, background);
    // The oldest `limit` pending messages (LIMIT -1: all of them), then the same ids dropped.
    this.index = sqlite.prepare(
      `INSERT INTO messages_fts (rowid, content, topic)
       SELECT m.id, m.content, m.topic FROM messages_fts_pending p JOIN messages m ON m.id = p.message_id
       ORDER BY p.message_id LIMIT ?`,
    );
    this.done = sqlite.prepare('DELETE FROM messages_fts_pending WHERE message_id IN (SELECT message_id FROM messages_fts_pending ORDER BY message_id LIMIT ?)');
    this.noteExternalWrite();
  }

  /** A statement about to run adds messages: index them soon. */
  noteAdded(): void {
    this.markPending();
    this.schedule();
  }

  protected step(limit: number): boolean {
    const n = Number.isFinite(limit) ? limit : -1;
    this.index.run(n);
    const indexed = this.done.run(n).changes;
    if (indexed > 0) this.cache.invalidate(['messages_fts']);
    return n > 0 && indexed === n;
  }
}
