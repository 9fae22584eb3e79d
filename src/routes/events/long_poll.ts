import type { IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { Services } from '../../services.js';
import type { User } from '../../db/tables.js';
import { authenticateApiKey, resolveRealm } from '../../plugins/auth.js';
import { p, parseParams, type ParsedParams } from '../params.js';

/** GET /events parameters, shared by the Fastify route and the direct path below. */
export const pollParams = {
  queue_id: p.str(),
  last_event_id: p.int(),
  dont_block: p.bool().default(false),
};
type PollParams = ParsedParams<typeof pollParams>;

/**
 * GET /events bodies are assembled from each event's cached JSON rather than serialized
 * per request: a message fanned out to thousands of queues is stringified once.
 */
function eventsBody(eventsJson: string, ignored: readonly string[]): string {
  let body = `{"result":"success","msg":"","events":${eventsJson}`;
  if (ignored.length) body += `,"ignored_parameters_unsupported":${JSON.stringify(ignored)}`;
  return `${body}}`;
}

/**
 * Answers a poll on the raw response, with the headers Fastify's reply would send, so that
 * both paths answer byte for byte alike.
 */
function writeEvents(res: ServerResponse, body: string, closing: boolean): void {
  if (res.destroyed || res.headersSent) return;
  const headers: OutgoingHttpHeaders = { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) };
  // Polls answered because the server is shutting down must not keep their connection alive.
  if (closing) headers.connection = 'close';
  res.writeHead(200, headers).end(body);
}

/**
 * Polls the caller's queue. Returns the body to answer with now, or null when the poll is
 * held: it is then answered on the raw response, outside Fastify's request cycle, so that
 * thousands of waiting requests cost no more than their sockets and a small closure each.
 * The poll's errors (BAD_EVENT_QUEUE_ID, a bad acknowledgement) are thrown before anything is written.
 */
export async function startPoll(
  services: Services,
  res: ServerResponse,
  userId: number,
  params: PollParams,
  ignored: readonly string[],
): Promise<string | null> {
  let immediate: string | null = null;
  let held = false;
  const respond = (eventsJson: string): void => {
    if (held) writeEvents(res, eventsBody(eventsJson, ignored), services.queues.isClosing);
    else immediate = eventsJson;
  };
  const cancel = await services.queues.poll(
    { userId, queueId: params.queue_id, lastEventId: params.last_event_id, dontBlock: params.dont_block },
    respond,
  );
  if (immediate !== null || !cancel) return eventsBody(immediate ?? '[]', ignored);
  held = true;
  // The client may have hung up while the request was being authenticated.
  if (res.destroyed) {
    cancel();
    return null;
  }
  res.once('close', () => {
    if (!res.writableFinished) cancel();
  });
  return null;
}

/**
 * Errors of polls that the direct path ran, for the Fastify route to render: a poll has
 * effects (it acknowledges events, replaces a held poll), so it is never run twice.
 */
const handedOver = new WeakMap<IncomingMessage, unknown>();

/** For the Fastify route: the error the direct path's poll of this request threw, if any. */
export function takeHandedOverError(req: IncomingMessage): unknown {
  const e = handedOver.get(req);
  handedOver.delete(req);
  return e;
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

const NO_PATH_PARAMS: Record<string, string> = Object.freeze(Object.create(null) as Record<string, string>);

/**
 * The query string as Fastify's parser (app.ts) reads it, URLSearchParams with the last value
 * winning. A query with nothing to decode (the usual poll) is split directly, which gives the
 * same result at a fraction of the cost.
 */
export function parseQuery(query: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  if (query.includes('%') || query.includes('+') || query.startsWith('?')) {
    for (const [k, v] of new URLSearchParams(query)) out[k] = v;
    return out;
  }
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq < 0) out[pair] = '';
    else out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

/**
 * How long the polls arriving in one turn of the event loop are handled before later ones
 * wait for the next turns. A fan-out answers thousands of held polls (events/dispatcher.ts),
 * and their clients' next polls come back together: handled in the turn they arrive in, a
 * burst of a thousand made that turn the longest of the fan-out.
 */
const POLL_SLICE_MS = 4;

/** Runs polls in arrival order, at most POLL_SLICE_MS of them per turn of the event loop. */
export class PollSlices {
  /** When this turn's slice began (performance.now()), or -1 when none did. */
  private sliceStart = -1;
  private readonly waiting: (() => void)[] = [];
  private head = 0;

  run(work: () => void): void {
    if (this.head === this.waiting.length) {
      const now = performance.now();
      if (this.sliceStart < 0) {
        this.sliceStart = now;
        setImmediate(this.endTurn);
      }
      if (now - this.sliceStart < POLL_SLICE_MS) return work();
    }
    this.waiting.push(work);
  }

  // Runs in the check phase of the slice's turn: waiting polls get the following turns.
  private readonly endTurn = (): void => {
    if (this.head < this.waiting.length) setImmediate(this.drain);
    else this.sliceStart = -1;
  };

  /**
   * A poll's work continues in microtasks after it is started (each await), so the next one
   * is started from a microtask too: the clock then sees the work of those before it.
   */
  private readonly drain = (): void => {
    this.sliceStart = performance.now();
    const step = (): void => {
      if (this.head === this.waiting.length) {
        this.waiting.length = 0;
        this.head = 0;
        this.sliceStart = -1;
        return;
      }
      if (performance.now() - this.sliceStart >= POLL_SLICE_MS) {
        if (this.head > 1024 && this.head * 2 > this.waiting.length) {
          this.waiting.splice(0, this.head);
          this.head = 0;
        }
        setImmediate(this.drain);
        return;
      }
      const work = this.waiting[this.head]!;
      this.waiting[this.head++] = undefined as unknown as () => void;
      work();
      queueMicrotask(step);
    };
    step();
  };
}

/**
 * Serves the ordinary long-poll, `GET /api/v1/events` (or `/json/events`) with HTTP Basic
 * credentials and no body, straight from Node's request event instead of through Fastify:
 * Clients re-poll as soon as they are answered, so under load most requests are polls, and
 * Fastify's routing, request and reply objects and per-request logger cost about as much as
 * the poll itself. The direct path runs the route's own steps (realm by host, API key,
 * `pollParams`, startPoll) and hands every request it does not answer with success to
 * Fastify untouched: other paths and methods, a session cookie, a body, the server shutting
 * down, and every failure (a failed poll's error is handed over, not repeated), so errors
 * come from the one error handler. Polls are handled in slices of the event loop's turns
 * (PollSlices), so that a burst of them waits instead of stalling the server.
 *
 * Replaces Fastify's request listener on `server` and must be called before anything else
 * listens for requests. Fastify's onRequest hooks do not run for requests served here:
 * `prelude` is what they do that polls need (the read cache's Redis sync). Request logging
 * (debug level) needs Fastify, so the caller installs this only without it.
 */
export function serveLongPollsDirectly(server: Server, services: Services, prelude: (() => Promise<void>) | null): void {
  const listeners = server.listeners('request') as RequestListener[];
  if (listeners.length !== 1) throw new Error(`expected Fastify's request listener alone, found ${listeners.length}`);
  const fastify = listeners[0]!;
  server.removeListener('request', fastify);
  const slices = new PollSlices();

  const poll = async (req: IncomingMessage, res: ServerResponse, query: string): Promise<void> => {
    // Shutting down (a poll may have waited for its slice meanwhile): Fastify refuses it.
    if (services.queues.isClosing) return fastify(req, res);
    let caller: { user: User; params: PollParams; ignored: string[] } | null = null;
    try {
      if (prelude) await prelude();
      const realm = await resolveRealm(services, req.headers.host);
      if (realm) {
        const user = await authenticateApiKey(services, realm, req);
        const { values, ignored } = parseParams(pollParams, parseQuery(query), NO_PATH_PARAMS);
        caller = { user, params: values, ignored };
      }
    } catch {
      // Nothing happened yet: Fastify repeats these steps and renders the error.
    }
    if (!caller) return fastify(req, res);
    let body: string | null;
    try {
      body = await startPoll(services, res, caller.user.id, caller.params, caller.ignored);
    } catch (e) {
      handedOver.set(req, e);
      return fastify(req, res);
    }
    if (body !== null) writeEvents(res, body, false);
  };

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const h = req.headers;
    if (
      (path !== '/api/v1/events' && path !== '/json/events') ||
      req.method !== 'GET' ||
      h.authorization === undefined ||
      h['transfer-encoding'] !== undefined ||
      (h['content-length'] !== undefined && h['content-length'] !== '0')
    ) {
      fastify(req, res);
      return;
    }
    const query = q < 0 ? '' : url.slice(q + 1);
    slices.run(() => {
      poll(req, res, query).catch((e: unknown) => {
        services.log.error({ err: e }, 'long poll failed');
        if (!res.headersSent) res.destroy();
      });
    });
  });
}
