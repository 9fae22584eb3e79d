import assert from 'node:assert/strict';
import type { ApiClient, ParamValue } from './client.js';
import { assertEventConforms, prepareEventSchema } from './openapi.js';

export interface ZEvent {
  type: string;
  id: number;
  [key: string]: any;
}

export type EventMatcher = string | ((e: ZEvent) => boolean);

const matches = (m: EventMatcher, e: ZEvent): boolean => (typeof m === 'string' ? e.type === m : m(e));

/**
 * A registered event queue read the way real clients read it: long-polling GET /events
 * over HTTP and acknowledging with last_event_id. Heartbeats are kept out of the way.
 *
 *   const q = await registerQueue(hamlet.client, { event_types: ['message'] });
 *   await ...do something...;
 *   const e = await q.next('message');               // or q.next((e) => e.type === 'stream' && e.op === 'create')
 *   await q.expectNone('message', 300);
 *   const before = await q.upTo((e) => e.marker === true); // after publishing a marker event
 */
export class TestQueue {
  /** Events received but not yet returned by next(). */
  private buffer: ZEvent[] = [];

  constructor(
    readonly client: ApiClient,
    readonly queueId: string,
    public lastEventId: number,
    /** The whole POST /register response. */
    readonly state: any,
  ) {}

  /** One GET /events; returns its events (heartbeats included) and acknowledges them next time. */
  async poll(opts: { dontBlock?: boolean; signal?: AbortSignal } = {}): Promise<ZEvent[]> {
    const res = await this.client.request(
      'GET',
      '/events',
      { queue_id: this.queueId, last_event_id: this.lastEventId, dont_block: opts.dontBlock ?? false },
      'query',
      '/api/v1',
      opts.signal,
    );
    assert.equal(res.status, 200, `GET /events: ${res.status} ${JSON.stringify(res.body)}`);
    const events = res.body.events as ZEvent[];
    // Every event a test sees on the wire is held to zulip.yaml plus the listed extras, but the
    // made-up `test_*` events that queue-mechanics tests publish straight onto the bus.
    for (const e of events) if (!e.type.startsWith('test_')) assertEventConforms(e);
    for (const e of events) this.lastEventId = Math.max(this.lastEventId, e.id);
    return events;
  }

  /** Waits (long-polling) for the first event matching `m`; earlier non-matching events stay available. */
  async next(m: EventMatcher, timeoutMs = 5000): Promise<ZEvent> {
    const i = await this.waitFor(m, timeoutMs);
    return this.buffer.splice(i, 1)[0]!;
  }

  /**
   * Every event before the first one matching `m`, which is waited for (long-polling) and
   * dropped. Publish a marker event after the events under test and this proves what arrived,
   * and that nothing else did, without a wall-clock window that a loaded machine outruns.
   */
  async upTo(m: EventMatcher, timeoutMs = 10_000): Promise<ZEvent[]> {
    return (await this.through(m, timeoutMs)).slice(0, -1);
  }

  /** Like upTo, but the marker is returned too (last), for tests that apply every event to a state. */
  async through(m: EventMatcher, timeoutMs = 10_000): Promise<ZEvent[]> {
    const i = await this.waitFor(m, timeoutMs);
    return this.buffer.splice(0, i + 1);
  }

  /** The buffer index of the first event matching `m`, polling for more until `timeoutMs`. */
  private async waitFor(m: EventMatcher, timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.buffer.findIndex((e) => matches(m, e));
      if (i >= 0) return i;
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        assert.fail(`no ${typeof m === 'string' ? m : 'matching'} event within ${timeoutMs} ms; got ${JSON.stringify(this.buffer.map((e) => e.type))}`);
      }
      const events = await this.pollFor(remaining);
      this.buffer.push(...events.filter((e) => e.type !== 'heartbeat'));
    }
  }

  /** Every non-heartbeat event that arrives within `ms` (after those already buffered). */
  async collect(ms: number): Promise<ZEvent[]> {
    const deadline = Date.now() + ms;
    for (let remaining = ms; remaining > 0; remaining = deadline - Date.now()) {
      this.buffer.push(...(await this.pollFor(remaining)).filter((e) => e.type !== 'heartbeat'));
    }
    const out = this.buffer;
    this.buffer = [];
    return out;
  }

  /** Asserts that no event matching `m` arrives within `ms`. */
  async expectNone(m: EventMatcher, ms = 300): Promise<void> {
    const got = (await this.collect(ms)).filter((e) => matches(m, e));
    assert.deepEqual(got, [], `unexpected events: ${JSON.stringify(got)}`);
  }

  async delete(): Promise<void> {
    await this.client.delete('/events', { queue_id: this.queueId });
  }

  private async pollFor(ms: number): Promise<ZEvent[]> {
    // A request aborted before it is even sent leaves a connection the server cannot close
    // until its header timeout; for short waits, just look at what is there.
    if (ms < 100) return this.poll({ dontBlock: true });
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), ms);
    try {
      return await this.poll({ signal: ctl.signal });
    } catch (e) {
      if (ctl.signal.aborted) return [];
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** POST /register for `client` (every event type unless `params` says otherwise). */
export async function registerQueue(client: ApiClient, params: Record<string, ParamValue> = {}): Promise<TestQueue> {
  prepareEventSchema();
  const res = await client.post('/register', params);
  assert.equal(res.status, 200, `POST /register: ${res.status} ${JSON.stringify(res.body)}`);
  return new TestQueue(client, res.body.queue_id, res.body.last_event_id, res.body);
}
