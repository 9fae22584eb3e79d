import type { Realm, User } from '../db/tables.js';
import type { Services } from '../services.js';
import { badRequest } from '../errors.js';
import { isGuest } from '../lib/roles.js';
import { realmSettings } from '../lib/realm_settings.js';
import { checkEventNarrow } from '../lib/narrow/memory.js';
import type { Narrow } from '../lib/narrow/terms.js';
import {
  MAX_MESSAGE_LENGTH,
  MAX_STREAM_NAME_LENGTH,
  MAX_TOPIC_LENGTH,
  ZULIP_FEATURE_LEVEL,
  ZULIP_MERGE_BASE,
  ZULIP_VERSION,
} from '../version.js';
import { STATE_FETCHERS } from './state/index.js';
import type { RegisterOptions, StateContext } from './state/types.js';
import { capabilityBits } from './queue.js';
import { MAX_QUEUE_TIMEOUT_SECONDS, MOBILE_QUEUE_TIMEOUT_SECONDS } from './queue_manager.js';

export interface RegisterRequest {
  eventTypes: string[] | null;
  fetchEventTypes: string[] | null;
  applyMarkdown: boolean;
  clientGravatar: boolean;
  includeSubscribers: boolean | 'partial';
  slimPresence: boolean;
  presenceHistoryLimitDays: number | undefined;
  allPublicStreams: boolean;
  clientCapabilities: Record<string, boolean>;
  narrow: Narrow;
  /** Seconds, 'mobile', or absent for the server default. */
  idleQueueTimeout: number | 'mobile' | undefined;
  clientName: string;
}

/**
 * Zulip's want(): a group of register keys is fetched when its event type is in
 * fetch_event_types, or (without it) in event_types; with neither, everything is fetched.
 */
export function wantFunction(eventTypes: string[] | null, fetchEventTypes: string[] | null): (type: string) => boolean {
  const list = fetchEventTypes ?? eventTypes;
  if (list === null) return () => true;
  const set = new Set(list);
  return (type) => set.has(type);
}

export function checkRegister(user: User, req: RegisterRequest): void {
  checkEventNarrow(req.narrow);
  if (req.allPublicStreams && isGuest(user)) throw badRequest('User not authorized for this query');
}

function queueTimeout(services: Services, requested: RegisterRequest['idleQueueTimeout']): number {
  if (requested === undefined) return services.config.events.queueTimeoutSeconds;
  if (requested === 'mobile') return MOBILE_QUEUE_TIMEOUT_SECONDS;
  return Math.min(requested, MAX_QUEUE_TIMEOUT_SECONDS);
}

/**
 * POST /register: allocates the event queue first, then fetches every area's initial
 * state, so a change committed while the state is read still reaches the client as an
 * event (at worst an event the state already reflects, never a lost one).
 */
export async function doRegister(services: Services, realm: Realm, user: User, req: RegisterRequest): Promise<Record<string, unknown>> {
  const settings = realmSettings(realm);
  const timeoutSeconds = queueTimeout(services, req.idleQueueTimeout);
  const queueId = await services.queues.register({
    userId: user.id,
    realmId: realm.id,
    eventTypes: req.eventTypes,
    applyMarkdown: req.applyMarkdown,
    clientGravatar: req.clientGravatar,
    slimPresence: req.slimPresence,
    allPublicStreams: req.allPublicStreams,
    narrow: req.narrow,
    capabilities: capabilityBits(req.clientCapabilities),
    timeoutSeconds,
    clientName: req.clientName,
    emptyTopicName: settings.empty_topic_display_name,
    seesPublicStreams: !isGuest(user),
  });
  const options: RegisterOptions = {
    applyMarkdown: req.applyMarkdown,
    clientGravatar: req.clientGravatar,
    includeSubscribers: req.includeSubscribers,
    slimPresence: req.slimPresence,
    presenceHistoryLimitDays: req.presenceHistoryLimitDays,
    allPublicStreams: req.allPublicStreams,
    narrow: req.narrow,
    clientCapabilities: req.clientCapabilities,
    userListIncomplete: req.clientCapabilities.user_list_incomplete === true,
  };
  const ctx: StateContext = { services, realm, user, options, want: wantFunction(req.eventTypes, req.fetchEventTypes) };
  let parts: Record<string, unknown>[];
  try {
    parts = await Promise.all(STATE_FETCHERS.map((fetch) => fetch(ctx)));
  } catch (e) {
    await services.queues.delete(user.id, queueId).catch(() => undefined);
    throw e;
  }
  const state: Record<string, unknown> = {
    queue_id: queueId,
    idle_queue_timeout_secs: timeoutSeconds,
    last_event_id: -1,
    zulip_version: ZULIP_VERSION,
    zulip_feature_level: ZULIP_FEATURE_LEVEL,
    zulip_merge_base: ZULIP_MERGE_BASE,
    max_message_length: MAX_MESSAGE_LENGTH,
    max_topic_length: MAX_TOPIC_LENGTH,
    max_stream_name_length: MAX_STREAM_NAME_LENGTH,
    event_queue_longpoll_timeout_seconds: services.queues.longpollTimeoutSeconds,
    server_timestamp: Date.now() / 1000,
  };
  for (const part of parts) Object.assign(state, part);
  return state;
}
