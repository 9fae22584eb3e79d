import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';
import { lazyRequire } from '../../lib/lazy.js';
import { redisNamespace } from '../../db/identity.js';
import { JsonableError, type ErrorCode } from '../../errors.js';
import type { EventBus } from '../bus.js';
import { BadEventQueueIdError, EventQueue, type QueueSnapshot } from '../queue.js';
import { MAX_QUEUE_TIMEOUT_SECONDS, QueueManager, type Cancel, type PollRequest, type Respond } from '../queue_manager.js';
import { decodeEnvelope, encodeEnvelope } from './wire.js';

const ioredis = lazyRequire<typeof import('ioredis')>('ioredis');

/**
 * Scaled-out mode: several server processes share event queues through Redis.
 *
 * - Every key and channel is under PARLEY_REDIS_PREFIX and the database's identity
 *   (db/identity.ts): processes on another database share neither the log nor the queues.
 * - Every published event is appended once to one Redis stream (the log); every process
 *   reads the log and delivers each entry to the queues it owns, exactly like the embedded
 *   mode. The hot path costs one XADD per event, whatever the number of queues.
 * - A queue is owned by the process that registered it and lives in its memory. Redis
 *   knows each queue's user and owner (`q:<id>`), so any process can serve any queue: a
 *   GET /events reaching another process is forwarded to the owner over pub/sub and
 *   answered from there (load balancers that route by queue_id avoid the hop).
 * - A process shutting down writes its queues to Redis with the log position they reflect
 *   and marks them orphaned; another process (or itself, restarted) adopts them, replaying
 *   the log entries published since, so no event is lost. A process that dies without
 *   shutting down loses its queues, as Zulip's Tornado does: clients get BAD_EVENT_QUEUE_ID
 *   and register again.
 */

interface RpcPoll {
  k: 'poll';
  r: string;
  f: string;
  q: string;
  u: number;
  l: number;
  d: boolean;
}
interface RpcDelete {
  k: 'del';
  r: string;
  f: string;
  q: string;
  u: number;
}
interface RpcCancel {
  k: 'cancel';
  r: string;
}
interface RpcHeld {
  k: 'held';
  r: string;
}
interface RpcResult {
  k: 'res';
  r: string;
  /** JSON array of events. */
  e?: string;
  err?: { msg: string; code: ErrorCode; status: number; extra: Record<string, unknown> };
  /** The target does not own the queue (any more): look it up again. */
  retry?: boolean;
}
type Rpc = RpcPoll | RpcDelete | RpcCancel | RpcHeld | RpcResult;

interface PendingCall {
  onHeld: () => void;
  onResult: (m: RpcResult) => void;
  timer: NodeJS.Timeout;
}

/** Orphaned queue record: the snapshot and the log position it reflects. */
interface OrphanRecord {
  snap: QueueSnapshot;
  pos: string;
}

const LIVENESS_MS = 15_000;
const LIVENESS_REFRESH_MS = 5_000;
const REPLAY_BATCH = 1000;
/** How long an owner may take to answer a forwarded request before it is presumed gone. */
const ANSWER_MS = 5_000;
const READ_BATCH = 1000;

// Claims a queue whose owner is gone: returns {1, record} (now ours), {2, owner} (owner
// alive: forward), or {0} (no such queue, or lost with its owner).
const CLAIM_SCRIPT = `
local o = redis.call('HGET', KEYS[1], 'o')
if not o then
  redis.call('SREM', KEYS[2], ARGV[3])
  return {0}
end
if o ~= '' and o ~= ARGV[1] and redis.call('EXISTS', ARGV[2] .. o) == 1 then return {2, o} end
local s = redis.call('HGET', KEYS[1], 's')
redis.call('SREM', KEYS[2], ARGV[3])
if not s then
  redis.call('DEL', KEYS[1])
  return {0}
end
redis.call('HSET', KEYS[1], 'o', ARGV[1])
redis.call('HDEL', KEYS[1], 's')
return {1, s}
`;

/** The shared event log: a Redis stream under a database's namespace. */
function eventLogKey(config: Config, databaseId: string): string {
  return `${redisNamespace(config.events.redisPrefix, databaseId)}log`;
}

/**
 * Appends every event sent on `bus` to the shared log, from which every server process
 * delivers it to the queues it owns. Returns a function that stops and waits for the appends
 * still in flight.
 */
function publishToEventLog(redis: Redis, key: string, config: Config, bus: EventBus, log: FastifyBaseLogger): () => Promise<void> {
  const inFlight = new Set<Promise<unknown>>();
  const unsubscribe = bus.subscribe((envelope) => {
    const append = redis
      .xadd(key, 'MAXLEN', '~', String(config.events.redisLogLength), '*', 'd', encodeEnvelope(envelope))
      .catch((e: unknown) => log.error({ err: e }, 'could not publish an event'))
      .finally(() => inFlight.delete(append));
    inFlight.add(append);
  });
  return async () => {
    unsubscribe();
    await Promise.all(inFlight);
  };
}

/**
 * For a process that changes state but serves no clients (the command-line tools): sends its
 * events through the shared log to the server processes, which deliver them to their queues.
 * It holds, adopts and saves no queue, and starts no timer.
 */
export class RedisEventPublisher {
  private constructor(
    private readonly redis: Redis,
    private readonly stop: () => Promise<void>,
  ) {}

  static async connect(config: Config, bus: EventBus, log: FastifyBaseLogger, databaseId: string): Promise<RedisEventPublisher> {
    const redis = new (ioredis().Redis)(config.redisUrl!, { lazyConnect: true, maxRetriesPerRequest: 2 });
    redis.on('error', (e: Error) => log.warn({ err: e }, 'redis connection error'));
    await redis.connect();
    return new RedisEventPublisher(redis, publishToEventLog(redis, eventLogKey(config, databaseId), config, bus, log));
  }

  /** Waits until every event sent so far is in the log. */
  async close(): Promise<void> {
    await this.stop();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

export class RedisQueueManager extends QueueManager {
  private readonly procId = randomUUID().slice(0, 13);
  private readonly prefix = redisNamespace(this.config.events.redisPrefix, this.databaseId);
  private readonly logKey = eventLogKey(this.config, this.databaseId);
  private readonly orphansKey = `${this.prefix}orphans`;
  private cmd!: Redis;
  private reader!: Redis;
  private sub!: Redis;
  private stopPublishing: (() => Promise<void>) | null = null;
  private lastId = '0-0';
  private reading: Promise<void> | null = null;
  private stopped = false;
  private livenessTimer: NodeJS.Timeout | null = null;
  private seq = 0;
  private readonly calls = new Map<string, PendingCall>();
  /** Polls forwarded to us, by request ID. */
  private readonly remoteWaiters = new Map<string, Cancel>();
  private readonly adopting = new Map<string, Promise<EventQueue | string | null>>();

  private qkey(id: string): string {
    return `${this.prefix}q:${id}`;
  }

  private procKey(id: string): string {
    return `${this.prefix}proc:${id}`;
  }

  private channel(procId: string): string {
    return `${this.prefix}rpc:${procId}`;
  }

  private get broadcast(): string {
    return `${this.prefix}bcast`;
  }

  /** How long a queue's record outlives its last refresh (the owner refreshes it at every sweep). */
  private ttlSeconds(q: EventQueue): number {
    return q.spec.timeoutSeconds + 300;
  }

  protected async open(): Promise<void> {
    const url = this.config.redisUrl!;
    const onError = (e: Error): void => this.log.warn({ err: e }, 'redis connection error');
    this.cmd = new (ioredis().Redis)(url, { enableAutoPipelining: true, lazyConnect: true });
    this.reader = new (ioredis().Redis)(url, { lazyConnect: true });
    this.sub = new (ioredis().Redis)(url, { lazyConnect: true });
    for (const c of [this.cmd, this.reader, this.sub]) c.on('error', onError);
    await Promise.all([this.cmd.connect(), this.reader.connect(), this.sub.connect()]);
    this.cmd.defineCommand('parleyClaim', { numberOfKeys: 2, lua: CLAIM_SCRIPT });

    await this.cmd.set(this.procKey(this.procId), '1', 'PX', LIVENESS_MS);
    this.livenessTimer = setInterval(() => {
      void this.cmd.set(this.procKey(this.procId), '1', 'PX', LIVENESS_MS).catch(() => undefined);
    }, LIVENESS_REFRESH_MS);
    this.livenessTimer.unref();

    this.sub.on('message', (channel: string, text: string) => {
      if (channel === this.broadcast) void this.adoptOrphans();
      else this.onRpc(JSON.parse(text) as Rpc);
    });
    await this.sub.subscribe(this.channel(this.procId), this.broadcast);

    const last = await this.cmd.xrevrange(this.logKey, '+', '-', 'COUNT', 1);
    this.lastId = last[0]?.[0] ?? '0-0';
    this.reading = this.readLoop();
    this.stopPublishing = publishToEventLog(this.cmd, this.logKey, this.config, this.bus, this.log);
    void this.adoptOrphans();
  }

  override async ping(): Promise<void> {
    await this.cmd.ping();
  }

  /** Reads the shared log in order and delivers each entry to this process's queues. */
  private async readLoop(): Promise<void> {
    while (!this.stopped) {
      let res: [string, [string, string[]][]][] | null;
      try {
        res = (await this.reader.xread('COUNT', READ_BATCH, 'BLOCK', 5000, 'STREAMS', this.logKey, this.lastId)) as
          | [string, [string, string[]][]][]
          | null;
      } catch (e) {
        if (this.stopped) return;
        this.log.warn({ err: e }, 'reading the event log failed; retrying');
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      for (const [, entries] of res ?? []) {
        for (const [id, fields] of entries) {
          this.lastId = id;
          const text = fields[1];
          if (text === undefined) continue;
          try {
            this.dispatcher.dispatch(decodeEnvelope(text), id);
          } catch (e) {
            this.log.error({ err: e }, 'could not deliver an event');
          }
        }
      }
    }
  }

  protected override async announce(q: EventQueue): Promise<void> {
    const key = this.qkey(q.id);
    await Promise.all([this.cmd.hset(key, 'u', String(q.userId), 'o', this.procId), this.cmd.expire(key, this.ttlSeconds(q))]);
    if (q.wants('message')) {
      const userKey = this.userQueuesKey(q.userId);
      // Outlives any of the user's queue records (each member is checked against its record).
      await Promise.all([this.cmd.sadd(userKey, q.id), this.cmd.expire(userKey, MAX_QUEUE_TIMEOUT_SECONDS + 300)]);
    }
  }

  /** The IDs of a user's message-receiving queues; an ID whose queue record is gone is stale. */
  private userQueuesKey(userId: number): string {
    return `${this.prefix}uq:${userId}`;
  }

  override async usersWithMessageQueues(userIds: readonly number[]): Promise<Set<number>> {
    const found = await super.usersWithMessageQueues(userIds);
    await Promise.all(
      userIds
        .filter((id) => !found.has(id))
        .map(async (id) => {
          const key = this.userQueuesKey(id);
          const ids = await this.cmd.smembers(key);
          const live = await Promise.all(ids.map((qid) => this.cmd.exists(this.qkey(qid))));
          const stale = ids.filter((_, i) => live[i] === 0);
          if (stale.length) await this.cmd.srem(key, ...stale);
          if (stale.length < ids.length) found.add(id);
        }),
    );
    return found;
  }

  protected override async collectGarbage(): Promise<void> {
    await super.collectGarbage();
    // Keep the records of live queues; a dead owner's records expire on their own.
    await Promise.all([...this.local.all()].map((q) => this.cmd.expire(this.qkey(q.id), this.ttlSeconds(q)))).catch(() => undefined);
  }

  protected override async forget(queues: EventQueue[]): Promise<void> {
    await this.cmd.del(...queues.map((q) => this.qkey(q.id))).catch(() => undefined);
  }

  async poll(req: PollRequest, respond: Respond): Promise<Cancel | null> {
    for (let attempt = 0; ; attempt++) {
      const found = await this.locate(req.userId, req.queueId);
      if (found instanceof EventQueue) return this.pollLocal(found, req, respond);
      const result = await this.forwardPoll(found, req, respond);
      if (result !== 'retry') return result;
      if (attempt >= 2) throw new JsonableError('Event queue temporarily unavailable', 'SERVER_NOT_READY', 503);
    }
  }

  async delete(userId: number, queueId: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const found = await this.locate(userId, queueId);
      if (found instanceof EventQueue) {
        this.removeLocal(found);
        await this.cmd.del(this.qkey(found.id));
        return;
      }
      const res = await this.call(found, { k: 'del', r: this.nextRid(), f: this.procId, q: queueId, u: userId });
      if (res.retry && attempt < 2) continue;
      if (res.err) throw rpcError(res);
      if (res.retry) throw new JsonableError('Event queue temporarily unavailable', 'SERVER_NOT_READY', 503);
      return;
    }
  }

  /**
   * The queue when this process owns it (adopting it first when its owner is gone), or the
   * ID of the live process that owns it (which checks the user itself).
   */
  private async locate(userId: number, queueId: string): Promise<EventQueue | string> {
    const local = this.localQueueFor(userId, queueId);
    if (local && local.catchUp === null) return local;
    const found = await this.adopt(queueId);
    if (found === null) throw new BadEventQueueIdError(queueId);
    if (found instanceof EventQueue && found.userId !== userId) throw new BadEventQueueIdError(queueId);
    return found;
  }

  /**
   * Takes over a queue whose owner is gone: restores its snapshot and replays the log
   * entries published after it. Resolves to the queue, to the live owner's process ID,
   * or to null when the queue does not exist (or died with its owner).
   */
  private adopt(queueId: string): Promise<EventQueue | string | null> {
    const local = this.local.get(queueId);
    if (local && local.catchUp === null) return Promise.resolve(local);
    let pending = this.adopting.get(queueId);
    if (!pending) {
      pending = this.claimAndReplay(queueId).finally(() => this.adopting.delete(queueId));
      this.adopting.set(queueId, pending);
    }
    return pending;
  }

  private async claimAndReplay(queueId: string): Promise<EventQueue | string | null> {
    if (this.closing) return null;
    const claim = this.cmd as Redis & {
      parleyClaim(k1: string, k2: string, me: string, procPrefix: string, id: string): Promise<[number, string?]>;
    };
    const [status, value] = await claim.parleyClaim(this.qkey(queueId), this.orphansKey, this.procId, `${this.prefix}proc:`, queueId);
    if (status === 2) return value!;
    if (status !== 1) return null;
    const record = JSON.parse(value!) as OrphanRecord;
    const q = EventQueue.restore(record.snap);
    q.catchUp = [];
    this.local.add(q);
    try {
      const lastReplayed = await this.replay(q, record.pos);
      await this.cmd.expire(this.qkey(q.id), this.ttlSeconds(q));
      const buffered = q.catchUp;
      q.catchUp = null;
      q.appliedThrough = lastReplayed;
      for (const b of buffered) b.run();
      return q;
    } catch (e) {
      this.local.remove(q);
      await this.cmd.del(this.qkey(q.id)).catch(() => undefined);
      this.log.warn({ err: e }, `event queue ${q.id} could not be restored`);
      return null;
    }
  }

  /** Applies the log entries after `pos` to `q`; returns the last position applied. */
  private async replay(q: EventQueue, pos: string): Promise<string> {
    if (pos !== '0-0') {
      const still = await this.cmd.xrange(this.logKey, pos, pos);
      const first = await this.cmd.xrange(this.logKey, '-', '+', 'COUNT', 1);
      // The entry the snapshot stopped at was trimmed away: events may be missing.
      if (still.length === 0 && first.length > 0) throw new Error('event log trimmed past the queue snapshot');
    }
    let from = pos;
    for (;;) {
      const entries = await this.cmd.xrange(this.logKey, `(${from}`, '+', 'COUNT', REPLAY_BATCH);
      for (const [id, fields] of entries) {
        from = id;
        if (fields[1] !== undefined) this.dispatcher.applyTo(q, decodeEnvelope(fields[1]));
      }
      if (entries.length < REPLAY_BATCH) return from;
    }
  }

  private async adoptOrphans(): Promise<void> {
    if (this.closing) return;
    try {
      const ids = await this.cmd.smembers(this.orphansKey);
      for (const id of ids) await this.adopt(id);
    } catch (e) {
      this.log.warn({ err: e }, 'could not adopt orphaned event queues');
    }
  }

  private nextRid(): string {
    return `${this.procId}:${++this.seq}`;
  }

  /**
   * Sends a request to another process and waits for its result. An owner answers at once
   * (or says it holds the poll, then answers within a heartbeat); silence means it is gone.
   */
  private call(owner: string, msg: RpcPoll | RpcDelete, onHeld?: () => void): Promise<RpcResult> {
    return new Promise<RpcResult>((resolve) => {
      const giveUp = (): void => {
        this.calls.delete(msg.r);
        resolve({ k: 'res', r: msg.r, retry: true });
      };
      const pending: PendingCall = {
        timer: setTimeout(giveUp, ANSWER_MS),
        onHeld: () => {
          clearTimeout(pending.timer);
          pending.timer = setTimeout(giveUp, (Math.ceil(this.config.events.heartbeatSeconds * 1.1) + 15) * 1000);
          pending.timer.unref();
          onHeld?.();
        },
        onResult: (m) => {
          clearTimeout(pending.timer);
          this.calls.delete(msg.r);
          resolve(m);
        },
      };
      pending.timer.unref();
      this.calls.set(msg.r, pending);
      this.cmd.publish(this.channel(owner), JSON.stringify(msg)).catch(() => undefined);
    });
  }

  /**
   * Forwards a poll to the owning process. Resolves like pollLocal (null when answered,
   * a cancel function while held), or 'retry' when the owner no longer has the queue.
   */
  private forwardPoll(owner: string, req: PollRequest, respond: Respond): Promise<Cancel | null | 'retry'> {
    const rid = this.nextRid();
    const msg: RpcPoll = { k: 'poll', r: rid, f: this.procId, q: req.queueId, u: req.userId, l: req.lastEventId, d: req.dontBlock };
    return new Promise((resolve, reject) => {
      let held = false;
      const cancel: Cancel = () => {
        const c = this.calls.get(rid);
        if (c) clearTimeout(c.timer);
        this.calls.delete(rid);
        this.cmd.publish(this.channel(owner), JSON.stringify({ k: 'cancel', r: rid } satisfies RpcCancel)).catch(() => undefined);
      };
      this.call(owner, msg, () => {
        held = true;
        resolve(cancel);
      }).then((res) => {
        if (res.e !== undefined) {
          respond(res.e);
          if (!held) resolve(null);
        } else if (!held) {
          if (res.err) reject(rpcError(res));
          else resolve('retry');
        } else {
          // The owner went away while holding the poll: an empty answer makes the client poll again.
          respond('[]');
        }
      });
    });
  }

  private reply(to: string, m: RpcResult | RpcHeld): void {
    this.cmd.publish(this.channel(to), JSON.stringify(m)).catch(() => undefined);
  }

  private onRpc(m: Rpc): void {
    switch (m.k) {
      case 'held':
        this.calls.get(m.r)?.onHeld();
        return;
      case 'res':
        this.calls.get(m.r)?.onResult(m);
        return;
      case 'cancel':
        this.remoteWaiters.get(m.r)?.();
        this.remoteWaiters.delete(m.r);
        return;
      case 'poll':
      case 'del':
        void this.serveRemote(m);
        return;
    }
  }

  private async serveRemote(m: RpcPoll | RpcDelete): Promise<void> {
    let q = this.local.get(m.q);
    // A queue still being taken over is served once its replay is done.
    if (q && q.catchUp !== null) {
      const adopted = await this.adopting.get(m.q);
      q = adopted instanceof EventQueue ? adopted : undefined;
    }
    if (!q || this.closing) {
      this.reply(m.f, { k: 'res', r: m.r, retry: true });
      return;
    }
    try {
      if (q.userId !== m.u) throw new BadEventQueueIdError(m.q);
      if (m.k === 'del') {
        this.removeLocal(q);
        await this.cmd.del(this.qkey(q.id));
        this.reply(m.f, { k: 'res', r: m.r, e: '[]' });
        return;
      }
      const respond: Respond = (eventsJson) => {
        this.remoteWaiters.delete(m.r);
        this.reply(m.f, { k: 'res', r: m.r, e: eventsJson });
      };
      const cancel = this.pollLocal(q, { userId: m.u, queueId: m.q, lastEventId: m.l, dontBlock: m.d }, respond);
      if (cancel) {
        this.remoteWaiters.set(m.r, cancel);
        this.reply(m.f, { k: 'held', r: m.r });
      }
    } catch (e) {
      if (!(e instanceof JsonableError)) throw e;
      this.reply(m.f, { k: 'res', r: m.r, err: { msg: e.message, code: e.code, status: e.httpStatus, extra: e.extra } });
    }
  }

  /**
   * Graceful shutdown: stops reading the log, writes every queue with the log position it
   * reflects, and hands them to the other processes (or to this one's next start).
   */
  protected async persist(): Promise<void> {
    await this.stopPublishing?.();
    this.stopPublishing = null;
    this.stopped = true;
    if (this.livenessTimer) clearInterval(this.livenessTimer);
    this.reader.disconnect();
    await this.reading;
    while (this.dispatcher.pending > 0) await new Promise((r) => setImmediate(r));
    for (const c of this.calls.values()) clearTimeout(c.timer);
    const pipeline = this.cmd.multi();
    const now = Date.now();
    for (const q of this.local.all()) {
      const record: OrphanRecord = { snap: q.snapshot(), pos: this.lastId };
      const key = this.qkey(q.id);
      const remaining = Math.max(60, Math.ceil(q.spec.timeoutSeconds - (now - q.lastConnection) / 1000) + 300);
      pipeline.hset(key, 'u', String(q.userId), 'o', '', 's', JSON.stringify(record));
      pipeline.expire(key, remaining);
      pipeline.sadd(this.orphansKey, q.id);
    }
    pipeline.del(this.procKey(this.procId));
    await pipeline.exec();
    if (this.local.size > 0) await this.cmd.publish(this.broadcast, '{"k":"orphans"}');
    await Promise.all([this.cmd.quit(), this.sub.quit()]).catch(() => undefined);
  }
}

function rpcError(res: RpcResult): JsonableError {
  const e = res.err!;
  return new JsonableError(e.msg, e.code, e.status, e.extra);
}
