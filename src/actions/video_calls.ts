import { randomBytes, createHash } from 'node:crypto';
import { JsonableError, badRequest } from '../errors.js';
import { now, transaction } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { deleteExternalToken, fetchExternalToken, upsertExternalToken } from '../db/repos/external_tokens.js';
import { completePath, type OAuthCallProvider, type StoredToken } from '../lib/video_calls/provider.js';
import { signObject, unsignObject } from '../lib/signing.js';
import { realmSettings } from '../lib/realm_settings.js';
import type { ActionServices } from '../services.js';

const OUTGOING_TIMEOUT_MS = 5000;
const STATE_LIFETIME_SECONDS = 3600;

const invalidToken = (p: OAuthCallProvider): JsonableError =>
  new JsonableError(`Invalid ${p.name} access token`, 'INVALID_VIDEO_CALL_PROVIDER_TOKEN');

export function checkProviderConfigured(p: OAuthCallProvider): void {
  if (!p.clientId || !p.clientSecret) throw badRequest(`${p.name} credentials have not been configured`);
}

/**
 * Stores or clears a user's provider token and tells the user's clients, under Zulip's event
 * name (`has_webex_token`) and our spec's (`has_vidcall_token`).
 */
export async function doSetVideoCallToken(services: ActionServices, realm: Realm, user: User, p: OAuthCallProvider, token: StoredToken | null): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    if (token) await upsertExternalToken(tx, { user_id: user.id, provider: p.tokenKey, token: JSON.stringify(token), date_created: now() });
    else await deleteExternalToken(tx, user.id, p.tokenKey);
    afterCommit(() => {
      services.events.send(realm.id, { type: `has_${p.tokenKey}_token`, value: token !== null }, [user.id]);
      services.events.send(realm.id, { type: 'has_vidcall_token', value: token !== null }, [user.id]);
    });
  });
}

interface OAuthState {
  realm: string;
  user_id: number;
  expires: number;
}

/** The provider's authorization URL for this user, with a signed state binding the answer to them. */
export async function startOAuth(services: ActionServices, realm: Realm, user: User, p: OAuthCallProvider): Promise<string> {
  checkProviderConfigured(p);
  const state = await signObject(services.db, 'vidcall-oauth', { realm: realm.string_id, user_id: user.id, expires: now() + STATE_LIFETIME_SECONDS } satisfies OAuthState);
  const url = new URL(p.authorizeUrl);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', p.clientId!);
  url.searchParams.set('redirect_uri', services.config.externalUrl + completePath(p));
  url.searchParams.set('scope', p.scope);
  url.searchParams.set('state', state);
  return url.toString();
}

export async function checkOAuthState(services: ActionServices, p: OAuthCallProvider, state: string): Promise<OAuthState> {
  const value = await unsignObject<OAuthState>(services.db, 'vidcall-oauth', state);
  if (!value || typeof value.user_id !== 'number' || value.expires < now()) {
    throw badRequest(`Invalid ${p.name} session identifier`);
  }
  return value;
}

async function postForm(url: string, form: Record<string, string>): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
    body: new URLSearchParams(form).toString(),
    signal: AbortSignal.timeout(OUTGOING_TIMEOUT_MS),
  });
}

function parseTokenResponse(body: unknown): StoredToken | null {
  if (!body || typeof body !== 'object') return null;
  const b = body as Record<string, unknown>;
  if (typeof b.access_token !== 'string') return null;
  const token: StoredToken = { access_token: b.access_token };
  if (typeof b.refresh_token === 'string') token.refresh_token = b.refresh_token;
  if (typeof b.expires_in === 'number') token.expires_at = now() + b.expires_in;
  return token;
}

/** Exchanges the authorization code for a token and stores it (the OAuth callback). */
export async function completeOAuth(services: ActionServices, realm: Realm, user: User, p: OAuthCallProvider, code: string): Promise<void> {
  checkProviderConfigured(p);
  let token: StoredToken | null = null;
  try {
    const res = await postForm(p.tokenUrl, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: services.config.externalUrl + completePath(p),
      client_id: p.clientId!,
      client_secret: p.clientSecret!,
    });
    if (res.ok) token = parseTokenResponse(await res.json());
  } catch {
    token = null;
  }
  if (!token) throw badRequest(`Invalid ${p.name} credentials`);
  await doSetVideoCallToken(services, realm, user, p, token);
}

async function refresh(p: OAuthCallProvider, token: StoredToken): Promise<StoredToken | null> {
  if (!token.refresh_token) return null;
  try {
    const res = await postForm(p.tokenUrl, {
      grant_type: 'refresh_token',
      refresh_token: token.refresh_token,
      client_id: p.clientId!,
      client_secret: p.clientSecret!,
    });
    if (!res.ok) return null;
    const fresh = parseTokenResponse(await res.json());
    if (fresh && !fresh.refresh_token) fresh.refresh_token = token.refresh_token;
    return fresh;
  } catch {
    return null;
  }
}

/**
 * Creates a meeting with the user's token, refreshing it when expired. A token the provider
 * rejects is forgotten (clients then see has_vidcall_token false and restart the OAuth flow).
 */
export async function createOAuthMeeting(services: ActionServices, realm: Realm, user: User, p: OAuthCallProvider): Promise<string> {
  checkProviderConfigured(p);
  const stored = await fetchExternalToken(services.db.kysely, user.id, p.tokenKey);
  if (!stored) throw invalidToken(p);
  let token = JSON.parse(stored) as StoredToken;
  if (token.expires_at !== undefined && token.expires_at <= now() + 30) {
    const fresh = await refresh(p, token);
    if (!fresh) {
      await doSetVideoCallToken(services, realm, user, p, null);
      throw invalidToken(p);
    }
    token = fresh;
    await doSetVideoCallToken(services, realm, user, p, token);
  }
  const start = new Date();
  const end = new Date(start.getTime() + 40 * 60 * 1000);
  let res: Response;
  try {
    res = await fetch(p.meetingsUrl, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token.access_token}`, 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({
        title: `${p.name} meeting`,
        password: Array.from(randomBytes(5), (b) => 'abcdefghijklmnop'[b % 16]).join(''),
        start: start.toISOString().replace(/\.\d{3}Z$/, 'Z'),
        end: end.toISOString().replace(/\.\d{3}Z$/, 'Z'),
        enabledAutoRecordMeeting: false,
        allowAnyUserToBeCoHost: false,
      }),
      signal: AbortSignal.timeout(OUTGOING_TIMEOUT_MS),
    });
  } catch {
    throw badRequest(`Failed to create ${p.name} call`);
  }
  if (res.status === 401) {
    await doSetVideoCallToken(services, realm, user, p, null);
    throw invalidToken(p);
  }
  const body = res.ok ? ((await res.json().catch(() => null)) as { webLink?: unknown } | null) : null;
  if (!body || typeof body.webLink !== 'string') throw badRequest(`Failed to create ${p.name} call`);
  return body.webLink;
}

interface BigBlueButtonLink {
  meeting_id: string;
  name: string;
  lock_settings_disable_cam: boolean;
  moderator: number;
}

/** A join link whose meeting details are signed, so a user cannot edit it to enter another meeting. */
export async function createBigBlueButtonLink(services: ActionServices, user: User, meetingName: string, voiceOnly: boolean): Promise<string> {
  const id = `zulip-${100000000000 + (randomBytes(6).readUIntBE(0, 6) % 900000000000)}`;
  const signed = await signObject(services.db, 'bigbluebutton', {
    meeting_id: id,
    name: meetingName,
    lock_settings_disable_cam: voiceOnly,
    moderator: user.id,
  } satisfies BigBlueButtonLink);
  return `/calls/bigbluebutton/join?bigbluebutton=${encodeURIComponent(signed)}`;
}

const bbbChecksum = (call: string, query: string, secret: string): string =>
  createHash('sha256').update(call + query + secret).digest('hex');

const bbbQuery = (params: Record<string, string>): string =>
  Object.entries(params).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');

function xmlText(xml: string, tag: string): string | null {
  const m = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml);
  return m ? m[1]! : null;
}

/** Creates (or re-creates) the meeting on the BigBlueButton server and returns the user's join URL. */
export async function joinBigBlueButton(services: ActionServices, user: User, signed: string): Promise<string> {
  const { url, secret } = services.config.bigBlueButton;
  if (!url || !secret) throw badRequest('BigBlueButton is not configured.');
  const data = await unsignObject<BigBlueButtonLink>(services.db, 'bigbluebutton', signed);
  if (!data) throw badRequest('Invalid signature.');
  const base = url.endsWith('/') ? url : `${url}/`;
  const createParams = bbbQuery({ meetingID: data.meeting_id, name: data.name, lockSettingsDisableCam: String(data.lock_settings_disable_cam) });
  let xml: string;
  try {
    const res = await fetch(`${base}api/create?${createParams}&checksum=${bbbChecksum('create', createParams, secret)}`, {
      signal: AbortSignal.timeout(OUTGOING_TIMEOUT_MS),
    });
    if (!res.ok) throw new Error(String(res.status));
    xml = await res.text();
  } catch {
    throw badRequest('Error connecting to the BigBlueButton server.');
  }
  if (xmlText(xml, 'messageKey') === 'checksumError') throw badRequest('Error authenticating to the BigBlueButton server.');
  if (xmlText(xml, 'returncode') !== 'SUCCESS') throw badRequest('BigBlueButton server returned an unexpected error.');
  const joinParams = bbbQuery({
    meetingID: data.meeting_id,
    role: data.moderator === user.id ? 'MODERATOR' : 'VIEWER',
    fullName: user.full_name,
    createTime: xmlText(xml, 'createTime') ?? '',
  });
  return `${base}api/join?${joinParams}&checksum=${bbbChecksum('join', joinParams, secret)}`;
}

/** A Jitsi meeting link under the realm's Jitsi server (or the server default). */
export function createJitsiLink(services: ActionServices, realm: Realm): string {
  const configured = realmSettings(realm).jitsi_server_url;
  const base = (configured || services.config.jitsiServerUrl).replace(/\/+$/, '');
  return `${base}/${randomBytes(8).toString('hex')}`;
}

/**
 * A public Nextcloud Talk conversation named `roomName`, created with the configured account
 * through Talk's OCS API, and its call URL (`<server>/index.php/call/<token>`, as Zulip links it).
 */
export async function createNextcloudTalkLink(services: ActionServices, roomName: string): Promise<string> {
  const { url, username, password } = services.config.nextcloudTalk;
  if (!url || !username || !password) throw badRequest('Nextcloud Talk is not configured.');
  const failed = (): JsonableError => badRequest('Failed to create Nextcloud Talk conversation.');
  let token: unknown;
  try {
    const res = await fetch(`${url}/ocs/v2.php/apps/spreed/api/v4/room`, {
      method: 'POST',
      headers: {
        Authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
        'OCS-APIRequest': 'true',
        Accept: 'application/json',
        'Content-Type': 'application/json',
      },
      // Room type 3 is a public conversation: anyone with the link can join the call.
      body: JSON.stringify({ roomType: 3, roomName }),
      signal: AbortSignal.timeout(OUTGOING_TIMEOUT_MS),
    });
    if (!res.ok) throw failed();
    token = ((await res.json()) as { ocs?: { data?: { token?: unknown } } }).ocs?.data?.token;
  } catch (e) {
    if (e instanceof JsonableError) throw e;
    services.log.warn({ err: e }, 'Nextcloud Talk request failed');
    throw failed();
  }
  if (typeof token !== 'string' || !/^[A-Za-z0-9]+$/.test(token)) throw failed();
  return `${url}/index.php/call/${token}`;
}

/**
 * Zulip's make_constructor_groups_video_call: the user's default room on the configured
 * Constructor Groups server (its XAPI `POST /room/default` finds the room this user created
 * under that name, or creates it), authenticated with a bearer token made of the access key
 * and the SHA-256 of "access key|secret key".
 */
export async function createConstructorGroupsLink(services: ActionServices, user: User): Promise<string> {
  const { url, accessKey, secretKey } = services.config.constructorGroups;
  if (!url || !accessKey || !secretKey) throw badRequest('Constructor Groups credentials have not been configured');
  const failed = (): JsonableError => badRequest('Failed to create Constructor Groups call');
  const token = `${accessKey}|${createHash('sha256').update(`${accessKey}|${secretKey}`).digest('hex')}`;
  const name = `${user.full_name}'s Zulip room`;
  let roomUrl: unknown;
  try {
    const res = await fetch(`${url}/room/default`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ creator_email: user.delivery_email, name, fallback_name: `${name} (${user.realm_id}-${user.id})` }),
      signal: AbortSignal.timeout(OUTGOING_TIMEOUT_MS),
    });
    if (!res.ok) throw failed();
    roomUrl = ((await res.json()) as { url?: unknown } | null)?.url;
  } catch (e) {
    if (e instanceof JsonableError) throw e;
    services.log.warn({ err: e }, 'Constructor Groups request failed');
    throw failed();
  }
  if (typeof roomUrl !== 'string' || !roomUrl) throw failed();
  return roomUrl;
}
