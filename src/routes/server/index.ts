import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { endpoint } from '../endpoint.js';
import { ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION } from '../../version.js';
import { realmUrl, realmIconUrl } from '../../lib/urls.js';
import { renderRealmDescription } from '../../lib/format/settings.js';
import { realmSettings } from '../../lib/realm_settings.js';
import { hasWebPublicStreams } from '../../db/repos/settings.js';
import { externalAuthMethods, realmAuthMethods, requireEmailFormatUsernames } from '../../lib/auth_methods.js';

export function registerServerRoutes(app: FastifyInstance, services: Services): void {
  // Unauthenticated; python's client sends Basic auth here too, which is simply not checked.
  endpoint(app, services, {
    method: 'GET',
    path: '/server_settings',
    auth: 'none',
    params: {},
    handler: async ({ realm }) => {
      const url = realmUrl(services.config, realm);
      // Zulip's allow_web_public_streams_access: spectator access on and a web-public channel to see.
      const methods = realmAuthMethods(services.config, realm);
      const webPublic = realmSettings(realm).enable_spectator_access && (await hasWebPublicStreams(services.db.kysely, realm.id));
      return {
        authentication_methods: {
          password: !!(methods.Email || methods.LDAP),
          dev: false,
          email: !!methods.Email,
          ldap: !!methods.LDAP,
          remoteuser: false,
          github: false,
          azuread: false,
          gitlab: false,
          apple: false,
          google: false,
          saml: false,
          'openid connect': !!methods['OpenID Connect'],
        },
        external_authentication_methods: externalAuthMethods(services.config, realm),
        zulip_feature_level: ZULIP_FEATURE_LEVEL,
        zulip_version: ZULIP_VERSION,
        zulip_merge_base: ZULIP_MERGE_BASE,
        push_notifications_enabled: services.push !== undefined && services.push.enabled !== false,
        is_incompatible: false,
        email_auth_enabled: !!methods.Email,
        require_email_format_usernames: requireEmailFormatUsernames(services.config, realm),
        realm_url: url,
        realm_uri: url,
        realm_name: realm.name,
        realm_icon: realmIconUrl(services.config, realm),
        realm_description: renderRealmDescription(realm.description, url),
        realm_web_public_access_enabled: webPublic,
      };
    },
  });
}
