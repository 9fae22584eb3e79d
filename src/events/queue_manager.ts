import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { EventBus } from './bus.js';
import { Dispatcher, LocalQueues } from './dispatcher.js';
import { BadEventQueueIdError, EventQueue, HEARTBEAT, type QueueSpec, type Waiter } from './queue.js';

export interface PollRequest {
  userId: number;
  queueId: string;
  lastEventId: number;
  dontBlock: boolean;
}

/** Answers a poll with a JSON array of events. */
export type Respond = (eventsJson: string) => void;
/** Called when the polling client goes away before it was answered. */
export type Cancel = () => void;

/** Zulip's default idle timeout for "mobile" queues, and the cap on any requested timeout. */
export const MOBILE_QUEUE_TIMEOUT_SECONDS = 12 * 60 * 60;
export const MAX_QUEUE_TIMEOUT_SECONDS = 7 * 24 * 60 * 60;

/**
 * The event-queue service behind POST /register, GET /events and DELETE /events. The
 * embedded backend keeps queues in this process; the Redis backend shares them between
 * processes. Both deliver through the same Dispatcher and hold polls the same way.
 */
export abstract class QueueManager {
  protected readonly local = new LocalQueues();
  protected readonly dispatcher: Dispatcher;
  private gcTimer: NodeJS.Timeout | null = null;
  protected closing = false;

  /**
   * `databaseId` is the identity of the database the queues belong to (db/identity.ts): saved
   * or shared queues are only ever restored into that database.
   */
  constructor(
    protected readonly config: Config,
    protected readonly bus: EventBus,
    protected readonly log: FastifyBaseLogger,
    protected readonly databaseId: string,
  ) {
    this.dispatcher = new Dispatcher(this.local, log);
  }

  /** Restores persisted queues, connects, and starts garbage collection. */
  async start(): Promise<void> {
    await this.open();
    const sweepMs = Math.max(250, Math.min(60_000, (this.config.events.queueTimeoutSeconds * 1000) / 4));
    this.gcTimer = setInterval(() => void this.collectGarbage(), sweepMs);
    this.gcTimer.unref();
  }

  protected abstract open(): Promise<void>;

  /** Resolves when the backend's shared store (Redis) answers; in-memory queues always do. */
  async ping(): Promise<void> {}

  /** Whether the server is shutting down (held polls are being released). */
  get isClosing(): boolean {
    return this.closing;
  }

  /** Number of queues this process holds (for tests and metrics). */
  get queueCount(): number {
    return this.local.size;
  }

  /** Number of GET /events requests this process holds open (for metrics). */
  get heldPollCount(): number {
    let n = 0;
    for (const q of this.local.all()) if (q.waiter) n++;
    return n;
  }

  /** Whether this process holds a GET /events open for the queue (for tests). */
  isHeld(queueId: string): boolean {
    return this.local.get(queueId)?.waiter != null;
  }

  /** Seconds clients should wait for GET /events before giving up (always above the heartbeat). */
  get longpollTimeoutSeconds(): number {
    return Math.max(90, Math.ceil(this.config.events.heartbeatSeconds * 1.1) + 20);
  }

  /** Allocates a queue; events published from now on reach it. */
  async register(spec: QueueSpec): Promise<string> {
    const q = new EventQueue(randomUUID(), spec);
    this.local.add(q);
    await this.announce(q);
    return q.id;
  }

  /**
   * Which of these users have an event queue that receives messages, in any process (the test
   * of Zulip's receiver_is_off_zulip, for notifications).
   */
  async usersWithMessageQueues(userIds: readonly number[]): Promise<Set<number>> {
    return new Set(userIds.filter((id) => this.local.forUser(id)?.some((q) => q.wants('message'))));
  }

  /** Backend hook: make a new queue known beyond this process. */
  protected async announce(_q: EventQueue): Promise<void> {}

  /**
   * GET /events: acknowledges through `lastEventId`, then answers at once when events are
   * waiting (or `dontBlock`), otherwise holds the request until an event or a heartbeat.
   * Throws BAD_EVENT_QUEUE_ID for an unknown queue or someone else's.
   */
  abstract poll(req: PollRequest, respond: Respond): Promise<Cancel | null>;

  /** DELETE /events. */
  abstract delete(userId: number, queueId: string): Promise<void>;

  protected localQueueFor(userId: number, queueId: string): EventQueue | undefined {
    const q = this.local.get(queueId);
    if (q && q.userId !== userId) throw new BadEventQueueIdError(queueId);
    return q;
  }

  protected pollLocal(q: EventQueue, req: PollRequest, respond: Respond): Cancel | null {
    q.acknowledge(req.lastEventId);
    q.finishWaiter();
    if (q.events.length > 0 || req.dontBlock) {
      q.lastConnection = Date.now();
      respond(q.eventsJson());
      return null;
    }
    const waiter: Waiter = { respond, timer: null };
    waiter.timer = setTimeout(() => {
      if (q.waiter !== waiter) return;
      q.push(HEARTBEAT);
      q.finishWaiter();
    }, this.heartbeatMs());
    waiter.timer.unref();
    q.connect(waiter);
    return () => {
      if (q.waiter === waiter) q.disconnect();
    };
  }

  /**
   * Zulip spreads heartbeats over 45-55 s so reconnecting clients do not arrive in lockstep.
   * Whole seconds: Node keeps one timer list per distinct duration.
   */
  private heartbeatMs(): number {
    const s = this.config.events.heartbeatSeconds;
    const spread = s >= 10 ? Math.round((Math.random() - 0.5) * 0.2 * s) : 0;
    return (s + spread) * 1000;
  }

  protected removeLocal(q: EventQueue): void {
    q.finishWaiter();
    this.local.remove(q);
  }

  /** Deletes queues whose client has been gone longer than their timeout. */
  protected async collectGarbage(): Promise<void> {
    const now = Date.now();
    const expired: EventQueue[] = [];
    for (const q of this.local.all()) if (q.catchUp === null && q.expired(now)) expired.push(q);
    for (const q of expired) this.local.remove(q);
    if (expired.length) await this.forget(expired);
  }

  /** Backend hook: queues this process deleted. */
  protected async forget(_queues: EventQueue[]): Promise<void> {}

  /** Before the HTTP server closes: answers every held poll with a heartbeat so no request keeps it open. */
  releaseWaiters(): void {
    this.closing = true;
    for (const q of this.local.all()) {
      if (!q.waiter) continue;
      q.push(HEARTBEAT);
      q.finishWaiter();
    }
  }

  /** After the HTTP server closed: persists the queues for the next start. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.gcTimer) clearInterval(this.gcTimer);
    this.gcTimer = null;
    this.releaseWaiters();
    await this.persist();
  }

  protected abstract persist(): Promise<void>;
}
