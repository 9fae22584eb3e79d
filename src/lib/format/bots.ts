import type { User } from '../../db/tables.js';
import type { BotService } from '../../db/repos/bots.js';
import { BOT_OUTGOING_WEBHOOK } from '../roles.js';

/** An outgoing-webhook bot's entry of `services` (zulip.yaml BasicBotBase). */
export function formatBotService(s: BotService): { base_url: string; token: string; interface: number } {
  return { base_url: s.base_url, token: s.token, interface: s.interface };
}

/**
 * The Bot object of register's realm_bots and realm_bot add events (Zulip's bot dict since
 * feature level 474: the rest of a bot's data is in its user object).
 */
export function formatBot(bot: User, streamNames: ReadonlyMap<number, string>, services: readonly BotService[]): Record<string, unknown> {
  const name = (id: number | null) => (id === null ? null : (streamNames.get(id) ?? null));
  return {
    user_id: bot.id,
    default_sending_stream: name(bot.default_sending_stream_id),
    default_events_register_stream: name(bot.default_events_register_stream_id),
    default_all_public_streams: !!bot.default_all_public_streams,
    services: bot.bot_type === BOT_OUTGOING_WEBHOOK ? services.filter((s) => s.user_id === bot.id).map(formatBotService) : [],
  };
}
