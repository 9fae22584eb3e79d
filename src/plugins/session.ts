import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { JsonableError, unauthorized } from '../errors.js';
import type { Realm, User } from '../db/tables.js';
import { now } from '../db/index.js';
import { fetchUserById } from '../db/repos/users.js';
import { deleteSession, fetchSession, insertSession, takeSession } from '../db/repos/sessions.js';
import type { Config } from '../config.js';
import type { Services } from '../services.js';
import { checkCanAuthenticate, safeEqual } from './auth.js';

export const SESSION_COOKIE = 'parley_session';
/** Django's names, which Zulip's web app and its tools use: the token is read from the cookie and echoed in the header. */
export const CSRF_COOKIE = 'csrftoken';
export const CSRF_HEADER = 'x-csrftoken';
const SESSION_SECONDS = 14 * 24 * 3600;
const CSRF_SECONDS = 365 * 24 * 3600;
/** Zulip's ExternalAuthResult.LOGIN_KEY_EXPIRATION_SECONDS: a desktop login token is good for this long, once. */
const LOGIN_TOKEN_SECONDS = 60;
/** Login tokens share the sessions table under this prefix, so any process can redeem them. */
const LOGIN_TOKEN_PREFIX = 'login-token:';

export function cookieValue(req: FastifyRequest, name: string): string | undefined {
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

const secureAttribute = (config: Config): string => (config.externalUrl.startsWith('https:') ? '; Secure' : '');

/** The browser-session counterpart of API-key auth, for routes under /json. */
export async function authenticateSession(services: Services, realm: Realm, req: FastifyRequest): Promise<User> {
  const user = await sessionUser(services, realm, req);
  if (!user) throw unauthorized('Not logged in: API authentication or user session required');
  checkCanAuthenticate(realm, user);
  return user;
}

/** The user a request's session cookie belongs to, or null when there is no live session. */
export async function sessionUser(services: Services, realm: Realm, req: FastifyRequest): Promise<User | null> {
  const id = cookieValue(req, SESSION_COOKIE);
  if (!id || id.startsWith(LOGIN_TOKEN_PREFIX)) return null;
  const session = await fetchSession(services.db.kysely, id);
  if (!session || session.expires < now()) return null;
  return (await fetchUserById(services.db.kysely, realm.id, session.user_id)) ?? null;
}

/** Starts a session for a user who just proved who they are; returns the Set-Cookie value. */
export async function startSession(services: Services, user: User): Promise<string> {
  const id = randomBytes(24).toString('base64url');
  await insertSession(services.db.kysely, { id, user_id: user.id, expires: now() + SESSION_SECONDS });
  return `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${SESSION_SECONDS}${secureAttribute(services.config)}`;
}

/** Ends the request's session on the server; returns the Set-Cookie value that clears it in the browser. */
export async function endSession(services: Services, req: FastifyRequest): Promise<string> {
  const id = cookieValue(req, SESSION_COOKIE);
  if (id && !id.startsWith(LOGIN_TOKEN_PREFIX)) await deleteSession(services.db.kysely, id);
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secureAttribute(services.config)}`;
}

/**
 * The CSRF token cookie: readable by the page's script (not HttpOnly), which sends it back in
 * the X-CSRFToken header. Returns the Set-Cookie value when the request has no token yet.
 */
export function ensureCsrfCookie(services: Services, req: FastifyRequest): string | null {
  if (/^[A-Za-z0-9]{32,64}$/.test(cookieValue(req, CSRF_COOKIE) ?? '')) return null;
  const token = randomBytes(24).toString('hex');
  return `${CSRF_COOKIE}=${token}; Path=/; SameSite=Lax; Max-Age=${CSRF_SECONDS}${secureAttribute(services.config)}`;
}

/**
 * Double-submit check for requests a browser could be tricked into sending: another site can
 * make the browser send the cookies, but cannot read the token to put it in the header.
 */
export function checkCsrf(req: FastifyRequest): void {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return;
  const cookie = cookieValue(req, CSRF_COOKIE);
  const header = req.headers[CSRF_HEADER];
  if (!cookie) throw new JsonableError('CSRF error: CSRF cookie not set.', 'CSRF_FAILED', 403);
  if (typeof header !== 'string' || !header) throw new JsonableError('CSRF error: CSRF token missing.', 'CSRF_FAILED', 403);
  if (!safeEqual(header, cookie)) throw new JsonableError('CSRF error: CSRF token incorrect.', 'CSRF_FAILED', 403);
}

/** A one-time token (API-key format, as Zulip's) that logs its holder in within a minute. */
export async function createLoginToken(services: Services, user: User): Promise<string> {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(32);
  let token = '';
  for (const b of bytes) token += alphabet[b % alphabet.length];
  await insertSession(services.db.kysely, { id: LOGIN_TOKEN_PREFIX + token, user_id: user.id, expires: now() + LOGIN_TOKEN_SECONDS });
  return token;
}

/** Redeems a login token (at most once); returns its user id, or null if unknown, used or expired. */
export async function redeemLoginToken(services: Services, token: string): Promise<number | null> {
  if (!/^[A-Za-z0-9]{32}$/.test(token)) return null;
  const row = await takeSession(services.db.kysely, LOGIN_TOKEN_PREFIX + token);
  return row && row.expires >= now() ? row.user_id : null;
}
