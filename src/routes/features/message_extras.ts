import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { renderContent } from '../../actions/messages.js';
import { badRequest } from '../../errors.js';
import { accessMessage } from '../../lib/access/messages.js';
import { formatMessageHistory } from '../../lib/format/message_history.js';
import { realmSettings } from '../../lib/realm_settings.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';

export function registerMessageExtraRoutes(app: FastifyInstance, services: Services): void {
  // Zulip's render_message_backend: rendered as the caller would send it, nothing stored.
  endpoint(app, services, {
    method: 'POST',
    path: '/messages/render',
    params: { content: p.str() },
    handler: async ({ params, realm, user }) => ({ rendered: (await renderContent(services, realm, user, params.content)).html }),
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/messages/:message_id/history',
    params: { message_id: p.int(), allow_empty_topic_name: p.bool().default(false) },
    handler: async ({ params, realm, user }) => {
      const settings = realmSettings(realm);
      const visibility = settings.message_edit_history_visibility_policy;
      if (visibility === 'none') throw badRequest('Message edit history is disabled in this organization');
      const { message } = await accessMessage(services.db.kysely, realm, user, params.message_id);
      const emptyTopicDisplayName = params.allow_empty_topic_name ? null : settings.empty_topic_display_name;
      return { message_history: formatMessageHistory(message, { visibility, emptyTopicDisplayName }) };
    },
  });
}
