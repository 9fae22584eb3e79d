import { fetchBotServices, fetchBotsFor } from '../../db/repos/bots.js';
import { fetchStreamsByIds } from '../../db/repos/streams.js';
import { formatBot } from '../../lib/format/bots.js';
import { isAdmin } from '../../lib/roles.js';
import type { StateFetcher } from './types.js';

/**
 * POST /register keys realm_bots (fetch type realm_bot; Zulip's get_owned_bot_dicts: every bot of the organization
 * for an administrator, else the caller's own) and realm_embedded_bots, empty: this server runs
 * no embedded bots (Zulip's EMBEDDED_BOTS_ENABLED, off by default), so it offers none.
 */
export const fetchBotsState: StateFetcher = async ({ services, realm, user, want }) => {
  const out: Record<string, unknown> = {};
  if (want('realm_bot')) {
    const db = services.db.kysely;
    const bots = user.is_bot ? [] : await fetchBotsFor(db, realm.id, isAdmin(user) ? null : user.id);
    const streamIds = bots.flatMap((b) => [b.default_sending_stream_id, b.default_events_register_stream_id]).filter((id): id is number => id !== null);
    const names = new Map((await fetchStreamsByIds(db, realm.id, streamIds)).map((s) => [s.id, s.name]));
    const services_ = await fetchBotServices(db, bots.map((b) => b.id));
    out.realm_bots = bots.map((b) => formatBot(b, names, services_));
  }
  if (want('realm_embedded_bots')) out.realm_embedded_bots = [];
  return out;
};
