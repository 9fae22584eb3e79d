import { JsonableError, badRequest } from '../errors.js';
import type { Narrow } from '../lib/narrow/terms.js';
import type { ZulipEvent } from './bus.js';
import { runtimeCounters } from '../lib/runtime_counters.js';

/**
 * One client's event queue (Zulip's ClientDescriptor + EventQueue): what the client asked
 * for at POST /register, the events not yet acknowledged, and the held GET /events request.
 * Kept deliberately small: a server holds tens of thousands of these.
 */

/** client_capabilities we act on, as bits of EventQueue.capabilities. */
export const CAPABILITIES = {
  notification_settings_null: 1 << 0,
  bulk_message_deletion: 1 << 1,
  user_avatar_url_field_optional: 1 << 2,
  stream_typing_notifications: 1 << 3,
  user_settings_object: 1 << 4,
  linkifier_url_template: 1 << 5,
  user_list_incomplete: 1 << 6,
  include_deactivated_groups: 1 << 7,
  archived_channels: 1 << 8,
  empty_topic_name: 1 << 9,
  simplified_presence_events: 1 << 10,
  individual_emoji_changes: 1 << 11,
} as const;
export type CapabilityName = keyof typeof CAPABILITIES;

export function capabilityBits(caps: Record<string, boolean>): number {
  let bits = 0;
  for (const [name, bit] of Object.entries(CAPABILITIES)) if (caps[name] === true) bits |= bit;
  return bits;
}

export function capabilityBit(name: string): number {
  return (CAPABILITIES as Record<string, number>)[name] ?? 0;
}

/** Everything POST /register fixed about a queue; persisted with it. */
export interface QueueSpec {
  userId: number;
  realmId: number;
  /** null: every event type. */
  eventTypes: string[] | null;
  applyMarkdown: boolean;
  clientGravatar: boolean;
  slimPresence: boolean;
  allPublicStreams: boolean;
  narrow: Narrow;
  capabilities: number;
  /** Seconds without a connected client before the queue is garbage-collected. */
  timeoutSeconds: number;
  clientName: string;
  /** What "" is shown as to clients without the empty_topic_name capability. */
  emptyTopicName: string;
  /** Whether the user may see public channels (not a guest): narrowed queues then also get public-channel messages. */
  seesPublicStreams: boolean;
}

/**
 * An event shared by every queue that receives the same form of it: serialized to JSON
 * once, then each queue appends only its own `id` (and `flags`/`local_message_id`).
 */
export class SharedEvent {
  private json: string | undefined;

  constructor(readonly event: ZulipEvent) {}

  /** The event's JSON without the closing brace. */
  prefix(): string {
    this.json ??= JSON.stringify(this.event);
    return this.json.slice(0, -1);
  }
}

export const HEARTBEAT = new SharedEvent({ type: 'heartbeat' });

/**
 * A queued event: a shared event plus this queue's additions, or (after a restart) the
 * complete JSON it was stored as.
 */
export interface QueuedEvent {
  id: number;
  shared: SharedEvent | null;
  raw: string | null;
  flags: readonly string[] | undefined;
  localId: string | undefined;
}

export function queuedEventJson(e: QueuedEvent): string {
  if (e.raw !== null) return e.raw;
  let out = e.shared!.prefix();
  if (e.flags !== undefined) out += `,"flags":${JSON.stringify(e.flags)}`;
  if (e.localId !== undefined) out += `,"local_message_id":${JSON.stringify(e.localId)}`;
  return `${out},"id":${e.id}}`;
}

/** The client connected to a queue: a held GET /events (local or on another process). */
export interface Waiter {
  /** Answers the held request with this JSON array of events; called at most once. */
  respond(eventsJson: string): void;
  timer: NodeJS.Timeout | null;
}

// Many clients register with identical event_types lists; they share one Set.
const internedTypeSets = new Map<string, ReadonlySet<string>>();
function internTypes(types: string[] | null): ReadonlySet<string> | null {
  if (types === null) return null;
  const key = [...new Set(types)].sort().join('\u0000');
  let set = internedTypeSets.get(key);
  if (!set) {
    set = new Set(types);
    internedTypeSets.set(key, set);
  }
  return set;
}

export class BadEventQueueIdError extends JsonableError {
  constructor(queueId: string) {
    super(`Bad event queue ID: ${queueId}`, 'BAD_EVENT_QUEUE_ID', 400, { queue_id: queueId });
  }
}

/** What a queue is persisted as across restarts and between processes. */
export interface QueueSnapshot {
  id: string;
  spec: QueueSpec;
  nextEventId: number;
  newestPrunedId: number;
  lastConnection: number;
  events: string[];
}

export class EventQueue {
  readonly eventTypes: ReadonlySet<string> | null;
  readonly userId: number;
  readonly realmId: number;
  events: QueuedEvent[] = [];
  nextEventId = 0;
  newestPrunedId = -1;
  /** ms since epoch of the last connect or disconnect. */
  lastConnection = Date.now();
  waiter: Waiter | null = null;
  /** Set while this process is replaying the shared log into an adopted queue (Redis backend). */
  catchUp: { streamId: string; run: () => void }[] | null = null;
  /** Log entries at or before this position were already applied (Redis backend). */
  appliedThrough: string | null = null;

  constructor(
    readonly id: string,
    readonly spec: QueueSpec,
  ) {
    this.eventTypes = internTypes(spec.eventTypes);
    this.userId = spec.userId;
    this.realmId = spec.realmId;
  }

  has(capability: CapabilityName): boolean {
    return (this.spec.capabilities & CAPABILITIES[capability]) !== 0;
  }

  wants(type: string): boolean {
    return this.eventTypes === null || this.eventTypes.has(type);
  }

  push(shared: SharedEvent, flags?: readonly string[], localId?: string): void {
    this.events.push({ id: this.nextEventId++, shared, raw: null, flags, localId });
    if (shared !== HEARTBEAT) runtimeCounters.eventsQueued++;
  }

  /** Drops events the client acknowledged; Zulip's checks that the acknowledgement makes sense. */
  acknowledge(lastEventId: number): void {
    if (lastEventId < this.newestPrunedId) {
      throw badRequest(`An event newer than ${lastEventId} has already been pruned!`);
    }
    let n = 0;
    while (n < this.events.length && this.events[n]!.id <= lastEventId) n++;
    if (n > 0) {
      this.newestPrunedId = this.events[n - 1]!.id;
      this.events = this.events.slice(n);
    }
    if (lastEventId !== this.newestPrunedId) throw badRequest(`Event ${lastEventId} was not in this queue`);
  }

  eventsJson(): string {
    return `[${this.events.map(queuedEventJson).join(',')}]`;
  }

  /** Answers the held request, if any, with the queue's current contents. */
  finishWaiter(): boolean {
    const w = this.waiter;
    if (!w) return false;
    this.disconnect();
    w.respond(this.eventsJson());
    return true;
  }

  connect(waiter: Waiter): void {
    this.waiter = waiter;
    this.lastConnection = Date.now();
  }

  disconnect(): void {
    const w = this.waiter;
    if (!w) return;
    if (w.timer) clearTimeout(w.timer);
    w.timer = null;
    this.waiter = null;
    this.lastConnection = Date.now();
  }

  expired(now: number): boolean {
    return this.waiter === null && now - this.lastConnection >= this.spec.timeoutSeconds * 1000;
  }

  snapshot(): QueueSnapshot {
    return {
      id: this.id,
      spec: this.spec,
      nextEventId: this.nextEventId,
      newestPrunedId: this.newestPrunedId,
      lastConnection: this.lastConnection,
      events: this.events.map(queuedEventJson),
    };
  }

  static restore(s: QueueSnapshot): EventQueue {
    const q = new EventQueue(s.id, s.spec);
    q.nextEventId = s.nextEventId;
    q.newestPrunedId = s.newestPrunedId;
    q.lastConnection = s.lastConnection;
    q.events = s.events.map((raw) => ({
      id: (JSON.parse(raw) as { id: number }).id,
      shared: null,
      raw,
      flags: undefined,
      localId: undefined,
    }));
    return q;
  }
}
