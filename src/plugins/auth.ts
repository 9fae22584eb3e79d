import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { JsonableError, unauthorized } from '../errors.js';
import type { Realm, User } from '../db/tables.js';
import { fetchRealmByStringIdCached, fetchUserByEmailCached } from '../db/cached.js';
import type { Services } from '../services.js';
import { BOT_INCOMING_WEBHOOK } from '../lib/roles.js';

let parsedExternalUrl = { url: '', hostname: '' };

/** The lowercase host name of EXTERNAL_URL, parsed once rather than per request. */
function externalHostname(externalUrl: string): string {
  if (parsedExternalUrl.url !== externalUrl) parsedExternalUrl = { url: externalUrl, hostname: new URL(externalUrl).hostname.toLowerCase() };
  return parsedExternalUrl.hostname;
}

/**
 * Which organization a request is for, chosen by host name as Zulip does with subdomains:
 * `<string_id>.<external host>` selects that realm; any other host gets the default realm
 * (string_id ""). Returns null for a subdomain no realm has.
 */
export async function resolveRealm(services: Services, hostHeader: string | undefined): Promise<Realm | null> {
  const host = (hostHeader ?? '').toLowerCase().replace(/:\d+$/, '');
  const base = externalHostname(services.config.externalUrl);
  let stringId = '';
  if (host.endsWith(`.${base}`)) {
    const sub = host.slice(0, -(base.length + 1));
    if (sub && !sub.includes('.')) stringId = sub;
  }
  const realm = await fetchRealmByStringIdCached(services.db.kysely, stringId);
  if (realm) return realm;
  if (stringId !== '') return null;
  return null;
}

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    // Compare anyway so that timing does not reveal the length mismatch early.
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

export function parseBasicAuth(header: string | undefined): { username: string; password: string } {
  if (header === undefined) throw unauthorized('Missing authorization header for basic auth');
  const parts = header.trim().split(/\s+/);
  if (parts.length !== 2) throw unauthorized('Invalid authorization header for basic auth');
  if (parts[0]!.toLowerCase() !== 'basic') throw unauthorized('This endpoint requires HTTP basic authentication.');
  const decoded = Buffer.from(parts[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw unauthorized('Invalid authorization header for basic auth');
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** Deactivation checks shared by every way of authenticating. */
export function checkCanAuthenticate(realm: Realm, user: User): void {
  if (realm.deactivated) throw new JsonableError('This organization has been deactivated', 'REALM_DEACTIVATED', 401);
  if (!user.is_active) throw new JsonableError('Account is deactivated', 'USER_DEACTIVATED', 401);
}

/**
 * Zulip's validate_api_key: an incoming-webhook bot's key works only where Zulip allows it
 * (webhook_view, and the views flagged allow_incoming_webhooks: sending a message); anywhere
 * else authenticated_rest_api_view turns the refusal into a 401.
 */
export function checkWebhookBotAccess(user: User, allowIncomingWebhooks: boolean): void {
  if (user.bot_type === BOT_INCOMING_WEBHOOK && !allowIncomingWebhooks) {
    throw unauthorized('This API is not available to incoming webhook bots.');
  }
}

/**
 * HTTP Basic with the user's email and API key, the key compared in constant time. Takes a
 * Fastify request or Node's own (the long-poll path, routes/events/long_poll.ts).
 */
export async function authenticateApiKey(
  services: Services,
  realm: Realm,
  req: { headers: IncomingHttpHeaders },
  opts: { allowIncomingWebhooks?: boolean } = {},
): Promise<User> {
  const { username, password } = parseBasicAuth(req.headers.authorization);
  if (!/^[A-Za-z0-9]{32}$/.test(password)) throw new JsonableError('Malformed API key', 'INVALID_API_KEY', 401);
  const user = await fetchUserByEmailCached(services.db.kysely, realm.id, username);
  if (!user || !safeEqual(user.api_key, password)) throw new JsonableError('Invalid API key', 'INVALID_API_KEY', 401);
  checkCanAuthenticate(realm, user);
  checkWebhookBotAccess(user, opts.allowIncomingWebhooks ?? false);
  return user;
}
