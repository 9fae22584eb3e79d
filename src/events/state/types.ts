import type { Realm, User } from '../../db/tables.js';
import type { Services } from '../../services.js';

/** The POST /register options every area's initial state may depend on. */
export interface RegisterOptions {
  applyMarkdown: boolean;
  clientGravatar: boolean;
  includeSubscribers: boolean | 'partial';
  slimPresence: boolean;
  /** POST /register presence_history_limit_days: how far back `presences` reaches (default 14 days). */
  presenceHistoryLimitDays?: number;
  allPublicStreams: boolean;
  narrow: { operator: string; operand: unknown; negated?: boolean }[];
  clientCapabilities: Record<string, boolean>;
  /** Size cap for realm_users when the client declared user_list_incomplete. */
  userListIncomplete: boolean;
}

export interface StateContext {
  services: Services;
  realm: Realm;
  user: User;
  options: RegisterOptions;
  /** Whether the client asked for this event type's state (fetch_event_types / event_types). */
  want(eventType: string): boolean;
}

/**
 * One area's contribution to POST /register: the keys Zulip's fetch_initial_state_data
 * returns for the event types this area owns. Each area exports one from
 * src/events/state/<area>.ts; src/events/register.ts calls them all.
 */
export type StateFetcher = (ctx: StateContext) => Promise<Record<string, unknown>>;
