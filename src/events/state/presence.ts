import { fetchPresenceResponse } from '../../actions/presence.js';
import {
  TYPING_STARTED_EXPIRY_PERIOD_MILLISECONDS,
  TYPING_STARTED_WAIT_PERIOD_MILLISECONDS,
  TYPING_STOPPED_WAIT_PERIOD_MILLISECONDS,
} from '../../actions/typing.js';
import { OFFLINE_THRESHOLD_SECONDS, PRESENCE_PING_INTERVAL_SECONDS } from '../../lib/format/presence.js';
import { realmUrl } from '../../lib/urls.js';
import type { StateFetcher } from './types.js';

/** Where the Unicode emoji name data is served, unauthenticated (routes/events/presence.ts). */
export const SERVER_EMOJI_DATA_PATH = '/static/generated/emoji/emoji_api.json';

/**
 * POST /register keys for: presence (`presences` in the format slim_presence asks for,
 * `presence_last_update_id`, `server_timestamp`) and the presence and typing intervals
 * clients pace themselves by (part of the realm group in Zulip).
 */
export const fetchPresenceState: StateFetcher = async (ctx) => {
  const out: Record<string, unknown> = {};
  if (ctx.want('realm')) {
    out.server_presence_ping_interval_seconds = PRESENCE_PING_INTERVAL_SECONDS;
    out.server_presence_offline_threshold_seconds = OFFLINE_THRESHOLD_SECONDS;
    out.server_typing_started_expiry_period_milliseconds = TYPING_STARTED_EXPIRY_PERIOD_MILLISECONDS;
    out.server_typing_stopped_wait_period_milliseconds = TYPING_STOPPED_WAIT_PERIOD_MILLISECONDS;
    out.server_typing_started_wait_period_milliseconds = TYPING_STARTED_WAIT_PERIOD_MILLISECONDS;
    out.server_emoji_data_url = `${realmUrl(ctx.services.config, ctx.realm)}${SERVER_EMOJI_DATA_PATH}`;
  }
  if (ctx.want('presence')) {
    Object.assign(
      out,
      await fetchPresenceResponse(ctx.services.db.kysely, ctx.realm, {
        modern: ctx.options.slimPresence,
        historyLimitDays: ctx.options.presenceHistoryLimitDays,
      }),
    );
  }
  return out;
};
