import { readFileSync } from 'node:fs';
import { connect, constants, type ClientHttp2Session } from 'node:http2';
import { jose } from '../lazy.js';
import type { DeliveryOutcome } from './retry.js';

/** Apple accepts a provider token for an hour and refuses new ones more often than every 20 minutes. */
const TOKEN_LIFETIME_MS = 50 * 60_000;
/** Zulip's time_to_live: APNs keeps an undelivered notification for a day. */
const EXPIRATION_SECONDS = 24 * 3600;
/** Zulip's reasons for forgetting a token (send_apple_push_notification). */
const DEAD_TOKEN_REASONS = new Set(['Unregistered', 'BadDeviceToken', 'DeviceTokenNotForTopic']);

export interface ApnsRequest {
  token: string;
  /** The app's bundle ID: the apns-topic. */
  topic: string;
  /** The JSON body: `aps` and Zulip's custom keys. */
  body: Record<string, unknown>;
  /** 10 delivers at once (messages); 5 when convenient for the device (removals). */
  priority: 10 | 5;
}

/**
 * Apple Push Notification service over HTTP/2 with token-based authentication: an ES256 JWT
 * signed with the team's .p8 key (header `kid` the key ID, claim `iss` the team ID), renewed
 * every 50 minutes, on one multiplexed connection that is reopened when it fails.
 */
export class ApnsClient {
  private readonly keyPem: string;
  private jwt: { value: string; expiresAt: number } | null = null;
  private session: ClientHttp2Session | null = null;
  private readonly ca: string | undefined;

  constructor(
    keyFile: string,
    private readonly keyId: string,
    private readonly teamId: string,
    private readonly url: string,
    caFile: string | null,
  ) {
    this.keyPem = readFileSync(keyFile, 'utf8');
    this.ca = caFile ? readFileSync(caFile, 'utf8') : undefined;
  }

  private async providerToken(): Promise<string> {
    if (this.jwt && Date.now() < this.jwt.expiresAt) return this.jwt.value;
    const { importPKCS8, SignJWT } = await jose();
    const key = await importPKCS8(this.keyPem, 'ES256');
    const value = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: this.keyId }).setIssuer(this.teamId).setIssuedAt().sign(key);
    this.jwt = { value, expiresAt: Date.now() + TOKEN_LIFETIME_MS };
    return value;
  }

  private connection(): ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const session = connect(this.url, this.ca ? { ca: this.ca } : {});
    const forget = () => {
      if (this.session === session) this.session = null;
    };
    session.on('error', forget);
    session.on('goaway', forget);
    session.on('close', forget);
    // An idle connection does not keep the process alive.
    session.unref();
    this.session = session;
    return session;
  }

  async send(req: ApnsRequest): Promise<DeliveryOutcome> {
    const jwt = await this.providerToken();
    const stream = this.connection().request({
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: `/3/device/${encodeURIComponent(req.token)}`,
      authorization: `bearer ${jwt}`,
      'apns-topic': req.topic,
      'apns-push-type': 'alert',
      'apns-priority': String(req.priority),
      'apns-expiration': String(Math.floor(Date.now() / 1000) + EXPIRATION_SECONDS),
      'content-type': 'application/json',
    });
    stream.setTimeout(30_000, () => stream.close(constants.NGHTTP2_CANCEL));
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      let status = 0;
      const chunks: Buffer[] = [];
      stream.on('response', (headers) => {
        status = Number(headers[constants.HTTP2_HEADER_STATUS]);
      });
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => resolve({ status, text: Buffer.concat(chunks).toString('utf8') }));
      stream.on('error', reject);
      stream.on('close', () => {
        if (status === 0) reject(new Error('APNs closed the stream without answering'));
      });
      stream.end(JSON.stringify(req.body));
    });
    if (status === 200) return { kind: 'sent' };
    let reason = '';
    try {
      reason = String((JSON.parse(text) as { reason?: unknown }).reason ?? '');
    } catch {
      // No JSON body: the status says enough.
    }
    const what = `${status} ${reason || text.slice(0, 200)}`;
    if (DEAD_TOKEN_REASONS.has(reason) || status === 410) return { kind: 'drop', reason: what };
    if (reason === 'ExpiredProviderToken') {
      this.jwt = null;
      return { kind: 'retry', reason: what };
    }
    if (status === 429 || status >= 500) return { kind: 'retry', reason: what };
    return { kind: 'failed', reason: what };
  }

  close(): void {
    this.session?.close();
    this.session = null;
  }
}
