import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';
import { checkDeleteAvatar, checkSetAvatar, doDeleteAvatar, doSetAvatar } from '../../actions/avatars.js';
import { fetchStoredFile } from '../../db/repos/stored_files.js';
import { storedPath } from '../../lib/uploads.js';
import { filesOf } from '../../plugins/body.js';
import { JsonableError, unauthorized } from '../../errors.js';
import { accessUserByEmail, loadUserAccess } from '../../lib/access/users.js';
import { fetchUserById } from '../../db/repos/users.js';
import type { User } from '../../db/tables.js';
import { AVATAR_FROM_GRAVATAR, avatarUrl } from '../../lib/avatar.js';
import { avatarUrlMedium } from '../../lib/format/users.js';
import { realmUrl } from '../../lib/urls.js';
import { endpoint, requestRealm } from '../endpoint.js';
import { authenticateFileRequest } from './file_auth.js';
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

  /**
   * Zulip's avatar view: a redirect to the user's avatar (by ID or email), so clients can show
   * avatars knowing only the user. Unknown users get the Gravatar of what was asked for, users
   * a guest may not see the "unknown user" image. The query string is passed on, except the
   * API key zulip-mobile adds to image URLs.
   */
  const redirectToAvatar = async (req: FastifyRequest<{ Params: { who: string } }>, reply: FastifyReply, medium: boolean) => {
    const realm = await requestRealm(services, req);
    const caller = await authenticateFileRequest(services, realm, req);
    if (!caller) throw unauthorized('Not logged in: API authentication or user session required');
    const who = req.params.who;
    const db = services.db.kysely;
    const base = realmUrl(services.config, realm);
    let target: User | undefined;
    if (/^[0-9]+$/.test(who)) {
      const id = Number(who);
      target = Number.isSafeInteger(id) ? await fetchUserById(db, realm.id, id) : undefined;
    } else {
      try {
        target = await accessUserByEmail(db, services.config, realm, caller, who, { allowBots: true, allowDeactivated: true, forAdmin: false });
      } catch (e) {
        // Not a visible address: answered like an unknown one.
        if (!(e instanceof JsonableError)) throw e;
      }
    }
    let url: string;
    if (!target) {
      const asked = { avatar_source: AVATAR_FROM_GRAVATAR, avatar_version: 1, delivery_email: who, realm_id: realm.id, id: 0 };
      url = medium ? avatarUrlMedium(base, asked) : avatarUrl(base, asked);
    } else if (!(await loadUserAccess(db, realm, caller)).canAccess(target)) {
      url = `${base}/static/images/unknown-user-avatar.png`;
    } else {
      url = medium ? avatarUrlMedium(base, target) : avatarUrl(base, target);
    }
    const query = new URLSearchParams(req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '');
    query.delete('api_key');
    const extra = query.toString();
    if (extra) url += `${url.includes('?') ? '&' : '?'}${extra}`;
    return reply.redirect(url, 302);
  };
  app.get('/avatar/:who', (req: FastifyRequest<{ Params: { who: string } }>, reply) => redirectToAvatar(req, reply, false));
  app.get('/avatar/:who/medium', (req: FastifyRequest<{ Params: { who: string } }>, reply) => redirectToAvatar(req, reply, true));

  // Uploaded avatars, and the organization's icon and logos under realm/, are public, as Zulip
  // serves them; `?version=` only defeats caches.
  const serveAvatarFile = async (reply: FastifyReply, realmIdParam: string, name: string, fileName: string) => {
    const realmId = Number(realmIdParam);
    const file = Number.isSafeInteger(realmId) ? await fetchStoredFile(services.db.kysely, storedPath.avatar(realmId, name)) : undefined;
    if (!file) return sendFileNotFound(reply);
    return sendStoredFile(reply, file, { fileName, cache: 'public' });
  };
  app.get('/user_avatars/:realm_id/:file_name', (req: FastifyRequest<{ Params: { realm_id: string; file_name: string } }>, reply) =>
    serveAvatarFile(reply, req.params.realm_id, req.params.file_name, req.params.file_name),
  );
  app.get('/user_avatars/:realm_id/realm/:file_name', (req: FastifyRequest<{ Params: { realm_id: string; file_name: string } }>, reply) =>
    serveAvatarFile(reply, req.params.realm_id, `realm/${req.params.file_name}`, req.params.file_name),
  );
}
