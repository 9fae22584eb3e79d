import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { JsonableError } from '../errors.js';
import type { Realm, User } from '../db/tables.js';
import type { Services } from '../services.js';
import { authenticateApiKey, resolveRealm } from '../plugins/auth.js';
import { authenticateSession, checkCsrf } from '../plugins/session.js';
import { parseParams, type ParamSpecs, type ParsedParams } from './params.js';
import { stringifyJson } from '../lib/raw_json.js';

export type AuthMode = 'user' | 'none';
export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';

export interface HandlerContext<S extends ParamSpecs, A extends AuthMode> {
  params: ParsedParams<S>;
  realm: Realm;
  user: A extends 'user' ? User : null;
  services: Services;
  req: FastifyRequest;
  reply: FastifyReply;
  /** The sending client's name (Zulip's `client`), from the `client` parameter or the User-Agent. */
  client: string;
  /** Parameters the endpoint does not know, for handlers that render their own response body. */
  ignored: readonly string[];
}

export interface EndpointDef<S extends ParamSpecs, A extends AuthMode> {
  method: Method;
  /** Path below /api/v1 and /json, in Fastify syntax (`/users/:user_id`). */
  path: string;
  auth?: A;
  params: S;
  /**
   * Runs after authentication and before parameters are parsed, like Zulip's role
   * decorators (require_realm_admin ...): a caller without the role gets the role error
   * even when parameters are missing or malformed.
   */
  authorize?: (user: User, realm: Realm) => void;
  /** Counted against the caller's API rate limit (default true; the long-poll GET /events is not). */
  rateLimited?: boolean;
  /** Open to incoming-webhook bots (Zulip's allow_incoming_webhooks view flag; only sending messages). */
  allowIncomingWebhooks?: boolean;
  handler: (ctx: HandlerContext<S, A>) => Promise<Record<string, unknown> | void>;
}

/** Zulip names the client after the first token of the User-Agent ("ZulipMobile/27.1 (...)"). */
export function clientName(req: FastifyRequest, raw: Record<string, string>): string {
  if (raw.client) return raw.client.slice(0, 30);
  const ua = req.headers['user-agent'];
  if (!ua) return 'Unspecified';
  const first = ua.split(/[\s/]/, 1)[0] ?? '';
  return first.slice(0, 30) || 'Unspecified';
}

export function rawParams(req: FastifyRequest): Record<string, string> {
  const q = (req.query ?? {}) as Record<string, string>;
  const b = req.body && typeof req.body === 'object' ? (req.body as Record<string, string>) : {};
  return Object.assign(Object.create(null) as Record<string, string>, q, b);
}

export async function requestRealm(services: Services, req: FastifyRequest): Promise<Realm> {
  const realm = await resolveRealm(services, req.headers.host);
  if (!realm) throw new JsonableError('Invalid subdomain', 'NONEXISTENT_SUBDOMAIN', 404);
  return realm;
}

/**
 * Declares one API endpoint, served under /api/v1 (HTTP Basic auth) and /json (a browser
 * session, or Basic). It parses parameters through their specs, authenticates, runs the
 * handler and renders Zulip's success shape with `ignored_parameters_unsupported`.
 */
export function endpoint<S extends ParamSpecs, A extends AuthMode = 'user'>(
  app: FastifyInstance,
  services: Services,
  def: EndpointDef<S, A>,
): void {
  for (const prefix of ['/api/v1', '/json'] as const) {
    app.route({
      method: def.method,
      url: prefix + def.path,
      handler: async (req, reply) => {
        const realm = await requestRealm(services, req);
        let user: User | null = null;
        if ((def.auth ?? 'user') === 'user') {
          if (prefix === '/json' && !req.headers.authorization) {
            user = await authenticateSession(services, realm, req);
            // Only cookie-authenticated requests can be forged by another site; Basic auth cannot.
            checkCsrf(req);
          } else {
            user = await authenticateApiKey(services, realm, req, { allowIncomingWebhooks: def.allowIncomingWebhooks ?? false });
          }
        }
        req.userId = user?.id ?? null;
        if (def.rateLimited ?? true) await services.rateLimiter.checkApi(req, reply, user?.id ?? null);
        if (def.authorize && user) def.authorize(user, realm);
        const raw = rawParams(req);
        const { values, ignored } = parseParams(def.params, raw, (req.params ?? {}) as Record<string, string>);
        const data = await def.handler({
          params: values,
          realm,
          user: user as HandlerContext<S, A>['user'],
          services,
          req,
          reply,
          client: clientName(req, raw),
          ignored,
        });
        if (reply.sent) return reply;
        const body: Record<string, unknown> = { result: 'success', msg: '', ...(data ?? {}) };
        if (ignored.length) body.ignored_parameters_unsupported = ignored;
        // Serialized here so that cached, pre-serialized parts (RawJson) go out as they are.
        return reply.code(200).header('content-type', 'application/json; charset=utf-8').send(stringifyJson(body));
      },
    });
  }
}
