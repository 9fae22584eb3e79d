import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { jose } from '../lazy.js';
import type { DeliveryOutcome } from './retry.js';

/** The fields of a Google service-account key file (the JSON the Firebase console downloads) used here. */
const ServiceAccount = z.object({
  project_id: z.string().min(1),
  private_key_id: z.string().min(1),
  private_key: z.string().min(1),
  client_email: z.string().min(1),
  token_uri: z.string().min(1).optional(),
});
type ServiceAccount = z.infer<typeof ServiceAccount>;

const SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';
/** An access token is renewed this long before Google says it expires. */
const RENEW_EARLY_MS = 5 * 60_000;

/**
 * FCM's data values must be strings. Zulip's server converts its payload with Python's str(),
 * so numbers become their digits and booleans "True"/"False"; the apps read them that way.
 */
export function fcmData(payload: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(payload)) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'boolean') out[k] = v ? 'True' : 'False';
    else if (v === null || v === undefined) out[k] = 'None';
    else if (typeof v === 'object') out[k] = JSON.stringify(v);
    else out[k] = String(v);
  }
  return out;
}

/**
 * Firebase Cloud Messaging's HTTP v1 API with service-account credentials, as firebase_admin
 * (which Zulip's server uses) talks to it: an RS256 JWT signed with the account's key is
 * exchanged at the token URI for an OAuth2 access token (cached until shortly before it
 * expires), and each device gets its own `messages:send` request.
 */
export class FcmClient {
  private readonly account: ServiceAccount;
  private readonly tokenUri: string;
  private accessToken: { value: string; expiresAt: number } | null = null;
  private pendingToken: Promise<string> | null = null;

  /** Precondition: the file exists and is a service-account key (checked at start, so a bad path fails loudly). */
  constructor(
    credentialsPath: string,
    tokenUri: string | null,
    private readonly baseUrl: string,
  ) {
    const parsed = ServiceAccount.safeParse(JSON.parse(readFileSync(credentialsPath, 'utf8')));
    if (!parsed.success) throw new Error(`ANDROID_FCM_CREDENTIALS_PATH: not a service-account key file (${parsed.error.issues[0]?.path.join('.')})`);
    this.account = parsed.data;
    this.tokenUri = tokenUri ?? parsed.data.token_uri ?? DEFAULT_TOKEN_URI;
  }

  private async token(): Promise<string> {
    if (this.accessToken && Date.now() < this.accessToken.expiresAt) return this.accessToken.value;
    this.pendingToken ??= this.fetchToken().finally(() => {
      this.pendingToken = null;
    });
    return this.pendingToken;
  }

  private async fetchToken(): Promise<string> {
    const { importPKCS8, SignJWT } = await jose();
    const key = await importPKCS8(this.account.private_key, 'RS256');
    const assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: this.account.private_key_id })
      .setIssuer(this.account.client_email)
      .setAudience(this.tokenUri)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(key);
    const res = await fetch(this.tokenUri, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`FCM token endpoint refused the service account: ${res.status} ${text.slice(0, 200)}`);
    const body = JSON.parse(text) as { access_token?: unknown; expires_in?: unknown };
    if (typeof body.access_token !== 'string') throw new Error('FCM token endpoint answered without an access_token');
    const lifetimeMs = (typeof body.expires_in === 'number' ? body.expires_in : 3600) * 1000;
    this.accessToken = { value: body.access_token, expiresAt: Date.now() + Math.max(0, lifetimeMs - RENEW_EARLY_MS) };
    return body.access_token;
  }

  /**
   * One message to one device token. UNREGISTERED (HTTP 404) is the token to drop, as
   * firebase_admin's UnregisteredError is for Zulip; 429 and 5xx are worth retrying; an
   * access token FCM no longer accepts is renewed and the request retried.
   */
  async send(token: string, data: Record<string, string>, priority: 'high' | 'normal'): Promise<DeliveryOutcome> {
    const url = `${this.baseUrl}/v1/projects/${encodeURIComponent(this.account.project_id)}/messages:send`;
    const body = JSON.stringify({ message: { token, data, android: { priority: priority === 'high' ? 'HIGH' : 'NORMAL' } } });
    const res = await fetch(url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${await this.token()}`, 'Content-Type': 'application/json' },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (res.ok) return { kind: 'sent' };
    let errorCode = '';
    try {
      const details = (JSON.parse(text) as { error?: { status?: string; details?: { errorCode?: string }[] } }).error;
      errorCode = details?.details?.find((d) => typeof d.errorCode === 'string')?.errorCode ?? details?.status ?? '';
    } catch {
      // Not FCM's JSON error: the status says enough.
    }
    const reason = `${res.status} ${errorCode || text.slice(0, 200)}`;
    if (errorCode === 'UNREGISTERED' || res.status === 404) return { kind: 'drop', reason };
    if (res.status === 401) {
      this.accessToken = null;
      return { kind: 'retry', reason };
    }
    if (res.status === 429 || res.status >= 500) return { kind: 'retry', reason, retryAfter: res.headers.get('retry-after') };
    return { kind: 'failed', reason };
  }
}
