import type { FastifyBaseLogger } from 'fastify';

/** Zulip's two token kinds: APNs (iOS) and FCM (Android, Zulip's historical "gcm"). */
export type PushDeviceKind = 'apns' | 'fcm';

export interface PushDevice {
  kind: PushDeviceKind;
  token: string;
  /** The iOS app's bundle ID for APNs tokens; null for FCM. */
  appId: string | null;
}

/** One notification for one user, to be delivered to each of that user's devices. */
export interface PushNotification {
  userId: number;
  devices: PushDevice[];
  /** Zulip's push payload fields (see lib/push/payload.ts). */
  payload: Record<string, unknown>;
}

/**
 * Where notifications go. A deployment plugs a real gateway (APNs/FCM, or Zulip's push
 * bouncer) in by setting `services.push`; delivery failures are the sender's to handle
 * and must not throw into message sending.
 */
export interface PushSender {
  send(notification: PushNotification): Promise<void>;
}

/** The default: notifications are written to the log, so development shows what would be sent. */
export function logPushSender(log: FastifyBaseLogger): PushSender {
  return {
    async send(n) {
      log.info({ push: { user_id: n.userId, devices: n.devices.length, payload: n.payload } }, 'push notification (not delivered: no push sender configured)');
    },
  };
}
