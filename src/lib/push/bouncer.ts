import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';
import type { Database } from '../../db/index.js';
import { fetchOrCreateServerSecret } from '../../db/repos/server_secrets.js';
import { ZULIP_VERSION } from '../../version.js';
import type { E2eeRegistration, PushDevice, PushDeviceKind, PushNotification, PushSendResult, PushSender } from './sender.js';

/**
 * Zulip's push notification service (the "bouncer") for the official mobile apps, through its
 * remote-server API as Zulip's server uses it (zerver/lib/remote_server.py and
 * push_notifications.py): HTTP Basic with the server's UUID and key, device registrations
 * forwarded to /remotes/push/register and /remotes/push/unregister, notifications to
 * /remotes/push/notify. The bouncer answers which tokens it dropped and whether the
 * organization may push (`realm.can_push`); both are honoured.
 */

/** Zulip's PushDeviceToken.Kind: APNS = 1, FCM = 2 (historically GCM). */
const TOKEN_KIND: Record<PushDeviceKind, number> = { apns: 1, fcm: 2 };

/** Attempts per request, and the first wait between them (doubling), for network errors and 5xx. */
const ATTEMPTS = 3;
const FIRST_RETRY_MS = 500;

export interface ServerIdentity {
  orgId: string;
  orgKey: string;
}

/**
 * The server's identity with the push service: ZULIP_ORG_ID / ZULIP_ORG_KEY when configured,
 * else a UUID and a 64-character key generated once and kept with the server's secrets.
 */
export async function serverIdentity(config: Config, db: Database): Promise<ServerIdentity> {
  const orgId = config.pushBouncer.orgId ?? (await fetchOrCreateServerSecret(db.kysely, 'zulip_org_id', () => randomUUID()));
  const orgKey = config.pushBouncer.orgKey ?? (await fetchOrCreateServerSecret(db.kysely, 'zulip_org_key', () => randomBytes(48).toString('base64url').slice(0, 64)));
  return { orgId, orgKey };
}

/**
 * A stable UUID for a realm or user of this server, as the push service knows them (Zulip's
 * Realm.uuid and UserProfile.uuid): derived from the server key, so it never changes and
 * reveals nothing about the ID.
 */
export function remoteUuid(identity: ServerIdentity, kind: 'realm' | 'user', id: number): string {
  const h = createHmac('sha256', identity.orgKey).update(`${kind}:${id}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x40;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

export class PushBouncerError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    /** The service's Zulip error code, when it refused the request. */
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

function errorCode(text: string): string | null {
  try {
    const code = (JSON.parse(text) as { code?: unknown }).code;
    return typeof code === 'string' ? code : null;
  } catch {
    return null;
  }
}

export class BouncerPushSender implements PushSender {
  /** The push service's latest word on whether the organizations of this server may push. */
  canPush = true;

  constructor(
    private readonly config: Config,
    private readonly db: Database,
    private readonly log: FastifyBaseLogger,
  ) {}

  get enabled(): boolean {
    return this.canPush;
  }

  private async request(path: string, body: Record<string, unknown>, json: boolean): Promise<Record<string, unknown>> {
    const identity = await serverIdentity(this.config, this.db);
    const url = `${this.config.pushBouncer.url}/api/v1/remotes/${path}`;
    const headers: Record<string, string> = {
      Authorization: `Basic ${Buffer.from(`${identity.orgId}:${identity.orgKey}`).toString('base64')}`,
      'User-Agent': `ZulipServer/${ZULIP_VERSION}`,
      'Content-Type': json ? 'application/json' : 'application/x-www-form-urlencoded',
    };
    const payload = json ? JSON.stringify(body) : new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, String(v)])).toString();
    let wait = FIRST_RETRY_MS;
    for (let attempt = 1; ; attempt++) {
      let res: Response | null = null;
      let failure: string;
      try {
        res = await fetch(url, { method: 'POST', headers, body: payload, signal: AbortSignal.timeout(30_000) });
        const text = await res.text();
        if (res.ok) return JSON.parse(text) as Record<string, unknown>;
        failure = `${res.status} ${text.slice(0, 200)}`;
        // 4xx is the service refusing the request: trying again changes nothing.
        if (res.status < 500) throw new PushBouncerError(`push service refused ${path}: ${failure}`, res.status, errorCode(text));
      } catch (e) {
        if (e instanceof PushBouncerError) throw e;
        failure = res ? `${res.status}` : (e as Error).message;
      }
      if (attempt >= ATTEMPTS) throw new PushBouncerError(`push service unreachable for ${path}: ${failure}`, res?.status ?? null);
      await new Promise((r) => setTimeout(r, wait));
      wait *= 2;
    }
  }

  /** Zulip's register_server: tells the service this server's UUID, key, hostname and contact. */
  async registerServer(hostname: string, contactEmail: string): Promise<Record<string, unknown>> {
    const identity = await serverIdentity(this.config, this.db);
    return this.request('server/register', { zulip_org_id: identity.orgId, zulip_org_key: identity.orgKey, hostname, contact_email: contactEmail }, false);
  }

  async registerDevice(realmId: number, userId: number, device: PushDevice): Promise<void> {
    const identity = await serverIdentity(this.config, this.db);
    const body: Record<string, unknown> = {
      server_uuid: identity.orgId,
      user_uuid: remoteUuid(identity, 'user', userId),
      realm_uuid: remoteUuid(identity, 'realm', realmId),
      user_id: String(userId),
      token: device.token,
      token_kind: TOKEN_KIND[device.kind],
    };
    if (device.kind === 'apns') body.ios_app_id = device.appId ?? '';
    await this.request('push/register', body, false);
  }

  async unregisterDevice(realmId: number, userId: number, device: Pick<PushDevice, 'kind' | 'token'>): Promise<void> {
    const identity = await serverIdentity(this.config, this.db);
    await this.request(
      'push/unregister',
      {
        server_uuid: identity.orgId,
        realm_uuid: remoteUuid(identity, 'realm', realmId),
        user_uuid: remoteUuid(identity, 'user', userId),
        user_id: userId,
        token: device.token,
        token_kind: TOKEN_KIND[device.kind],
      },
      false,
    );
  }

  /**
   * Zulip's register_push_device_to_bouncer: the device's registration, sealed to the service's
   * public key, is passed on as the app made it; only the service can read the token inside.
   */
  async registerE2eeDevice(realmId: number, reg: E2eeRegistration): Promise<void> {
    const identity = await serverIdentity(this.config, this.db);
    await this.request(
      'push/e2ee/register',
      { realm_uuid: remoteUuid(identity, 'realm', realmId), token_id: reg.tokenId, encrypted_push_registration: reg.encryptedPushRegistration, bouncer_public_key: reg.bouncerPublicKey },
      false,
    );
  }

  /** Zulip's send_push_notifications: encrypted notifications, one request per device; answers the token IDs the service dropped. */
  async sendE2ee(realmId: number, pushRequests: Record<string, unknown>[]): Promise<{ deletedTokenIds: string[] }> {
    const identity = await serverIdentity(this.config, this.db);
    const res = await this.request('push/e2ee/notify', { realm_uuid: remoteUuid(identity, 'realm', realmId), push_requests: pushRequests }, true);
    const realm = res.realm as { can_push?: unknown } | undefined;
    if (realm && typeof realm.can_push === 'boolean') this.canPush = realm.can_push;
    const ids = res.delete_token_ids;
    return { deletedTokenIds: Array.isArray(ids) ? ids.filter((t): t is string => typeof t === 'string') : [] };
  }

  async send(n: PushNotification): Promise<PushSendResult> {
    const identity = await serverIdentity(this.config, this.db);
    const res = await this.request(
      'push/notify',
      {
        user_uuid: remoteUuid(identity, 'user', n.userId),
        user_id: n.userId,
        realm_uuid: remoteUuid(identity, 'realm', n.realmId),
        apns_payload: n.apns,
        gcm_payload: n.payload,
        gcm_options: n.gcmOptions,
        android_devices: n.devices.filter((d) => d.kind === 'fcm').map((d) => d.token),
        apple_devices: n.devices.filter((d) => d.kind === 'apns').map((d) => d.token),
      },
      true,
    );
    const realm = res.realm as { can_push?: unknown } | undefined;
    if (realm && typeof realm.can_push === 'boolean') this.canPush = realm.can_push;
    const deleted = (res.deleted_devices ?? {}) as { android_devices?: unknown; apple_devices?: unknown };
    const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((t): t is string => typeof t === 'string') : []);
    const dropped = [...list(deleted.android_devices).map((token) => ({ kind: 'fcm' as const, token })), ...list(deleted.apple_devices).map((token) => ({ kind: 'apns' as const, token }))];
    if (dropped.length) this.log.info({ userId: n.userId, dropped: dropped.length }, 'push service dropped device tokens');
    return { droppedTokens: dropped };
  }
}
