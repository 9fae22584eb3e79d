import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { JsonableError, badRequest } from '../../errors.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import {
  accessClientDevice,
  accessPushDevice,
  checkPushToken,
  checkRegisterPushDevice,
  checkSendE2eeTestPushNotification,
  checkSendTestPushNotification,
  doAddPushDeviceToken,
  doRegisterClientDevice,
  doRegisterPushDevice,
  doRemoveClientDevice,
  doRemovePushDeviceToken,
  doSendE2eeTestPushNotification,
  doSendTestPushNotification,
} from '../../actions/push.js';
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
        await doRemovePushDeviceToken(services, user, await accessPushDevice(services, user, 'apns', params.token));
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
      await doRemovePushDeviceToken(services, user, await accessPushDevice(services, user, 'fcm', params.token));
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/mobile_push/test_notification',
    authorize: requireHuman,
    params: { token: p.str().optional() },
    handler: async ({ realm, user, params }) => {
      const devices = await checkSendTestPushNotification(services, user, params.token);
      await doSendTestPushNotification(services, realm, user, devices);
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/register_client_device',
    authorize: requireHuman,
    params: {},
    handler: async ({ realm, user }) => ({ device_id: (await doRegisterClientDevice(services, realm, user)).id }),
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/remove_client_device',
    authorize: requireHuman,
    params: { device_id: p.int() },
    handler: async ({ realm, user, params }) => {
      await doRemoveClientDevice(services, realm, user, await accessClientDevice(services, user, params.device_id));
    },
  });

  // End-to-end encrypted push (Zulip 11+): the device's key, and its token sealed to the key of
  // Zulip's push notification service, which alone can read it.
  endpoint(app, services, {
    method: 'POST',
    path: '/mobile_push/register',
    authorize: requireHuman,
    params: {
      device_id: p.int(),
      push_key_id: p.int().optional(),
      push_key: p.str().optional(),
      token_kind: p.str(z.enum(['fcm', 'apns'])).optional(),
      token_id: p.str().optional(),
      bouncer_public_key: p.str().optional(),
      encrypted_push_registration: p.str().optional(),
    },
    handler: async ({ realm, user, params }) => {
      const device = await accessClientDevice(services, user, params.device_id);
      await doRegisterPushDevice(services, realm, user, device, checkRegisterPushDevice(services, device, params));
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/mobile_push/e2ee/test_notification',
    authorize: requireHuman,
    params: { device_id: p.int().optional() },
    handler: async ({ realm, user, params }) => {
      await doSendE2eeTestPushNotification(services, realm, user, await checkSendE2eeTestPushNotification(services, user, params.device_id));
    },
  });
}
