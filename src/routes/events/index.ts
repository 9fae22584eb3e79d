import type { FastifyInstance, FastifyReply } from 'fastify';
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
function sendEvents(reply: FastifyReply, eventsJson: string, ignored: readonly string[], closing: boolean): void {
  let body = `{"result":"success","msg":"","events":${eventsJson}`;
  if (ignored.length) body += `,"ignored_parameters_unsupported":${JSON.stringify(ignored)}`;
  // Polls answered because the server is shutting down must not keep their connection alive.
  if (closing) reply.header('connection', 'close');
  reply.code(200).header('content-type', 'application/json; charset=utf-8').send(`${body}}`);
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
      await new Promise<void>((resolve, reject) => {
        const respond = (eventsJson: string): void => {
          sendEvents(reply, eventsJson, ignored, services.queues.isClosing);
          resolve();
        };
        const gone = (cancel: () => void): void => {
          cancel();
          // The client is gone: nothing may be sent on its behalf.
          reply.hijack();
          resolve();
        };
        services.queues
          .poll({ userId: user.id, queueId: params.queue_id, lastEventId: params.last_event_id, dontBlock: params.dont_block }, respond)
          .then((cancel) => {
            if (!cancel) return;
            // The client may have hung up while the request was being authenticated.
            if (reply.raw.destroyed) return gone(cancel);
            reply.raw.once('close', () => {
              if (!reply.raw.writableFinished) gone(cancel);
            });
          }, reject);
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
