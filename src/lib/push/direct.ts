import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';
import { ApnsClient } from './apns.js';
import { FcmClient, fcmData } from './fcm.js';
import { sendWithRetries, type DeliveryOutcome } from './retry.js';
import type { PushDevice, PushNotification, PushSendResult, PushSender } from './sender.js';

/**
 * Delivery straight to FCM and APNs, for an operator who builds the mobile app with their own
 * Firebase project and Apple team (Zulip's ANDROID_FCM_CREDENTIALS_PATH and APNS_TOKEN_KEY_FILE
 * settings, send_android_push_notification and send_apple_push_notification). Every device is
 * sent to at once and retried on its own; a token the service calls dead is reported dropped.
 */
export class DirectPushSender implements PushSender {
  constructor(
    private readonly fcm: FcmClient | null,
    private readonly apns: ApnsClient | null,
    private readonly log: FastifyBaseLogger,
  ) {}

  async send(n: PushNotification): Promise<PushSendResult> {
    // Zulip's APNs message: the custom keys at the top level beside `aps`.
    const { custom, ...aps } = n.apns as { custom?: Record<string, unknown> };
    const apnsBody = { ...(custom ?? {}), aps };
    const data = fcmData(n.payload);
    const outcomes = await Promise.all(
      n.devices.map(async (device): Promise<[PushDevice, DeliveryOutcome | null]> => {
        if (device.kind === 'fcm') {
          if (!this.fcm) return [device, null];
          const fcm = this.fcm;
          return [device, await sendWithRetries(() => fcm.send(device.token, data, n.gcmOptions.priority))];
        }
        // Zulip's invariant: every APNs token is registered with its app's bundle ID.
        if (!this.apns || !device.appId) return [device, null];
        const apns = this.apns;
        const request = { token: device.token, topic: device.appId, body: apnsBody, priority: n.gcmOptions.priority === 'high' ? 10 : 5 } as const;
        return [device, await sendWithRetries(() => apns.send(request))];
      }),
    );
    const droppedTokens: PushSendResult['droppedTokens'] = [];
    for (const [device, outcome] of outcomes) {
      const context = { userId: n.userId, kind: device.kind, token: device.token };
      if (outcome === null) this.log.debug(context, 'push: no credentials for this kind of device; not sent');
      else if (outcome.kind === 'drop') {
        this.log.info({ ...context, reason: outcome.reason }, 'push: removing a token the service reports invalid');
        droppedTokens.push({ kind: device.kind, token: device.token });
      } else if (outcome.kind !== 'sent') this.log.warn({ ...context, reason: outcome.reason }, 'push: delivery failed');
    }
    return { droppedTokens };
  }

  close(): void {
    this.apns?.close();
  }
}

/** The direct sender for what the configuration provides, or null when it names neither service. */
export function directPushSender(config: Config, log: FastifyBaseLogger): DirectPushSender | null {
  const fcm = config.fcm.credentialsPath ? new FcmClient(config.fcm.credentialsPath, config.fcm.tokenUri, config.fcm.url) : null;
  const { keyFile, keyId, teamId } = config.apns;
  if (keyFile && (!keyId || !teamId)) throw new Error('APNS_TOKEN_KEY_FILE needs APNS_TOKEN_KEY_ID and APNS_TEAM_ID');
  const apns = keyFile ? new ApnsClient(keyFile, keyId!, teamId!, config.apns.url, config.apns.caFile) : null;
  return fcm || apns ? new DirectPushSender(fcm, apns, log) : null;
}
