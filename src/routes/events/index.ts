import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { checkRegister, doRegister, type RegisterRequest } from '../../events/register.js';
import { capabilitiesParam, eventTypesParam, idleQueueTimeoutParam, includeSubscribersParam, narrowParam } from './params.js';
import { registerPresenceRoutes } from './presence.js';

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
 * Answers a held poll on the raw response: a held poll has left Fastify's request cycle
 * (hijacked), so that thousands of waiting requests cost no more than their sockets and a
 * small closure each.
 */
function writeHeld(res: ServerResponse, body: string, closing: boolean): void {
  if (res.destroyed || res.headersSent) return;
  const headers: OutgoingHttpHeaders = { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) };
  // Polls answered because the server is shutting down must not keep their connection alive.
  if (closing) headers.connection = 'close';
  res.writeHead(200, headers).end(body);
}

export function registerEventRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'POST',
    path: '/register',
    params: {
      event_types: eventTypesParam(),
      fetch_event_types: eventTypesParam(),
      apply_markdown: p.bool().default(false),
      client_gravatar: p.bool().alias('client_extavatar').default(true),
      include_subscribers: includeSubscribersParam(),
      slim_presence: p.bool().default(false),
      presence_history_limit_days: p.int().optional(),
      all_public_streams: p.bool().default(false),
      client_capabilities: capabilitiesParam(),
      narrow: narrowParam(),
      idle_queue_timeout: idleQueueTimeoutParam(),
    },
    handler: async ({ params, realm, user, client }) => {
      const req: RegisterRequest = {
        eventTypes: params.event_types,
        fetchEventTypes: params.fetch_event_types,
        applyMarkdown: params.apply_markdown,
        clientGravatar: params.client_gravatar,
        includeSubscribers: params.include_subscribers,
        slimPresence: params.slim_presence,
        presenceHistoryLimitDays: params.presence_history_limit_days,
        allPublicStreams: params.all_public_streams,
        clientCapabilities: params.client_capabilities,
        narrow: params.narrow,
        idleQueueTimeout: params.idle_queue_timeout,
        clientName: client,
      };
      checkRegister(user, req);
      return doRegister(services, realm, user, req);
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/events',
    // A long-poll is one request per batch of events or heartbeat; Zulip does not count them.
    rateLimited: false,
    params: {
      queue_id: p.str(),
      last_event_id: p.int(),
      dont_block: p.bool().default(false),
    },
    handler: async ({ params, user, reply, ignored }) => {
      let immediate: string | null = null;
      let held = false;
      // Closures over the raw response only, so Fastify's request objects can be collected while held.
      const res = reply.raw;
      const respond = (eventsJson: string): void => {
        if (held) writeHeld(res, eventsBody(eventsJson, ignored), services.queues.isClosing);
        else immediate = eventsJson;
      };
      const cancel = await services.queues.poll(
        { userId: user.id, queueId: params.queue_id, lastEventId: params.last_event_id, dontBlock: params.dont_block },
        respond,
      );
      if (immediate !== null || !cancel) {
        reply.code(200).header('content-type', 'application/json; charset=utf-8').send(eventsBody(immediate ?? '[]', ignored));
        return;
      }
      held = true;
      reply.hijack();
      // The client may have hung up while the request was being authenticated.
      if (res.destroyed) return cancel();
      res.once('close', () => {
        if (!res.writableFinished) cancel();
      });
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/events',
    params: { queue_id: p.str() },
    handler: async ({ params, user }) => {
      await services.queues.delete(user.id, params.queue_id);
    },
  });

  registerPresenceRoutes(app, services);
}
