import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { checkAddSubmessage, doAddSubmessage } from '../../actions/submessages.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';

export function registerSubmessageRoutes(app: FastifyInstance, services: Services): void {
  // Polls' and to-do lists' votes, options and tasks (not in zulip.yaml; the web and mobile apps send it).
  endpoint(app, services, {
    method: 'POST',
    path: '/submessage',
    params: { message_id: p.int(), msg_type: p.str(), content: p.str() },
    handler: async ({ params, realm, user }) => {
      const s = await checkAddSubmessage(services, realm, user, params.message_id, params.msg_type, params.content);
      await doAddSubmessage(services, realm, user, s);
    },
  });
}
