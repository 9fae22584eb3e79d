import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';
import { checkAddRealmEmoji, checkRemoveRealmEmoji, doAddRealmEmoji, doRemoveRealmEmoji } from '../../actions/realm_emoji.js';
import { fetchRealmEmoji } from '../../db/repos/realm_emoji.js';
import { fetchStoredFile } from '../../db/repos/stored_files.js';
import { formatRealmEmojiMap } from '../../lib/format/realm_emoji.js';
import { storedPath } from '../../lib/uploads.js';
import { filesOf } from '../../plugins/body.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { requireMemberOrAdmin } from './params.js';
import { sendFileNotFound, sendStoredFile } from './files.js';

export function registerRealmEmojiRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'GET',
    path: '/realm/emoji',
    params: {},
    handler: async ({ realm }) => ({ emoji: formatRealmEmojiMap(await fetchRealmEmoji(services.db.kysely, realm.id)) }),
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/realm/emoji/:emoji_name',
    authorize: requireMemberOrAdmin,
    params: { emoji_name: p.str() },
    handler: async ({ params, realm, user, req }) => {
      const emoji = await checkAddRealmEmoji(services, realm, user, params.emoji_name, filesOf(req));
      await doAddRealmEmoji(services, realm, user, emoji);
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/realm/emoji/:emoji_name',
    params: { emoji_name: p.str() },
    handler: async ({ params, realm, user }) => {
      const emoji = await checkRemoveRealmEmoji(services, realm, user, params.emoji_name);
      await doRemoveRealmEmoji(services, realm, emoji);
    },
  });

  // The image behind `source_url`: public, like the emoji list itself (Zulip serves it statically).
  app.get('/user_avatars/:realm_id/emoji/images/:file_name', async (req: FastifyRequest<{ Params: { realm_id: string; file_name: string } }>, reply) => {
    const realmId = Number(req.params.realm_id);
    const file = Number.isSafeInteger(realmId) ? await fetchStoredFile(services.db.kysely, storedPath.emoji(realmId, req.params.file_name)) : undefined;
    if (!file) return sendFileNotFound(reply);
    return sendStoredFile(reply, file, { fileName: req.params.file_name, cache: 'public' });
  });
}
