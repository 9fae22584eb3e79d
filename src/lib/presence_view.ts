import type { Kysely } from 'kysely';
import type { DB } from '../db/tables.js';
import { fetchPresenceChangesSince, type RealmPresenceRow } from '../db/repos/presence.js';
import { fetchActiveHumanIdsCached } from '../db/cached.js';
import { presenceTimes } from './format/presence.js';
import { RawJson } from './raw_json.js';

/** One user's modern presence entry, serialized, with what selecting it needs. */
interface Entry {
  userId: number;
  updateId: number;
  connected: number;
  json: string;
  /** Its place in the view's log, and whether a newer entry of the same user replaced it. */
  pos: number;
  dead: boolean;
}

/** The included entries of one full block of the log, joined, and the newest update ID among them. */
interface Block {
  json: string;
  maxUpdateId: number;
}

/** Entries per cached block of the log. */
const BLOCK = 64;

/**
 * An organization's presence as this process last read it. Every client reports presence
 * every minute and asks for what changed since its last report, which in an organization where
 * everyone is online is nearly everyone: read from the database, each report would cost a
 * query and a formatted row per person, O(people²) a minute in all. Here each report reads only
 * the rows changed since the previous one (update IDs only grow; they are taken under the
 * organization's presence-sequence row, so they commit in order) and answers from entries
 * serialized once per change.
 *
 * The entries sit in a log in update-ID order (a person's older entry is marked dead when a
 * newer one arrives), and each full block of BLOCK entries keeps its answer fragment joined:
 * an answer is a binary search, the few entries before the first whole block, and one string
 * per block. Joining every entry for every answer had been a fifth of the server's CPU with
 * 2,000 people online, and answers resuming together after a refresh made event-loop stalls.
 */
class RealmPresenceView {
  private readonly latest = new Map<number, Entry>();
  private log: Entry[] = [];
  private blocks: (Block | null)[] = [];
  private deadCount = 0;
  /** The active-people set the cached blocks were filtered with. */
  private blocksActive: ReadonlySet<number> | null = null;
  private maxUpdateId = 0;
  private running: Promise<void> = Promise.resolve();
  private queued: Promise<void> | null = null;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly realmId: number,
  ) {}

  /** Brings the view up to date with every change committed before the call (concurrent callers share one read). */
  refresh(): Promise<void> {
    if (this.queued) return this.queued;
    const next = this.running.then(async () => {
      this.queued = null;
      const rows = await fetchPresenceChangesSince(this.db, this.realmId, this.maxUpdateId);
      rows.sort((a, b) => a.last_update_id - b.last_update_id);
      for (const row of rows) this.append(row);
      if (this.deadCount > BLOCK * 16 && this.deadCount > this.latest.size) this.compact();
    });
    this.running = next.catch(() => undefined);
    this.queued = next;
    return next;
  }

  private append(row: RealmPresenceRow): void {
    const old = this.latest.get(row.user_id);
    if (old) {
      old.dead = true;
      this.deadCount++;
      this.blocks[Math.floor(old.pos / BLOCK)] = null;
    }
    const { active, connected } = presenceTimes(row);
    const entry: Entry = {
      userId: row.user_id,
      updateId: row.last_update_id,
      connected,
      json: `"${row.user_id}":{"active_timestamp":${active},"idle_timestamp":${connected}}`,
      pos: this.log.length,
      dead: false,
    };
    this.log.push(entry);
    this.latest.set(row.user_id, entry);
    if (row.last_update_id > this.maxUpdateId) this.maxUpdateId = row.last_update_id;
  }

  /** Drops the dead entries from the log (their blocks' fragments are rebuilt on demand). */
  private compact(): void {
    this.log = this.log.filter((e) => !e.dead);
    this.log.forEach((e, i) => (e.pos = i));
    this.blocks = [];
    this.deadCount = 0;
  }

  /** The `presences` map (user-ID keys) of the active people changed after `afterUpdateId` and connected since `connectedSince`. */
  async select(afterUpdateId: number, connectedSince: number | undefined): Promise<{ presences: RawJson; lastUpdateId: number }> {
    await this.refresh();
    const active = await fetchActiveHumanIdsCached(this.db, this.realmId);
    if (active !== this.blocksActive) {
      this.blocks = [];
      this.blocksActive = active;
    }
    const log = this.log;
    const parts: string[] = [];
    let lastUpdateId = afterUpdateId;
    const include = (e: Entry): void => {
      if (e.dead || !active.has(e.userId) || (connectedSince !== undefined && e.connected < connectedSince)) return;
      parts.push(e.json);
      if (e.updateId > lastUpdateId) lastUpdateId = e.updateId;
    };
    let i = firstAfter(log, afterUpdateId);
    // An initial fetch filters by connection time as well: it walks every entry.
    if (connectedSince !== undefined) {
      for (; i < log.length; i++) include(log[i]!);
      return { presences: new RawJson(`{${parts.join(',')}}`), lastUpdateId };
    }
    for (; i < log.length && i % BLOCK !== 0; i++) include(log[i]!);
    for (; i + BLOCK <= log.length; i += BLOCK) {
      const block = this.block(i / BLOCK, active);
      if (block.json) parts.push(block.json);
      if (block.maxUpdateId > lastUpdateId) lastUpdateId = block.maxUpdateId;
    }
    for (; i < log.length; i++) include(log[i]!);
    return { presences: new RawJson(`{${parts.join(',')}}`), lastUpdateId };
  }

  private block(index: number, active: ReadonlySet<number>): Block {
    let block = this.blocks[index];
    if (!block) {
      const parts: string[] = [];
      let maxUpdateId = -1;
      for (let i = index * BLOCK; i < (index + 1) * BLOCK; i++) {
        const e = this.log[i]!;
        if (e.dead || !active.has(e.userId)) continue;
        parts.push(e.json);
        maxUpdateId = e.updateId;
      }
      block = { json: parts.join(','), maxUpdateId };
      this.blocks[index] = block;
    }
    return block;
  }
}

/** The position of the first entry with an update ID above `updateId` (the log is in update-ID order). */
function firstAfter(log: readonly Entry[], updateId: number): number {
  let lo = 0;
  let hi = log.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (log[mid]!.updateId <= updateId) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const views = new WeakMap<Kysely<DB>, Map<number, RealmPresenceView>>();

export function realmPresenceView(db: Kysely<DB>, realmId: number): RealmPresenceView {
  let byRealm = views.get(db);
  if (!byRealm) views.set(db, (byRealm = new Map()));
  let view = byRealm.get(realmId);
  if (!view) byRealm.set(realmId, (view = new RealmPresenceView(db, realmId)));
  return view;
}
