import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';
import type { Realm, User } from '../../db/tables.js';
import { endpoint, requestRealm } from '../endpoint.js';
import { p } from '../params.js';
import { authenticateApiKey } from '../../plugins/auth.js';
import { authenticateSession } from '../../plugins/session.js';
import { fetchUserById } from '../../db/repos/users.js';
import { fetchRealmByStringId } from '../../db/repos/realms.js';
import { realmUrl } from '../../lib/urls.js';
import { vidcallProvider } from '../../lib/video_calls/provider.js';
import {
  checkOAuthState,
  completeOAuth,
  createBigBlueButtonLink,
  createConstructorGroupsLink,
  createJitsiLink,
  createNextcloudTalkLink,
  createOAuthMeeting,
  joinBigBlueButton,
  startOAuth,
} from '../../actions/video_calls.js';
import { badRequest } from '../../errors.js';

/** Browser-facing call routes accept a session cookie, or Basic auth for API clients opening them. */
async function authenticateBrowser(services: Services, realm: Realm, req: FastifyRequest): Promise<User> {
  return req.headers.authorization ? authenticateApiKey(services, realm, req) : authenticateSession(services, realm, req);
}

function query(req: FastifyRequest): Record<string, string> {
  return (req.query ?? {}) as Record<string, string>;
}

const CLOSE_WINDOW_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Parley</title></head>
<body><p>Your video call account is connected. You can close this window.</p><script>window.close()</script></body></html>`;

export function registerCallRoutes(app: FastifyInstance, services: Services): void {
  const provider = vidcallProvider(services.config);

  // The spec's name for the OAuth provider and Zulip's name for the same integration.
  for (const alias of ['vidcall', 'webex']) {
    endpoint(app, services, {
      method: 'POST',
      path: `/calls/${alias}/create`,
      params: {},
      handler: async ({ realm, user }) => ({ url: await createOAuthMeeting(services, realm, user, provider) }),
    });

    app.get(`/calls/${alias}/register`, async (req, reply) => {
      const realm = await requestRealm(services, req);
      const user = await authenticateBrowser(services, realm, req);
      return reply.redirect(await startOAuth(services, realm, user, provider));
    });

    app.get(`/calls/${alias}/complete`, async (req: FastifyRequest, reply: FastifyReply) => {
      const { code, state } = query(req);
      if (!code) throw badRequest("Missing 'code' argument");
      if (!state) throw badRequest("Missing 'state' argument");
      const checked = await checkOAuthState(services, provider, state);
      const realm = await fetchRealmByStringId(services.db.kysely, checked.realm);
      const user = realm && (await fetchUserById(services.db.kysely, realm.id, checked.user_id));
      if (!realm || !user || !user.is_active) throw badRequest(`Invalid ${provider.name} session identifier`);
      const here = await requestRealm(services, req).catch(() => null);
      // The provider returns to the root URL; finish on the realm's own host, as Zulip does.
      if (!here || here.id !== realm.id) return reply.redirect(realmUrl(services.config, realm) + req.url);
      await completeOAuth(services, realm, user, provider, code);
      return reply.type('text/html; charset=utf-8').send(CLOSE_WINDOW_PAGE);
    });
  }

  endpoint(app, services, {
    method: 'GET',
    path: '/calls/bigbluebutton/create',
    params: { meeting_name: p.str(), voice_only: p.bool().default(false) },
    handler: async ({ user, params }) => ({ url: await createBigBlueButtonLink(services, user, params.meeting_name, params.voice_only) }),
  });

  app.get('/calls/bigbluebutton/join', async (req, reply) => {
    const realm = await requestRealm(services, req);
    const user = await authenticateBrowser(services, realm, req);
    const signed = query(req).bigbluebutton;
    if (!signed) throw badRequest("Missing 'bigbluebutton' argument");
    return reply.redirect(await joinBigBlueButton(services, user, signed));
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/calls/jitsi/create',
    params: {},
    handler: async ({ realm }) => ({ url: createJitsiLink(services, realm) }),
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/calls/constructorgroups/create',
    params: {},
    handler: async ({ user }) => ({ url: await createConstructorGroupsLink(services, user) }),
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/calls/nextcloud_talk/create',
    params: { room_name: p.str() },
    handler: async ({ params }) => ({ url: await createNextcloudTalkLink(services, params.room_name) }),
  });
}
