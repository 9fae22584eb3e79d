import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';
import { checkDeleteAvatar, checkSetAvatar, doDeleteAvatar, doSetAvatar } from '../../actions/avatars.js';
import { fetchStoredFile } from '../../db/repos/stored_files.js';
import { storedPath } from '../../lib/uploads.js';
import { filesOf } from '../../plugins/body.js';
import { endpoint } from '../endpoint.js';
import { sendFileNotFound, sendStoredFile } from './files.js';

export function registerAvatarRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'POST',
    path: '/users/me/avatar',
    params: {},
    handler: async ({ realm, user, req }) => {
      const image = checkSetAvatar(realm, user, filesOf(req));
      return { avatar_url: await doSetAvatar(services, realm, user, image) };
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/users/me/avatar',
    params: {},
    handler: async ({ realm, user }) => {
      checkDeleteAvatar(realm, user);
      return { avatar_url: await doDeleteAvatar(services, realm, user) };
    },
  });

  // Uploaded avatars are public, as Zulip serves them; `?version=` only defeats caches.
  app.get('/user_avatars/:realm_id/:file_name', async (req: FastifyRequest<{ Params: { realm_id: string; file_name: string } }>, reply) => {
    const realmId = Number(req.params.realm_id);
    const file = Number.isSafeInteger(realmId) ? await fetchStoredFile(services.db.kysely, storedPath.avatar(realmId, req.params.file_name)) : undefined;
    if (!file) return sendFileNotFound(reply);
    return sendStoredFile(reply, file, { fileName: req.params.file_name, cache: 'public' });
  });
}
