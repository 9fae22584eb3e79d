import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { checkAddReaction, checkRemoveReaction, doAddReaction, doRemoveReaction } from '../../actions/reactions.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';

export function registerReactionRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'POST',
    path: '/messages/:message_id/reactions',
    params: {
      message_id: p.int(),
      emoji_name: p.str(),
      emoji_code: p.str().optional(),
      reaction_type: p.str().optional(),
    },
    handler: async ({ params, realm, user }) => {
      const r = await checkAddReaction(services, realm, user, params.message_id, {
        emojiName: params.emoji_name,
        emojiCode: params.emoji_code,
        reactionType: params.reaction_type,
      });
      await doAddReaction(services, realm, user, r);
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/messages/:message_id/reactions',
    params: {
      message_id: p.int(),
      emoji_name: p.str().optional(),
      emoji_code: p.str().optional(),
      reaction_type: p.str().optional(),
    },
    handler: async ({ params, realm, user }) => {
      const r = await checkRemoveReaction(services, realm, user, params.message_id, {
        emojiName: params.emoji_name,
        emojiCode: params.emoji_code,
        reactionType: params.reaction_type,
      });
      await doRemoveReaction(services, realm, user, r);
    },
  });
}
