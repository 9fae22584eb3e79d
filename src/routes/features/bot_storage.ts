import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../services.js';
import { doRemoveBotStorage, doSetBotStorage, fetchBotStorageValues } from '../../actions/bot_storage.js';
import type { User } from '../../db/tables.js';
import { JsonableError } from '../../errors.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';

/** Feature level 494: only bots have storage. */
function requireBot(user: User): void {
  if (!user.is_bot) throw new JsonableError('Must be a bot user', 'PERMISSION_DENIED', 400);
}

/** A bot's key-value storage (zulip_bots' bot_handler.storage). */
export function registerBotStorageRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'PUT',
    path: '/bot_storage',
    authorize: requireBot,
    params: { storage: p.json(z.record(z.string(), z.string())) },
    handler: async ({ params, user }) => {
      await doSetBotStorage(services, user, Object.entries(params.storage));
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/bot_storage',
    authorize: requireBot,
    params: { keys: p.strList().optional() },
    handler: async ({ params, user }) => ({ storage: await fetchBotStorageValues(services, user, params.keys) }),
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/bot_storage',
    authorize: requireBot,
    params: { keys: p.strList().optional() },
    handler: async ({ params, user }) => {
      await doRemoveBotStorage(services, user, params.keys);
    },
  });
}
