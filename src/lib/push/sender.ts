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
  realmId: number;
  devices: PushDevice[];
  /** Zulip's FCM data payload (see lib/push/payload.ts). */
  payload: Record<string, unknown>;
  /** Zulip's APNs payload for the same notification (alert, sound, badge, custom.zulip). */
  apns: Record<string, unknown>;
  /** Zulip's gcm_options: `priority` high for messages, normal for removals. */
  gcmOptions: { priority: 'high' | 'normal' };
}

/** What the app sent to POST /mobile_push/register about its token, sealed to the push service's key. */
export interface E2eeRegistration {
  tokenId: string;
  encryptedPushRegistration: string;
  bouncerPublicKey: string;
}

export interface PushSendResult {
  /** Tokens the push service reports as no longer valid: the caller forgets them. */
  droppedTokens: { kind: PushDeviceKind; token: string }[];
}

/**
 * Where notifications go. A deployment plugs a real gateway (APNs/FCM directly, lib/push/direct.ts,
 * or Zulip's push bouncer) in by setting `services.push`. `send` may throw when the service cannot be reached;
 * the notification worker then leaves the notification to be tried again.
 */
export interface PushSender {
  send(notification: PushNotification): Promise<PushSendResult | void>;
  /** Whether the service says this server may push (Zulip's realm push_notifications_enabled). */
  readonly enabled?: boolean;
  /** Services that keep their own device registry (Zulip's bouncer) learn of devices here. */
  registerDevice?(realmId: number, userId: number, device: PushDevice): Promise<void>;
  unregisterDevice?(realmId: number, userId: number, device: Pick<PushDevice, 'kind' | 'token'>): Promise<void>;
  /** Services that deliver end-to-end encrypted notifications (Zulip's bouncer) take the sealed registration. */
  registerE2eeDevice?(realmId: number, registration: E2eeRegistration): Promise<void>;
  /** Delivers encrypted notifications (lib/push/e2ee.ts push requests); answers the token IDs the service dropped. */
  sendE2ee?(realmId: number, pushRequests: Record<string, unknown>[]): Promise<{ deletedTokenIds: string[] }>;
  /** Releases connections the sender keeps open (APNs' HTTP/2 connection). */
  close?(): void;
}

/** The default: notifications are written to the log, so development shows what would be sent. */
export function logPushSender(log: FastifyBaseLogger): PushSender {
  return {
    async send(n) {
      log.info({ push: { user_id: n.userId, devices: n.devices.length, payload: n.payload } }, 'push notification (not delivered: no push sender configured)');
    },
  };
}
