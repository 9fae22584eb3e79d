import type { RealmPresenceRow } from '../../db/repos/presence.js';

/**
 * Zulip's presence formats. The server stores two times per user (last active, last
 * connected); the legacy format turns them into one "website" client entry with a status,
 * the modern format sends both times.
 */

/** A user counts as active when the last active report is within this many seconds of the last connection. */
export const PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS = 70;
/** Clients show a user offline after this long without presence (also sent at register). */
export const OFFLINE_THRESHOLD_SECONDS = 140;
export const PRESENCE_PING_INTERVAL_SECONDS = 60;

export interface ModernPresence {
  active_timestamp: number;
  idle_timestamp: number;
}

export interface LegacyPresenceClient {
  client: 'website';
  status: 'active' | 'idle';
  timestamp: number;
  pushable: false;
}

export interface LegacyPresence {
  aggregated: { client: 'website'; status: 'active' | 'idle'; timestamp: number };
  website: LegacyPresenceClient;
}

/** The stored times, a missing one defaulting to the user's join date as in Zulip. */
export function presenceTimes(row: Pick<RealmPresenceRow, 'last_active_time' | 'last_connected_time' | 'date_joined'>): {
  active: number;
  connected: number;
} {
  return { active: row.last_active_time ?? row.date_joined, connected: row.last_connected_time ?? row.date_joined };
}

export function formatModernPresence(active: number, connected: number): ModernPresence {
  return { active_timestamp: active, idle_timestamp: connected };
}

export function formatLegacyPresenceClient(active: number, connected: number): LegacyPresenceClient {
  const isActive = active + PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS >= connected;
  return { client: 'website', status: isActive ? 'active' : 'idle', timestamp: isActive ? active : connected, pushable: false };
}

export function formatLegacyPresence(active: number, connected: number): LegacyPresence {
  const website = formatLegacyPresenceClient(active, connected);
  return { aggregated: { client: 'website', status: website.status, timestamp: website.timestamp }, website };
}

/** The `presences` map: keyed by user ID (modern) or by API email (legacy). */
export function formatPresences(rows: readonly RealmPresenceRow[], modern: boolean): Record<string, ModernPresence | LegacyPresence> {
  const out: Record<string, ModernPresence | LegacyPresence> = {};
  for (const row of rows) {
    const { active, connected } = presenceTimes(row);
    if (modern) out[String(row.user_id)] = formatModernPresence(active, connected);
    else out[row.email] = formatLegacyPresence(active, connected);
  }
  return out;
}

/**
 * GET /users/{user_id_or_email}/presence: both formats in one object (feature level 497),
 * the legacy entries without client/pushable, and `aggregated` offline when stale.
 */
export function formatSingleUserPresence(row: RealmPresenceRow, now: number): Record<string, unknown> {
  const { active, connected } = presenceTimes(row);
  const legacy = formatLegacyPresenceClient(active, connected);
  const stale = now - legacy.timestamp > OFFLINE_THRESHOLD_SECONDS;
  return {
    ...formatModernPresence(active, connected),
    website: { status: legacy.status, timestamp: legacy.timestamp },
    aggregated: { status: stale ? 'offline' : legacy.status, timestamp: legacy.timestamp },
  };
}
