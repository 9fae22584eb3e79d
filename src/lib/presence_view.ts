import type { Kysely } from 'kysely';
import type { DB } from '../db/tables.js';
import { fetchPresenceChangesSince } from '../db/repos/presence.js';
import { fetchActiveHumanIdsCached } from '../db/cached.js';
import { presenceTimes } from './format/presence.js';
import { RawJson } from './raw_json.js';

/** One user's modern presence entry, serialized, with what selecting it needs. */
interface Entry {
  updateId: number;
  connected: number;
  json: string;
}

/**
 * An organization's presence as this process last read it. Every client reports presence
 * every minute and asks for what changed since its last report, which in an organization where
 * everyone is online is nearly everyone: read from the database, each report would cost a
 * query and a formatted row per person, O(people²) a minute in all. Here each report reads only
 * the rows changed since the previous one (update IDs only grow; they are taken under the
 * organization's presence-sequence row, so they commit in order) and answers from entries
 * serialized once per change.
 */
class RealmPresenceView {
  private readonly entries = new Map<number, Entry>();
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
      for (const row of rows) {
        const { active, connected } = presenceTimes(row);
        this.entries.set(row.user_id, {
          updateId: row.last_update_id,
          connected,
          json: `"${row.user_id}":{"active_timestamp":${active},"idle_timestamp":${connected}}`,
        });
        if (row.last_update_id > this.maxUpdateId) this.maxUpdateId = row.last_update_id;
      }
    });
    this.running = next.catch(() => undefined);
    this.queued = next;
    return next;
  }

  /** The `presences` map (user-ID keys) of the active people changed after `afterUpdateId` and connected since `connectedSince`. */
  async select(afterUpdateId: number, connectedSince: number | undefined): Promise<{ presences: RawJson; lastUpdateId: number }> {
    await this.refresh();
    const active = await fetchActiveHumanIdsCached(this.db, this.realmId);
    const parts: string[] = [];
    let lastUpdateId = afterUpdateId;
    for (const [userId, e] of this.entries) {
      if (e.updateId <= afterUpdateId || (connectedSince !== undefined && e.connected < connectedSince) || !active.has(userId)) continue;
      parts.push(e.json);
      if (e.updateId > lastUpdateId) lastUpdateId = e.updateId;
    }
    return { presences: new RawJson(`{${parts.join(',')}}`), lastUpdateId };
  }
}

const views = new WeakMap<Kysely<DB>, Map<number, RealmPresenceView>>();

export function realmPresenceView(db: Kysely<DB>, realmId: number): RealmPresenceView {
  let byRealm = views.get(db);
  if (!byRealm) views.set(db, (byRealm = new Map()));
  let view = byRealm.get(realmId);
  if (!view) byRealm.set(realmId, (view = new RealmPresenceView(db, realmId)));
  return view;
}
