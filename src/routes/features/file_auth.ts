import type { FastifyRequest } from 'fastify';
import type { Realm, User } from '../../db/tables.js';
import { fetchUserByApiKey } from '../../db/repos/users.js';
import { JsonableError } from '../../errors.js';
import { authenticateApiKey, checkCanAuthenticate, checkWebhookBotAccess } from '../../plugins/auth.js';
import { authenticateSession } from '../../plugins/session.js';
import type { Services } from '../../services.js';

/**
 * Who asks for a file outside /api/v1 (uploads, thumbnails): the mobile and terminal clients
 * send the Basic header (flutter) or `?api_key=` (zulip-mobile's rewritten <img> URLs), a
 * browser its session cookie. Null for an anonymous request; bad credentials are a 401.
 */
export async function authenticateFileRequest(services: Services, realm: Realm, req: FastifyRequest): Promise<User | null> {
  if (req.headers.authorization) return authenticateApiKey(services, realm, req);
  const apiKey = (req.query as Record<string, string | undefined>).api_key;
  if (apiKey !== undefined) {
    const user = /^[A-Za-z0-9]{32}$/.test(apiKey) ? await fetchUserByApiKey(services.db.kysely, realm.id, apiKey) : undefined;
    if (!user) throw new JsonableError('Invalid API key', 'INVALID_API_KEY', 401);
    checkCanAuthenticate(realm, user);
    checkWebhookBotAccess(user, false);
    return user;
  }
  if (!req.headers.cookie) return null;
  try {
    return await authenticateSession(services, realm, req);
  } catch (e) {
    // An expired or foreign session cookie is just an anonymous visit.
    if (e instanceof JsonableError) return null;
    throw e;
  }
}
