import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { checkRegister, doRegister, type RegisterRequest } from '../../events/register.js';
import { capabilitiesParam, eventTypesParam, idleQueueTimeoutParam, includeSubscribersParam, narrowParam } from './params.js';
import { registerPresenceRoutes } from './presence.js';
import { pollParams, startPoll, takeHandedOverError } from './long_poll.js';

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
    params: pollParams,
    // Most polls are served before Fastify (long_poll.ts); this route answers the others.
    handler: async ({ params, user, req, reply, ignored }) => {
      const handedOver = takeHandedOverError(req.raw);
      if (handedOver !== undefined) throw handedOver;
      const body = await startPoll(services, reply.raw, user.id, params, ignored);
      if (body !== null) {
        reply.code(200).header('content-type', 'application/json; charset=utf-8').send(body);
        return;
      }
      reply.hijack();
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
