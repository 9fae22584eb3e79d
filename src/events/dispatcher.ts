import type { FastifyBaseLogger } from 'fastify';
import type { EventEnvelope, EventRecipient } from './bus.js';
import { Delivery } from './deliver.js';
import type { EventQueue } from './queue.js';

/** The queues this process serves, indexed for delivery. */
export class LocalQueues {
  private readonly byId = new Map<string, EventQueue>();
  private readonly byUser = new Map<number, EventQueue[]>();
  /** Queues that also see public-channel messages they are not a recipient of. */
  private readonly realmWide = new Map<number, EventQueue[]>();

  get size(): number {
    return this.byId.size;
  }

  get(id: string): EventQueue | undefined {
    return this.byId.get(id);
  }

  all(): IterableIterator<EventQueue> {
    return this.byId.values();
  }

  forUser(userId: number): readonly EventQueue[] | undefined {
    return this.byUser.get(userId);
  }

  realmWideFor(realmId: number): readonly EventQueue[] | undefined {
    return this.realmWide.get(realmId);
  }

  add(q: EventQueue): void {
    this.byId.set(q.id, q);
    push(this.byUser, q.userId, q);
    if (isRealmWide(q)) push(this.realmWide, q.realmId, q);
  }

  remove(q: EventQueue): void {
    if (this.byId.get(q.id) !== q) return;
    this.byId.delete(q.id);
    pull(this.byUser, q.userId, q);
    if (isRealmWide(q)) pull(this.realmWide, q.realmId, q);
  }
}

// As in Zulip, a narrowed queue is fed from every public channel, then filtered by its narrow.
function isRealmWide(q: EventQueue): boolean {
  return q.spec.seesPublicStreams && (q.spec.allPublicStreams || q.spec.narrow.length > 0);
}

function push<K>(map: Map<K, EventQueue[]>, key: K, q: EventQueue): void {
  const list = map.get(key);
  if (list) list.push(q);
  else map.set(key, [q]);
}

function pull<K>(map: Map<K, EventQueue[]>, key: K, q: EventQueue): void {
  const list = map.get(key);
  if (!list) return;
  const i = list.indexOf(q);
  if (i >= 0) list.splice(i, 1);
  if (list.length === 0) map.delete(key);
}

/** Compares Redis stream IDs ("<ms>-<seq>"). */
export function compareStreamIds(a: string, b: string): number {
  const [am, as] = a.split('-');
  const [bm, bs] = b.split('-');
  const d = Number(am) - Number(bm);
  if (d !== 0) return d;
  return Number(as ?? 0) - Number(bs ?? 0);
}

interface Job {
  delivery: Delivery;
  streamId: string | undefined;
  /** Next recipient to process; then the realm-wide queues. */
  index: number;
  realmWideDone: boolean;
}

/** How long one slice of a fan-out may hold the event loop before yielding. */
const SLICE_MS = 8;
/**
 * How long one slice of answers to held polls may run. Answering a poll costs ~11 µs, but
 * each answer brings its client's next poll back into the following turn of the event loop,
 * where parsing and holding it costs 3-4 times as much: an 8 ms slice of answers made the
 * next turn ~35 ms long (10,000 queues, bench fan-out), a 4 ms slice about half that.
 */
const ANSWER_SLICE_MS = 4;
const CHECK_EVERY = 32;

/**
 * Delivers published events to this process's queues, in publication order. A large fan-out
 * (a message to a 10,000-member channel) is cut into slices of a few milliseconds with the
 * event loop free between them; later events wait behind it so every queue sees the same order.
 * Delivery finds queues through the per-user index: no scan over all queues.
 */
export class Dispatcher {
  private readonly jobs: Job[] = [];
  private head = 0;
  private running = false;
  /** Queues with a held poll and new events, answered at the end of this event-loop turn. */
  private readonly ready = new Set<EventQueue>();
  private answering = false;

  constructor(
    private readonly queues: LocalQueues,
    private readonly log: FastifyBaseLogger,
  ) {}

  get pending(): number {
    return this.jobs.length - this.head;
  }

  dispatch(envelope: EventEnvelope, streamId?: string): void {
    this.jobs.push({ delivery: new Delivery(envelope), streamId, index: 0, realmWideDone: false });
    if (!this.running) this.run();
  }

  /** Applies one published event to one queue only (replaying the shared log into an adopted queue). */
  applyTo(q: EventQueue, envelope: EventEnvelope): void {
    const delivery = new Delivery(envelope);
    let found = false;
    for (const r of envelope.users) {
      if ((typeof r === 'number' ? r : r.id) !== q.userId) continue;
      found = true;
      delivery.deliverTo(q, typeof r === 'number' ? undefined : r.flags);
      break;
    }
    if (!found && isRealmWide(q) && q.realmId === envelope.realmId && publicMessage(envelope)) delivery.deliverTo(q, undefined);
  }

  private run(): void {
    this.running = true;
    const start = performance.now();
    let work = 0;
    try {
      while (this.head < this.jobs.length) {
        const job = this.jobs[this.head]!;
        const users = job.delivery.envelope.users;
        while (job.index < users.length) {
          this.deliverToUser(job, users[job.index++]!);
          if (++work % CHECK_EVERY === 0 && performance.now() - start > SLICE_MS) return this.yieldSlice();
        }
        if (!job.realmWideDone) {
          job.realmWideDone = true;
          this.deliverRealmWide(job);
        }
        this.jobs[this.head++] = undefined as unknown as Job;
        if (this.head > 1024 && this.head * 2 > this.jobs.length) {
          this.jobs.splice(0, this.head);
          this.head = 0;
        }
      }
      this.jobs.length = 0;
      this.head = 0;
      this.running = false;
    } catch (e) {
      // A bug in one event's delivery must not stop delivery of the others.
      this.log.error({ err: e }, 'event delivery failed');
      this.head++;
      this.yieldSlice();
    }
  }

  private yieldSlice(): void {
    setImmediate(() => this.run());
  }

  private deliverToUser(job: Job, r: EventRecipient): void {
    const userId = typeof r === 'number' ? r : r.id;
    const list = this.queues.forUser(userId);
    if (!list) return;
    const flags = typeof r === 'number' ? undefined : r.flags;
    for (let i = 0; i < list.length; i++) this.deliverToQueue(job, list[i]!, flags);
  }

  private deliverRealmWide(job: Job): void {
    const env = job.delivery.envelope;
    if (!publicMessage(env)) return;
    const list = this.queues.realmWideFor(env.realmId);
    if (!list || list.length === 0) return;
    const recipients = new Set(env.users.map((r) => (typeof r === 'number' ? r : r.id)));
    for (const q of [...list]) if (!recipients.has(q.userId)) this.deliverToQueue(job, q, undefined);
  }

  private deliverToQueue(job: Job, q: EventQueue, flags: readonly string[] | undefined): void {
    if (q.catchUp) {
      q.catchUp.push({ streamId: job.streamId ?? '0-0', run: () => this.deliverToQueue(job, q, flags) });
      return;
    }
    if (job.streamId !== undefined && q.appliedThrough !== null) {
      if (compareStreamIds(job.streamId, q.appliedThrough) <= 0) return;
      q.appliedThrough = null;
    }
    try {
      if (job.delivery.deliverTo(q, flags) && q.waiter) this.answerLater(q);
    } catch (e) {
      // One queue's failure (say, a malformed event) must not cost the other queues their events.
      this.log.error({ err: e, queue: q.id }, 'event delivery to a queue failed');
    }
  }

  /**
   * A held poll is answered once the events published in the same turn of the event loop
   * have all been queued (a group commit publishes many messages at once): one response
   * carries them all, instead of one response for the first and a re-poll for the rest.
   */
  private answerLater(q: EventQueue): void {
    this.ready.add(q);
    if (!this.answering) {
      this.answering = true;
      setImmediate(() => this.answerReady());
    }
  }

  /** Answers ready polls in slices, like delivery, so that ten thousand responses never stall the loop. */
  private answerReady(): void {
    const start = performance.now();
    let n = 0;
    for (const q of this.ready) {
      this.ready.delete(q);
      try {
        q.finishWaiter();
      } catch (e) {
        this.log.error({ err: e, queue: q.id }, 'answering a held poll failed');
      }
      if (++n % CHECK_EVERY === 0 && performance.now() - start > ANSWER_SLICE_MS) {
        setImmediate(() => this.answerReady());
        return;
      }
    }
    this.answering = false;
  }
}

function publicMessage(env: EventEnvelope): boolean {
  return env.event.type === 'message' && env.message?.publicStream === true;
}
