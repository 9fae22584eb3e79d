import type { Realm, User } from '../db/tables.js';
import type { ActionServices } from '../services.js';
import type { Tx } from '../db/index.js';
import { fetchPresence, fetchRealmPresences, recordPresence } from '../db/repos/presence.js';
import { fetchActiveUserIds } from '../db/repos/users.js';
import {
  OFFLINE_THRESHOLD_SECONDS,
  PRESENCE_PING_INTERVAL_SECONDS,
  formatLegacyPresenceClient,
  formatModernPresence,
  formatPresences,
} from '../lib/format/presence.js';
import { userSettings } from '../lib/user_settings.js';
import { realmPresenceView } from '../lib/presence_view.js';
import type { RawJson } from '../lib/raw_json.js';

/** Connection times closer together than this are not rewritten (several open clients ping every minute). */
export const PRESENCE_UPDATE_MIN_FREQ_SECONDS = 55;
/** Above this many users Zulip stops sending "came online" events: they cost O(users²) work. */
export const USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS = 100;
const DEFAULT_PRESENCE_HISTORY_DAYS = 14;

export type PresenceStatus = 'active' | 'idle';

/**
 * Records that `user` is connected (and active, for status "active"), Zulip's
 * do_update_user_presence. Every change takes the organization's next presence update ID;
 * a user coming online (or reporting for the first time) is announced to the organization
 * with a `presence` event so others need not wait for their next poll.
 */
export async function doUpdateUserPresence(services: ActionServices, realm: Realm, user: User, status: PresenceStatus, now: number): Promise<void> {
  // A user who hid their presence is never reported; their old data simply ages out.
  if (!userSettings(user).presence_enabled) return;
  // Read outside a transaction: two clients of one person reporting at once both write, harmlessly.
  const db = services.db.kysely;
  const row = await fetchPresence(db, user.id);
  const active = status === 'active';
  const sinceActive = row?.last_active_time != null ? now - row.last_active_time : 86_400;
  const sinceConnected = row?.last_connected_time != null ? now - row.last_connected_time : 86_400;
  // "Newly online" means the user missed a couple of regular pings and could already be shown offline.
  const becameOnline = active && sinceActive > OFFLINE_THRESHOLD_SECONDS - PRESENCE_PING_INTERVAL_SECONDS - 10;
  let lastActive = row ? row.last_active_time : active ? now : null;
  let lastConnected = row?.last_connected_time ?? now;
  let changed = !row;
  if (row && sinceConnected > PRESENCE_UPDATE_MIN_FREQ_SECONDS) {
    lastConnected = now;
    changed = true;
  }
  if (row && active && sinceActive > PRESENCE_UPDATE_MIN_FREQ_SECONDS) {
    lastActive = now;
    if (now > lastConnected) lastConnected = now;
    changed = true;
  }
  if (changed) {
    await recordPresence(services.db, { user_id: user.id, realm_id: realm.id, last_active_time: lastActive, last_connected_time: lastConnected });
  }
  if (!row || becameOnline) {
    // One more than the limit tells whether the organization is over it, without reading everyone.
    const audience = await fetchActiveUserIds(db, realm.id, USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS + 1);
    if (audience.length > USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS) return;
    const active_ = lastActive ?? user.date_joined;
    const event = {
      type: 'presence',
      user_id: user.id,
      email: user.email,
      server_timestamp: Date.now() / 1000,
      presence: { website: formatLegacyPresenceClient(active_, lastConnected) },
      presences: { [String(user.id)]: formatModernPresence(active_, lastConnected) },
    };
    services.events.send(realm.id, event, audience);
  }
}

export interface PresenceQuery {
  /** User-ID-keyed modern entries rather than email-keyed legacy ones. */
  modern: boolean;
  /** Only presence changed after this update ID (the client already has the rest). */
  lastUpdateId?: number;
  historyLimitDays?: number;
}

/**
 * The organization's presence as POST /users/me/presence, GET /realm/presence and
 * POST /register return it (Zulip's get_presence_response).
 */
export async function fetchPresenceResponse(
  db: Tx,
  realm: Realm,
  query: PresenceQuery,
): Promise<{ presences: Record<string, unknown> | RawJson; server_timestamp: number; presence_last_update_id: number }> {
  const serverTimestamp = Date.now() / 1000;
  const days = query.historyLimitDays ?? DEFAULT_PRESENCE_HISTORY_DAYS;
  const initial = query.lastUpdateId === undefined || query.lastUpdateId <= 0;
  // Outside a transaction, from this process's view of the organization's presence (lib/presence_view.ts).
  if (query.modern && query.historyLimitDays !== 0 && !db.isTransaction) {
    const view = await realmPresenceView(db, realm.id).select(query.lastUpdateId ?? -1, initial ? Math.floor(serverTimestamp) - days * 86_400 : undefined);
    return { presences: view.presences, server_timestamp: serverTimestamp, presence_last_update_id: view.lastUpdateId };
  }
  const rows =
    query.historyLimitDays === 0
      ? []
      : await fetchRealmPresences(db, realm.id, {
          afterUpdateId: query.lastUpdateId,
          connectedSince: initial ? Math.floor(serverTimestamp) - days * 86_400 : undefined,
        });
  let lastUpdateId = query.lastUpdateId ?? -1;
  for (const r of rows) lastUpdateId = Math.max(lastUpdateId, r.last_update_id);
  return { presences: formatPresences(rows, query.modern), server_timestamp: serverTimestamp, presence_last_update_id: lastUpdateId };
}
