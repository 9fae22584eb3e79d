/**
 * Simulated people for the `org`, `storm` and `cost` scenarios: each one registers as the Zulip
 * mobile app (zulip-flutter) does, holds a long-poll, reports presence every
 * `server_presence_ping_interval_seconds`, types before sending, sends at a set rate (to
 * channels, whose sizes follow a long tail, or as direct messages), marks what arrives as read
 * and fetches history as it opens narrows. When its queue is lost (the server restarted) or the
 * server is unreachable, it re-registers and re-polls with the Zulip apps' backoff. Every
 * request is timed from when it was due (open loop), and every message's arrival is timed per
 * recipient.
 */
import { RawConnection, requestHead, type RawResponse } from './raw_http.js';
import { sleep, summarize, wallMs, type LatencySummary } from '../lib/util.js';
import type { QueueUser } from './jobs.js';

export interface OrgPerson extends QueueUser {
  userId: number;
}

export interface OrgChannel {
  id: number;
  /** Indices into the people array. */
  members: number[];
}

export interface OrgRates {
  /** Seconds between one person's messages, on average (a Poisson process per person). */
  sendIntervalSeconds: number;
  /** Share of messages sent to channels; the rest are one-to-one direct messages. */
  channelShare: number;
  /** How long a person types (after "start", before sending). */
  typingMs: number;
  /** Reads are batched per person for this long, as the apps debounce marking read. */
  readBatchMs: number;
  /** One GET /messages (opening a narrow) per this many messages read. */
  historyEvery: number;
}

/** zulip-flutter's POST /register (../shared/clients.md): every event type, slim presence. */
const MOBILE_REGISTER = [
  'apply_markdown=true',
  'client_gravatar=false',
  'slim_presence=true',
  `idle_queue_timeout=${encodeURIComponent('"mobile"')}`,
  `client_capabilities=${encodeURIComponent(
    JSON.stringify({
      notification_settings_null: true,
      bulk_message_deletion: true,
      user_avatar_url_field_optional: true,
      stream_typing_notifications: true,
      user_settings_object: true,
      include_deactivated_groups: true,
      empty_topic_name: true,
      individual_emoji_changes: true,
    }),
  )}`,
].join('&');

/** The Zulip apps' backoff (zulip-flutter's BackoffMachine): full jitter, 100 ms doubling to 10 s. */
const backoffMs = (attempt: number): number => Math.random() * Math.min(10_000, 100 * 2 ** attempt);

interface Person {
  index: number;
  user: OrgPerson;
  port: number;
  queueId: string | null;
  lastEventId: number;
  presenceUpdateId: number;
  poll: RawConnection | null;
  /** Has a queue and a poll in flight (or answered) on it. */
  live: boolean;
  /** The queue it held when a storm began: back from the storm once it has another. */
  stormQueue: string | null;
  pendingReads: number[];
  readTimer: NodeJS.Timeout | null;
  readsSinceHistory: number;
  /** The narrow of the last message read, for the next history fetch. */
  lastNarrow: string;
}

const latencies = {
  send: [] as number[],
  delivery: [] as number[],
  presence: [] as number[],
  typing: [] as number[],
  flags: [] as number[],
  history: [] as number[],
  register: [] as number[],
};
type Kind = keyof typeof latencies;

let measuring = false;
let people: Person[] = [];
let channels: OrgChannel[] = [];
let ports: number[] = [];
let running = false;
let presenceIntervalMs = 60_000;
let errors: Record<string, number> = {};
let firstErrors: string[] = [];
let counts = { sent: 0, reads: 0, registers: 0, queueLost: 0, rateLimited: 0, unreachable: 0 };
/** Message token -> when its send was due and who is yet to receive it. */
const inFlight = new Map<number, { due: number; waiting: Set<number> }>();
let seq = 0;

function recordError(kind: string, detail: string): void {
  errors[kind] = (errors[kind] ?? 0) + 1;
  if (firstErrors.length < 5) firstErrors.push(`${kind}: ${detail.slice(0, 200)}`);
}

function record(kind: Kind, due: number): void {
  if (measuring) latencies[kind].push(wallMs() - due);
}

/** Connections for everything but the long-polls, one request in flight each, reused. */
const idle = new Map<number, RawConnection[]>();

async function request(port: number, user: QueueUser, method: 'GET' | 'POST', path: string, form?: string): Promise<RawResponse> {
  const pool = idle.get(port) ?? idle.set(port, []).get(port)!;
  let conn = pool.pop();
  while (conn?.isClosed) conn = pool.pop();
  conn ??= await RawConnection.open(port);
  const res = await conn.request(requestHead(method, path, user.host, user.auth, form !== undefined), form);
  pool.push(conn);
  return res;
}

/** A timed request; anything but 200 counts as an error of its kind (429s are counted apart). */
async function act(p: Person, kind: Kind, method: 'GET' | 'POST', path: string, form: string | undefined, due: number): Promise<RawResponse | null> {
  try {
    const res = await request(p.port, p.user, method, path, form);
    if (res.status === 429) counts.rateLimited++;
    else if (res.status !== 200) recordError(kind, `HTTP ${res.status}: ${res.body}`);
    else record(kind, due);
    return res;
  } catch {
    // No answer at all (the server is down or restarting): not an error the server gave.
    counts.unreachable++;
    return null;
  }
}

/** Registers (again), with the apps' backoff on failure; a 429 waits as long as the server says. */
async function register(p: Person): Promise<void> {
  for (let attempt = 0; running; attempt++) {
    const due = wallMs();
    let res: RawResponse | null = null;
    try {
      res = await request(p.port, p.user, 'POST', '/api/v1/register', MOBILE_REGISTER);
    } catch {
      // Unreachable: back off and try again, as the apps do.
    }
    if (res?.status === 200) {
      record('register', due);
      counts.registers++;
      // A copy: a match would be a slice keeping the whole (megabytes long) response alive.
      p.queueId = Buffer.from(/"queue_id":"([^"]+)"/.exec(res.body)![1]!, 'latin1').toString('latin1');
      p.lastEventId = Number(/"last_event_id":(-?\d+)/.exec(res.body)![1]);
      p.presenceUpdateId = Number(/"presence_last_update_id":(-?\d+)/.exec(res.body)?.[1] ?? -1);
      const interval = /"server_presence_ping_interval_seconds":(\d+)/.exec(res.body);
      if (interval) presenceIntervalMs = Number(interval[1]) * 1000;
      return;
    }
    if (res?.status === 429) {
      counts.rateLimited++;
      const retry = Number(/"retry-after":\s*([\d.]+)/i.exec(res.body)?.[1] ?? 1);
      await sleep(retry * 1000);
      continue;
    }
    if (res && res.status < 500) recordError('register', `HTTP ${res.status}: ${res.body}`);
    await sleep(backoffMs(attempt));
  }
}

const TOKEN = /om(\d+)x/g;

function onEvents(p: Person, body: string): void {
  const events = (JSON.parse(body) as { events: { id: number; type: string; message?: { id: number; sender_id: number; type: string; stream_id?: number; subject?: string; content: string } }[] }).events;
  const now = wallMs();
  for (const e of events) {
    if (e.id > p.lastEventId) p.lastEventId = e.id;
    if (e.type !== 'message' || !e.message) continue;
    const m = e.message;
    TOKEN.lastIndex = 0;
    const token = TOKEN.exec(m.content);
    const tracked = token ? inFlight.get(Number(token[1])) : undefined;
    if (tracked?.waiting.delete(p.index)) {
      if (measuring) latencies.delivery.push(now - tracked.due);
      if (tracked.waiting.size === 0) inFlight.delete(Number(token![1]));
    }
    if (m.sender_id === p.user.userId) continue;
    p.lastNarrow =
      m.type === 'stream'
        ? JSON.stringify([
            { operator: 'channel', operand: m.stream_id },
            { operator: 'topic', operand: m.subject },
          ])
        : JSON.stringify([{ operator: 'dm', operand: [m.sender_id] }]);
    p.pendingReads.push(m.id);
    p.readTimer ??= setTimeout(() => void flushReads(p), rates.readBatchMs);
  }
}

async function flushReads(p: Person): Promise<void> {
  p.readTimer = null;
  const ids = p.pendingReads;
  p.pendingReads = [];
  if (!running || ids.length === 0) return;
  const due = wallMs();
  await act(p, 'flags', 'POST', '/api/v1/messages/flags', `messages=${encodeURIComponent(JSON.stringify(ids))}&op=add&flag=read`, due);
  counts.reads += ids.length;
  p.readsSinceHistory += ids.length;
  if (p.readsSinceHistory >= rates.historyEvery) {
    p.readsSinceHistory = 0;
    const q = `anchor=newest&num_before=100&num_after=0&apply_markdown=true&client_gravatar=false&narrow=${encodeURIComponent(p.lastNarrow)}`;
    await act(p, 'history', 'GET', `/api/v1/messages?${q}`, undefined, wallMs());
  }
}

/** One person's long-poll loop: registers when it has no queue, re-registers when it is lost. */
async function pollLoop(p: Person): Promise<void> {
  let failures = 0;
  while (running) {
    if (!p.queueId) {
      p.live = false;
      await register(p);
      if (!running) return;
    }
    if (!p.poll || p.poll.isClosed) {
      try {
        p.poll = await RawConnection.open(p.port);
      } catch {
        p.live = false;
        await sleep(backoffMs(failures++));
        continue;
      }
    }
    const path = `/api/v1/events?queue_id=${encodeURIComponent(p.queueId!)}&last_event_id=${p.lastEventId}`;
    const pending = p.poll.request(requestHead('GET', path, p.user.host, p.user.auth, false));
    p.live = true;
    let res: RawResponse;
    try {
      res = await pending;
    } catch {
      // The connection dropped (the server went away): back off, reconnect, poll the same queue.
      p.live = false;
      if (!running) return;
      await sleep(backoffMs(failures++));
      continue;
    }
    if (res.status === 200) {
      failures = 0;
      onEvents(p, res.body);
    } else if (res.status === 400 && res.body.includes('BAD_EVENT_QUEUE_ID')) {
      counts.queueLost++;
      p.queueId = null;
    } else if (res.status === 429) {
      counts.rateLimited++;
      await sleep(1000);
    } else {
      recordError('events', `HTTP ${res.status}: ${res.body}`);
      await sleep(backoffMs(failures++));
    }
  }
}

let rates: OrgRates = { sendIntervalSeconds: 600, channelShare: 0.75, typingMs: 2000, readBatchMs: 500, historyEvery: 5 };
let timers: NodeJS.Timeout[] = [];

function randomInt(n: number): number {
  return Math.floor(Math.random() * n);
}

/** Types, sends one message, stops typing: to a channel (uniformly chosen) or to one other person. */
async function sendOne(): Promise<void> {
  const s = ++seq;
  let sender: Person;
  let typing: string;
  let form: string;
  const waiting = new Set<number>();
  if (Math.random() < rates.channelShare || people.length < 2) {
    const c = channels[randomInt(channels.length)]!;
    sender = people[c.members[randomInt(c.members.length)]!]!;
    const topic = `topic ${randomInt(5)}`;
    for (const m of c.members) if (m !== sender.index) waiting.add(m);
    typing = `type=stream&stream_id=${c.id}&topic=${encodeURIComponent(topic)}`;
    form = `type=stream&to=${c.id}&topic=${encodeURIComponent(topic)}&content=om${s}x`;
  } else {
    sender = people[randomInt(people.length)]!;
    let other = people[randomInt(people.length)]!;
    if (other === sender) other = people[(sender.index + 1) % people.length]!;
    waiting.add(other.index);
    typing = `type=direct&to=${encodeURIComponent(JSON.stringify([other.user.userId]))}`;
    form = `type=direct&to=${encodeURIComponent(JSON.stringify([other.user.userId]))}&content=om${s}x`;
  }
  // Someone whose app is reconnecting does not write meanwhile.
  if (!sender.live) return;
  await act(sender, 'typing', 'POST', '/api/v1/typing', `${typing}&op=start`, wallMs());
  await sleep(rates.typingMs);
  if (!running) return;
  const due = wallMs();
  if (measuring) inFlight.set(s, { due, waiting });
  const res = await act(sender, 'send', 'POST', '/api/v1/messages', form, due);
  counts.sent++;
  if (res?.status !== 200) inFlight.delete(s);
  await act(sender, 'typing', 'POST', '/api/v1/typing', `${typing}&op=stop`, wallMs());
}

/** Presence for everyone every interval, spread evenly over it; sends as one Poisson process. */
function startActivity(): void {
  const tickMs = 20;
  let presenceCursor = 0;
  let presenceCarry = 0;
  const presenceTick = setInterval(() => {
    presenceCarry += (people.length * tickMs) / presenceIntervalMs;
    for (; presenceCarry >= 1; presenceCarry--) {
      const p = people[presenceCursor++ % people.length]!;
      if (!p.live) continue;
      const due = wallMs();
      const form = `status=active&slim_presence=true&new_user_input=true&last_update_id=${p.presenceUpdateId}`;
      void act(p, 'presence', 'POST', '/api/v1/users/me/presence', form, due).then((res) => {
        const id = res?.status === 200 ? /"presence_last_update_id":(-?\d+)/.exec(res.body) : null;
        if (id) p.presenceUpdateId = Number(id[1]);
      });
    }
  }, tickMs);
  const perSecond = people.length / rates.sendIntervalSeconds;
  let nextSend = wallMs() + (-Math.log(1 - Math.random()) / perSecond) * 1000;
  const sendTick = setInterval(() => {
    const now = wallMs();
    for (; nextSend <= now; nextSend += (-Math.log(1 - Math.random()) / perSecond) * 1000) void sendOne();
  }, tickMs);
  timers = [presenceTick, sendTick];
}

export function orgConfigure(job: { ports: number[]; people: OrgPerson[]; channels: OrgChannel[]; rates: OrgRates }): Record<string, unknown> {
  ports = job.ports;
  rates = job.rates;
  channels = job.channels;
  people = job.people.map((user, index) => ({
    index,
    user,
    port: ports[index % ports.length]!,
    queueId: null,
    lastEventId: -1,
    presenceUpdateId: -1,
    poll: null,
    live: false,
    stormQueue: null,
    pendingReads: [],
    readTimer: null,
    readsSinceHistory: 0,
    lastNarrow: '[]',
  }));
  return { people: people.length };
}

/** Registers everyone (at most `concurrency` at a time per process) and starts their polls. */
export async function orgConnect(job: { concurrency: number }): Promise<Record<string, unknown>> {
  running = true;
  const t0 = wallMs();
  measuring = true;
  latencies.register = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: job.concurrency * ports.length }, async () => {
      while (next < people.length) {
        const p = people[next++]!;
        await register(p);
        void pollLoop(p);
      }
    }),
  );
  measuring = false;
  return { registerMs: wallMs() - t0, register: summarize(latencies.register) };
}

function reset(): void {
  for (const k of Object.keys(latencies) as Kind[]) latencies[k] = [];
  errors = {};
  firstErrors = [];
  counts = { sent: 0, reads: 0, registers: 0, queueLost: 0, rateLimited: 0, unreachable: 0 };
}

export interface OrgWindow {
  send: LatencySummary;
  delivery: LatencySummary;
  presence: LatencySummary;
  typing: LatencySummary;
  flags: LatencySummary;
  history: LatencySummary;
  undelivered: number;
  counts: typeof counts;
  errors: Record<string, number>;
  firstErrors: string[];
  clientCpuPercent: number;
}

/** Runs everyone's activity: a warm-up, then a measured window; activity goes on afterwards. */
export async function orgRun(job: { warmupMs: number; durationMs: number }): Promise<OrgWindow> {
  if (timers.length === 0) startActivity();
  await sleep(job.warmupMs);
  reset();
  inFlight.clear();
  const cpu0 = process.cpuUsage();
  const t0 = wallMs();
  measuring = true;
  await sleep(job.durationMs);
  measuring = false;
  const cpu = process.cpuUsage(cpu0);
  const clientCpuPercent = ((cpu.user + cpu.system) / 1000 / (wallMs() - t0)) * 100;
  // Deliveries of the window's last messages.
  const until = wallMs() + 5000;
  while (inFlight.size > 0 && wallMs() < until) await sleep(20);
  let undelivered = 0;
  for (const m of inFlight.values()) undelivered += m.waiting.size;
  inFlight.clear();
  return {
    send: summarize(latencies.send),
    delivery: summarize(latencies.delivery),
    presence: summarize(latencies.presence),
    typing: summarize(latencies.typing),
    flags: summarize(latencies.flags),
    history: summarize(latencies.history),
    undelivered,
    counts: { ...counts },
    errors: { ...errors },
    firstErrors: [...firstErrors],
    clientCpuPercent,
  };
}

/** For the storm, before the server is killed: remembers each person's queue and starts measuring. */
export function orgStormBegin(): Record<string, unknown> {
  reset();
  for (const p of people) p.stormQueue = p.queueId;
  measuring = true;
  return { people: people.length };
}

const isBack = (p: Person): boolean => p.live && p.queueId !== null && p.queueId !== p.stormQueue;

/**
 * For the storm, once the server answers again: waits until every person is back (a new queue
 * and a poll held on it), with the registers' latencies and every error the clients saw.
 */
export async function orgAwaitBack(job: { timeoutMs: number }): Promise<Record<string, unknown>> {
  const t0 = wallMs();
  let allBackAt = NaN;
  while (wallMs() - t0 < job.timeoutMs) {
    if (people.every(isBack)) {
      allBackAt = wallMs();
      break;
    }
    await sleep(20);
  }
  measuring = false;
  return {
    allBackMs: allBackAt - t0,
    back: people.filter(isBack).length,
    register: summarize(latencies.register),
    ordinary: summarize([...latencies.presence, ...latencies.typing, ...latencies.send, ...latencies.flags, ...latencies.history]),
    counts: { ...counts },
    errors: { ...errors },
    firstErrors: [...firstErrors],
  };
}

export function orgStop(): Record<string, unknown> {
  running = false;
  measuring = false;
  for (const t of timers) clearInterval(t);
  timers = [];
  for (const p of people) {
    p.poll?.close();
    if (p.readTimer) clearTimeout(p.readTimer);
  }
  for (const pool of idle.values()) for (const c of pool) c.close();
  idle.clear();
  const n = people.length;
  people = [];
  return { stopped: n };
}
