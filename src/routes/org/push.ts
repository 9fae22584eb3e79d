import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { badRequest } from '../../errors.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { accessPushDevice, checkPushToken, doAddPushDeviceToken, doRemovePushDeviceToken } from '../../actions/push.js';
import { requireHuman } from './params.js';

/** Zulip's ApnsAppId: a bundle ID such as org.zulip.Zulip. */
const appId = p.custom((raw, name) => {
  if (!/^[.a-zA-Z0-9-]+$/.test(raw)) throw badRequest(`${name} has invalid format`);
  return raw;
});

export function registerPushRoutes(app: FastifyInstance, services: Services): void {
  // Our spec's name for Zulip's APNs endpoint is pushsvc_device_token; both are served.
  for (const path of ['/users/me/apns_device_token', '/users/me/pushsvc_device_token']) {
    endpoint(app, services, {
      method: 'POST',
      path,
      authorize: requireHuman,
      params: { token: p.str(), appid: appId },
      handler: async ({ user, params }) => {
        checkPushToken(params.token, 'apns');
        await doAddPushDeviceToken(services, user, 'apns', params.token, params.appid);
      },
    });
    endpoint(app, services, {
      method: 'DELETE',
      path,
      authorize: requireHuman,
      params: { token: p.str() },
      handler: async ({ user, params }) => {
        checkPushToken(params.token, 'apns');
        await doRemovePushDeviceToken(services, await accessPushDevice(services, user, 'apns', params.token));
      },
    });
  }

  endpoint(app, services, {
    method: 'POST',
    path: '/users/me/android_gcm_reg_id',
    authorize: requireHuman,
    params: { token: p.str() },
    handler: async ({ user, params }) => {
      checkPushToken(params.token, 'fcm');
      await doAddPushDeviceToken(services, user, 'fcm', params.token, null);
    },
  });
  endpoint(app, services, {
    method: 'DELETE',
    path: '/users/me/android_gcm_reg_id',
    authorize: requireHuman,
    params: { token: p.str() },
    handler: async ({ user, params }) => {
      checkPushToken(params.token, 'fcm');
      await doRemovePushDeviceToken(services, await accessPushDevice(services, user, 'fcm', params.token));
    },
  });
}
