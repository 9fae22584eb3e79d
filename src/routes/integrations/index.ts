import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';
import type { Realm, User } from '../../db/tables.js';
import { JsonableError } from '../../errors.js';
import { authenticateApiKey, checkCanAuthenticate, safeEqual } from '../../plugins/auth.js';
import { fetchActiveUserByNameOrEmailPrefix, fetchUserByApiKey, fetchUserByDeliveryEmail } from '../../db/repos/users.js';
import { parseUrlEncoded } from '../../plugins/body.js';
import { requestRealm } from '../endpoint.js';
import { p, parseParams } from '../params.js';
import { INTEGRATIONS } from '../../integrations/index.js';
import { AnomalousPayloadError, MissingEventHeaderError, UnsupportedEventError, type UserDirectory, type WebhookRequest } from '../../integrations/types.js';
import { checkSendWebhookMessage, doNotifyBotOwnerRateLimited, invalidJsonNotice, missingEventHeaderNotice } from '../../actions/webhooks.js';
import { parseWebhookJson } from '../../integrations/json_body.js';

const WEBHOOK_PARAMS = {
  api_key: p.str().optional(),
  stream: p.str().optional(),
  topic: p.str().optional(),
  only_events: p.strList().optional(),
  exclude_events: p.strList().optional(),
};

/**
 * Zulip's webhook_view authentication: the `api_key` parameter alone (query string or form
 * body), or HTTP Basic for services that can only send credentials that way. Any active
 * account's key is accepted, as in Zulip; incoming-webhook bots are the accounts meant for it.
 */
async function authenticateWebhook(services: Services, realm: Realm, req: FastifyRequest, apiKey: string | undefined): Promise<User> {
  if (apiKey === undefined) {
    if (req.headers.authorization === undefined) throw new JsonableError("Missing 'api_key' argument", 'REQUEST_VARIABLE_MISSING', 400, { var_name: 'api_key' });
    return authenticateApiKey(services, realm, req, { allowIncomingWebhooks: true });
  }
  const key = apiKey.trim();
  if (!/^[A-Za-z0-9]{32}$/.test(key)) throw new JsonableError('Malformed API key', 'INVALID_API_KEY', 401);
  const user = await fetchUserByApiKey(services.db.kysely, realm.id, key);
  if (!user || !safeEqual(user.api_key, key)) throw new JsonableError('Invalid API key', 'INVALID_API_KEY', 401);
  checkCanAuthenticate(realm, user);
  return user;
}

/** Python's urllib.parse.unquote, except that a byte run that is not UTF-8 stays encoded (Python substitutes U+FFFD). */
function safeDecode(v: string): string {
  return v.replace(/(%[0-9A-Fa-f]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run;
    }
  });
}

function lowerHeaders(req: FastifyRequest): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(req.headers)) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/**
 * POST /api/v1/external/<name>: a third-party service's notification, rendered by that
 * integration (src/integrations/) and posted as the authenticated bot. The route keeps the
 * body raw (services send JSON, forms, or JSON labelled as anything), so it registers in its
 * own Fastify context with a raw body parser.
 */
export function registerIntegrationRoutes(app: FastifyInstance, services: Services): void {
  const bodyLimit = services.config.bodyLimitBytes;
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string', bodyLimit }, (_req, body, done) => done(null, body));
    scope.post('/api/v1/external/:integration_name', async (req, reply) => {
      const name = (req.params as { integration_name: string }).integration_name;
      const integration = INTEGRATIONS.get(name);
      if (!integration) return reply.code(404).send({ result: 'error', msg: 'Not Found', code: 'NOT_FOUND' });
      const rawBody = typeof req.body === 'string' ? req.body : '';
      const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      const query = Object.assign(Object.create(null) as Record<string, string>, req.query as Record<string, string>);
      const form = contentType === 'application/x-www-form-urlencoded' ? parseUrlEncoded(rawBody) : {};
      const { values } = parseParams(WEBHOOK_PARAMS, Object.assign(Object.create(null) as Record<string, string>, form, query), {});
      const realm = await requestRealm(services, req);
      const user = await authenticateWebhook(services, realm, req, values.api_key);
      await services.rateLimiter.checkApi(req, reply, user.id);

      let payload: unknown = null;
      if (integration.jsonBody) {
        try {
          payload = parseWebhookJson(rawBody);
        } catch (e) {
          // Zulip's webhook_view: invalid JSON is the sender's doing, so the bot's owner hears of it.
          if (integration.notifyBotOwnerOnInvalidJson !== false) await doNotifyBotOwnerRateLimited(services, realm, user, invalidJsonNotice(integration.webhookName));
          throw e;
        }
      }
      const request: WebhookRequest = { payload, rawBody, contentType, headers: lowerHeaders(req), query };
      const db = services.db.kysely;
      const users: UserDirectory = {
        fullNameByDeliveryEmail: async (email) => (await fetchUserByDeliveryEmail(db, realm.id, email))?.full_name ?? null,
        guessFullName: async (name) => (await fetchActiveUserByNameOrEmailPrefix(db, realm.id, name))?.full_name ?? null,
      };
      let messages;
      try {
        messages = await integration.handle(request, users);
      } catch (e) {
        if (e instanceof UnsupportedEventError) {
          // Zulip answers 200 with an error body, so that the service does not retry or disable the hook.
          throw new JsonableError(
            `The '${e.eventType}' event isn't currently supported by the ${integration.webhookName} webhook; ignoring`,
            'UNSUPPORTED_WEBHOOK_EVENT_TYPE',
            200,
            { webhook_name: integration.webhookName, event_type: e.eventType },
          );
        }
        if (e instanceof AnomalousPayloadError) {
          throw new JsonableError(`Unable to parse request: Did ${integration.webhookName} generate this event?`, 'ANOMALOUS_WEBHOOK_PAYLOAD', 400, {
            webhook_name: integration.webhookName,
          });
        }
        if (e instanceof MissingEventHeaderError) {
          // Zulip's validate_extract_webhook_http_header tells the bot's owner.
          const path = req.url.split('?', 1)[0]!;
          await doNotifyBotOwnerRateLimited(
            services,
            realm,
            user,
            missingEventHeaderNotice(user.full_name, path, e.header, integration.webhookName, services.config.supportEmail),
          );
          throw new JsonableError(`Missing the HTTP event header '${e.header}'`, 'MISSING_HTTP_EVENT_HEADER', 400, { header: e.header });
        }
        throw e;
      }
      const client = `Zulip${integration.webhookName}Webhook`;
      const unquote = (v: string | undefined): string | undefined => (v !== undefined && integration.unquoteUrlParameters ? safeDecode(v) : v);
      const target = { stream: unquote(values.stream), topic: unquote(values.topic), onlyEvents: values.only_events, excludeEvents: values.exclude_events };
      for (const message of messages) await checkSendWebhookMessage(services, realm, user, client, message, target);
      return reply.code(200).send({ result: 'success', msg: '' });
    });
  });
}
