import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import {
  doConfirmTotpEnrolment,
  doDisableTwoFactor,
  doRegenerateRecoveryCodes,
  doStartTotpEnrolment,
  fetchTwoFactorStatus,
} from '../../actions/two_factor.js';

/**
 * Two-factor authentication in personal settings (Zulip's /account/two_factor/ pages, here as
 * JSON for the web app). Every change after enrolment needs a current code, so an API key,
 * which two-factor does not gate, cannot turn it off or move it.
 */
export function registerTwoFactorRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'GET',
    path: '/users/me/two_factor',
    params: {},
    handler: async ({ user }) => ({ two_factor: await fetchTwoFactorStatus(services, user) }),
  });
  endpoint(app, services, {
    method: 'POST',
    path: '/users/me/two_factor/setup',
    params: {},
    handler: async ({ realm, user }) => doStartTotpEnrolment(services, realm, user),
  });
  endpoint(app, services, {
    method: 'POST',
    path: '/users/me/two_factor/confirm',
    params: { code: p.str() },
    handler: async ({ realm, user, params }) => ({ recovery_codes: await doConfirmTotpEnrolment(services, realm, user, params.code) }),
  });
  endpoint(app, services, {
    method: 'POST',
    path: '/users/me/two_factor/recovery_codes',
    params: { code: p.str() },
    handler: async ({ realm, user, params }) => ({ recovery_codes: await doRegenerateRecoveryCodes(services, realm, user, params.code) }),
  });
  endpoint(app, services, {
    method: 'DELETE',
    path: '/users/me/two_factor',
    params: { code: p.str() },
    handler: async ({ realm, user, params }) => {
      await doDisableTwoFactor(services, realm, user, params.code);
    },
  });
}
