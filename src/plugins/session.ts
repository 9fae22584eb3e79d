import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { unauthorized } from '../errors.js';
import type { Realm, User } from '../db/tables.js';
import { now } from '../db/index.js';
import { fetchUserById } from '../db/repos/users.js';
import { deleteSession, fetchSession, insertSession } from '../db/repos/sessions.js';
import type { Services } from '../services.js';
import { checkCanAuthenticate } from './auth.js';

export const SESSION_COOKIE = 'parley_session';
const SESSION_SECONDS = 14 * 24 * 3600;

function cookieValue(req: FastifyRequest, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      // A malformed percent-encoding is just an invalid session, not a server error.
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** The browser-session counterpart of API-key auth, for routes under /json. */
export async function authenticateSession(services: Services, realm: Realm, req: FastifyRequest): Promise<User> {
  const id = cookieValue(req, SESSION_COOKIE);
  if (!id) throw unauthorized('Not logged in: API authentication or user session required');
  const session = await fetchSession(services.db.kysely, id);
  if (!session || session.expires < now()) throw unauthorized('Not logged in: API authentication or user session required');
  const user = await fetchUserById(services.db.kysely, realm.id, session.user_id);
  if (!user) throw unauthorized('Not logged in: API authentication or user session required');
  checkCanAuthenticate(realm, user);
  return user;
}

/** Starts a session for a user who just proved who they are; returns the Set-Cookie value. */
export async function startSession(services: Services, user: User): Promise<string> {
  const id = randomBytes(24).toString('base64url');
  await insertSession(services.db.kysely, { id, user_id: user.id, expires: now() + SESSION_SECONDS });
  return `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${SESSION_SECONDS}`;
}

export async function endSession(services: Services, req: FastifyRequest): Promise<void> {
  const id = cookieValue(req, SESSION_COOKIE);
  if (id) await deleteSession(services.db.kysely, id);
}
