/**
 * The load generator: a child process (on its own core when there is one server process)
 * that the bench drives over IPC. It runs autocannon for plain request load and its own
 * raw-socket clients for event queues: registering them, holding their long-polls, and
 * timing sends until every queue has received the message. With several server processes,
 * queues, senders and autocannon instances are spread over them round-robin, and a queue is
 * polled on the process that registered it (and owns it).
 */
import autocannon from 'autocannon';
import { RawConnection, requestHead, type RawResponse } from './raw_http.js';
import { mapLimit, sleep, summarize, wallMs, type LatencySummary } from '../lib/util.js';
import type { Job, JobResult, QueueUser } from './jobs.js';
import { orgAwaitBack, orgConfigure, orgConnect, orgRun, orgStop, orgStormBegin } from './people.js';

interface Queue {
  user: QueueUser;
  /** The port of the server process that registered the queue. */
  port: number;
  id: string;
  lastEventId: number;
  conn: RawConnection | null;
  polls: number;
  failed: string | null;
}

const sets = new Map<string, { queues: Queue[]; running: boolean }>();
/** Messages whose delivery is being timed: token -> send time and queues still to receive it. */
const tracking = new Map<number, { t0: number; remaining: number }>();
let deliveries: number[] = [];
let lastDeliveryAt = 0;
let ports: number[] = [];

const TOKEN = /sm(\d+)x/g;

function onEvents(body: string): void {
  if (tracking.size === 0) return;
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(body); m; m = TOKEN.exec(body)) {
    const seq = Number(m[1]);
    const t = tracking.get(seq);
    if (!t) continue;
    if (--t.remaining === 0) {
      const now = wallMs();
      deliveries.push(now - t.t0);
      lastDeliveryAt = now;
      tracking.delete(seq);
    }
  }
}

/** The id of the last event in a GET /events body (each event's own id is its last key). */
function lastEventId(body: string): number | null {
  const at = body.lastIndexOf('"id":');
  if (at < 0) return null;
  return parseInt(body.slice(at + 5, at + 20), 10);
}

async function pollLoop(set: { running: boolean }, q: Queue): Promise<void> {
  while (set.running && q.conn) {
    let res: RawResponse;
    try {
      res = await q.conn.request(
        requestHead('GET', `/api/v1/events?queue_id=${encodeURIComponent(q.id)}&last_event_id=${q.lastEventId}`, q.user.host, q.user.auth, false),
      );
    } catch (e) {
      if (set.running) q.failed = String(e);
      return;
    }
    q.polls++;
    if (res.status !== 200) {
      q.failed = `HTTP ${res.status}: ${res.body.slice(0, 200)}`;
      return;
    }
    const id = lastEventId(res.body);
    if (id !== null && id > q.lastEventId) q.lastEventId = id;
    onEvents(res.body);
  }
}

async function post(conn: RawConnection, user: QueueUser, path: string, form: string): Promise<RawResponse> {
  return conn.request(requestHead('POST', path, user.host, user.auth, true), form);
}

/** Queue i is registered on process i mod N, with `concurrency` connections to each process. */
async function registerQueues(job: Extract<Job, { kind: 'register' }>): Promise<JobResult> {
  const queues: Queue[] = [];
  const latencies: number[] = [];
  let errors = 0;
  let firstError = '';
  await Promise.all(
    ports.map(async (port, k) => {
      const conns = await Promise.all(Array.from({ length: job.concurrency }, () => RawConnection.open(port)));
      let next = k;
      await Promise.all(
        conns.map(async (conn) => {
          while (next < job.count) {
            const i = next;
            next += ports.length;
            const user = job.users[i % job.users.length]!;
            const t0 = wallMs();
            const res = await post(conn, user, '/api/v1/register', job.params);
            latencies.push(wallMs() - t0);
            if (res.status !== 200) {
              errors++;
              firstError ||= `HTTP ${res.status}: ${res.body.slice(0, 200)}`;
              continue;
            }
            const m = /"queue_id":"([^"]+)"/.exec(res.body);
            if (!m) throw new Error(`register without queue_id: ${res.body.slice(0, 200)}`);
            queues.push({ user, port, id: m[1]!, lastEventId: -1, conn: null, polls: 0, failed: null });
          }
        }),
      );
      for (const c of conns) c.close();
    }),
  );
  const existing = sets.get(job.set);
  if (existing) existing.queues.push(...queues);
  else sets.set(job.set, { queues, running: false });
  return { registered: queues.length, errors, firstError, latency: summarize(latencies) };
}

async function hold(job: Extract<Job, { kind: 'hold' }>): Promise<JobResult> {
  const set = sets.get(job.set);
  if (!set) throw new Error(`no queue set ${job.set}`);
  set.running = true;
  let connectErrors = 0;
  let firstError = '';
  // Opened gradually: a burst of thousands of connects overflows the listen backlog.
  await mapLimit(set.queues, 200, async (q) => {
    try {
      q.conn = await RawConnection.open(q.port);
    } catch (e) {
      connectErrors++;
      firstError ||= String(e);
      return;
    }
    void pollLoop(set, q);
  });
  return { holding: set.queues.length - connectErrors, connectErrors, firstError };
}

function release(job: Extract<Job, { kind: 'release' }>): JobResult {
  const set = sets.get(job.set);
  if (!set) return { released: 0 };
  set.running = false;
  for (const q of set.queues) q.conn?.close();
  sets.delete(job.set);
  return { released: set.queues.length };
}

function setHealth(name: string): { polls: number; failed: number; firstFailure: string } {
  const set = sets.get(name);
  let polls = 0;
  let failed = 0;
  let firstFailure = '';
  for (const q of set?.queues ?? []) {
    polls += q.polls;
    if (q.failed) {
      failed++;
      firstFailure ||= q.failed;
    }
  }
  return { polls, failed, firstFailure };
}

let seq = 0;

function sendForm(job: Extract<Job, { kind: 'send' | 'fanout' }>, s: number): string {
  const topic = job.topics[s % job.topics.length]!;
  return `type=stream&to=${encodeURIComponent(job.stream)}&topic=${encodeURIComponent(topic)}&content=sm${s}x`;
}

/**
 * Sends messages to a channel and times each from the moment it was due to its response
 * (send latency) and to its arrival in every tracked queue (delivery latency). Closed loop:
 * `concurrency` senders back to back, for the throughput. Open loop: a fixed rate
 * regardless of responses, so latencies include any queueing (no coordinated omission).
 * Sender i (closed) or message i (open) goes to process i mod N.
 */
async function sendRun(job: Extract<Job, { kind: 'send' }>): Promise<JobResult> {
  const tracked = sets.get(job.trackSet)?.queues.filter((q) => q.conn && !q.failed).length ?? 0;
  const sendLatencies: number[] = [];
  deliveries = [];
  let errors = 0;
  let firstError = '';
  let sent = 0;
  const measureFrom = wallMs() + job.warmupMs;
  const end = measureFrom + job.durationMs;
  let measuredSends = 0;
  const cpu0 = process.cpuUsage();
  const started = wallMs();
  const one = async (conn: RawConnection, user: QueueUser, due: number): Promise<void> => {
    const s = ++seq;
    const measured = due >= measureFrom;
    if (measured && tracked > 0) tracking.set(s, { t0: due, remaining: tracked });
    const res = await post(conn, user, '/api/v1/messages', sendForm(job, s));
    sent++;
    if (res.status !== 200) {
      errors++;
      firstError ||= `HTTP ${res.status}: ${res.body.slice(0, 200)}`;
      tracking.delete(s);
      return;
    }
    if (measured) {
      measuredSends++;
      sendLatencies.push(wallMs() - due);
    }
  };
  const pools = ports.map((): RawConnection[] => []);
  const take = async (k: number): Promise<RawConnection> => pools[k]!.pop() ?? RawConnection.open(ports[k]!);
  if (job.mode === 'closed') {
    await Promise.all(
      Array.from({ length: job.concurrency }, async (_, i) => {
        const k = i % ports.length;
        const conn = await take(k);
        const user = job.senders[i % job.senders.length]!;
        while (wallMs() < end) await one(conn, user, wallMs());
        pools[k]!.push(conn);
      }),
    );
  } else {
    const start = wallMs();
    let issued = 0;
    const inflight = new Set<Promise<void>>();
    while (wallMs() < end) {
      const due = start + (issued * 1000) / job.rate;
      const now = wallMs();
      if (due > now) {
        await sleep(Math.min(1, due - now));
        continue;
      }
      const user = job.senders[issued % job.senders.length]!;
      const k = issued % ports.length;
      issued++;
      const p = take(k).then(async (conn) => {
        await one(conn, user, due);
        pools[k]!.push(conn);
      });
      inflight.add(p);
      void p.finally(() => inflight.delete(p));
    }
    await Promise.all(inflight);
  }
  const cpu = process.cpuUsage(cpu0);
  // How busy the load generator was over the run, warm-up included (it shares the cores when unpinned).
  const clientCpuPercent = ((cpu.user + cpu.system) / 1000 / (wallMs() - started)) * 100;
  // Let the last deliveries arrive.
  const waitUntil = wallMs() + 5000;
  while (tracking.size > 0 && wallMs() < waitUntil) await sleep(10);
  const undelivered = tracking.size;
  tracking.clear();
  for (const c of pools.flat()) c.close();
  return {
    sent,
    errors,
    firstError,
    measuredSends,
    messagesPerSecond: measuredSends / (job.durationMs / 1000),
    send: summarize(sendLatencies),
    delivery: summarize(deliveries),
    undelivered,
    trackedQueues: tracked,
    clientCpuPercent,
    ...setHealth(job.trackSet),
  };
}

/** One message to a big channel: time until the last tracked queue has it. */
async function fanout(job: Extract<Job, { kind: 'fanout' }>): Promise<JobResult> {
  const tracked = sets.get(job.trackSet)?.queues.filter((q) => q.conn && !q.failed).length ?? 0;
  deliveries = [];
  const conn = await RawConnection.open(ports[0]!);
  const s = ++seq;
  const cpu0 = process.cpuUsage();
  const t0 = wallMs();
  tracking.set(s, { t0, remaining: tracked });
  const res = await post(conn, job.senders[0]!, '/api/v1/messages', sendForm(job, s));
  const sendMs = wallMs() - t0;
  conn.close();
  if (res.status !== 200) throw new Error(`fan-out send failed: HTTP ${res.status} ${res.body.slice(0, 200)}`);
  const waitUntil = wallMs() + 30_000;
  while (tracking.has(s) && wallMs() < waitUntil) await sleep(2);
  const missing = tracking.get(s)?.remaining ?? 0;
  tracking.delete(s);
  const deliveredMs = missing === 0 ? lastDeliveryAt - t0 : NaN;
  const cpu = process.cpuUsage(cpu0);
  // How busy the load generator itself was: near 100% means it, not the server, set the pace.
  const clientCpuPercent = ((cpu.user + cpu.system) / 1000 / (wallMs() - t0)) * 100;
  return { trackedQueues: tracked, missing, sendMs, deliveredMs, clientCpuPercent, ...setHealth(job.trackSet) };
}

/** One autocannon instance per server process, each with `connections` connections; the figures are combined. */
async function runAutocannon(job: Extract<Job, { kind: 'autocannon' }>): Promise<JobResult> {
  const latencies: number[] = [];
  let measuring = false;
  let completed = 0;
  let non2xx = 0;
  const instances = ports.map((port) => {
    const instance = autocannon({
      url: `http://127.0.0.1:${port}`,
      connections: job.connections,
      duration: (job.warmupMs + job.durationMs) / 1000,
      requests: job.requests,
    });
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      if (!measuring) return;
      completed++;
      if (statusCode < 200 || statusCode >= 300) non2xx++;
      latencies.push(responseTime);
    });
    return instance;
  });
  const t0 = wallMs();
  setTimeout(() => (measuring = true), job.warmupMs);
  const results = await Promise.all(instances);
  const measuredMs = wallMs() - t0 - job.warmupMs;
  const requests = results.reduce((n, r) => n + r.requests.total, 0);
  return {
    requestsPerSecond: completed / (measuredMs / 1000),
    latency: summarize(latencies),
    non2xx,
    errors: results.reduce((n, r) => n + r.errors + r.timeouts, 0),
    bytesPerResponse: requests > 0 ? results.reduce((n, r) => n + r.throughput.total, 0) / requests : 0,
  };
}

async function runJob(job: Job): Promise<JobResult> {
  switch (job.kind) {
    case 'configure':
      ports = job.ports;
      return {};
    case 'autocannon':
      return runAutocannon(job);
    case 'register':
      return registerQueues(job);
    case 'hold':
      return hold(job);
    case 'release':
      return release(job);
    case 'health':
      return setHealth(job.set);
    case 'send':
      return sendRun(job);
    case 'fanout':
      return fanout(job);
    case 'org-configure':
      return orgConfigure({ ...job, ports });
    case 'org-connect':
      return orgConnect(job);
    case 'org-run':
      return orgRun(job) as unknown as Promise<JobResult>;
    case 'org-storm-begin':
      return orgStormBegin();
    case 'org-await-back':
      return orgAwaitBack(job);
    case 'org-stop':
      return orgStop();
  }
}

process.on('message', (msg: { id: number; job: Job }) => {
  runJob(msg.job).then(
    (result) => process.send!({ id: msg.id, result }),
    (e: Error) => process.send!({ id: msg.id, error: e.stack ?? String(e) }),
  );
});
process.on('disconnect', () => process.exit(0));

export type { LatencySummary };
