import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { registerReactionRoutes } from './reactions.js';
import { registerSubmessageRoutes } from './submessages.js';
import { registerRealmEmojiRoutes } from './realm_emoji.js';
import { registerUploadRoutes } from './uploads.js';
import { registerPersonalRoutes } from './personal.js';
import { registerMessageExtraRoutes } from './message_extras.js';
import { registerLinkifierRoutes } from './linkifiers.js';
import { registerBotStorageRoutes } from './bot_storage.js';
import { registerAvatarRoutes } from './avatars.js';

/**
 * What real clients call beyond the core areas: reactions, submessages, custom emoji, uploads and
 * attachments, and the smaller per-user endpoints (the client inventory, clients.md §3).
 */
export function registerFeatureRoutes(app: FastifyInstance, services: Services): void {
  registerReactionRoutes(app, services);
  registerSubmessageRoutes(app, services);
  registerRealmEmojiRoutes(app, services);
  registerUploadRoutes(app, services);
  registerPersonalRoutes(app, services);
  registerMessageExtraRoutes(app, services);
  registerLinkifierRoutes(app, services);
  registerBotStorageRoutes(app, services);
  registerAvatarRoutes(app, services);
}
