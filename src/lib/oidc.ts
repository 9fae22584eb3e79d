import type * as OpenIdClient from 'openid-client';
import { lazyImport } from './lazy.js';
import type { OidcProviderConfig } from '../config.js';

/** A provider that cannot be reached or answers nonsense: the login cannot go on, and nobody gets in. */
export class OidcUnavailableError extends Error {}
/** The provider's answer does not prove anything (wrong state, bad token, refused code). */
export class OidcRejectedError extends Error {}

/** The claims Parley uses, from the ID token and, for what it lacks, the userinfo endpoint. */
export interface OidcIdentity {
  subject: string;
  email: string | null;
  emailVerified: boolean;
  fullName: string | null;
}

const openIdClient = lazyImport(() => import('openid-client'));

const configurations = new Map<string, Promise<OpenIdClient.Configuration>>();

const isLoopback = (url: URL): boolean => ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);

/**
 * The provider's metadata (OpenID Connect Discovery), fetched once per process. Plain http is
 * allowed only to a loopback issuer (a provider on the same machine, or a test's).
 */
function providerConfiguration(client: typeof OpenIdClient, idp: OidcProviderConfig): Promise<OpenIdClient.Configuration> {
  const cacheKey = `${idp.key} ${idp.issuer} ${idp.clientId}`;
  let c = configurations.get(cacheKey);
  if (!c) {
    const issuer = new URL(idp.issuer);
    const insecure = issuer.protocol === 'http:' && isLoopback(issuer);
    c = client.discovery(issuer, idp.clientId, idp.clientSecret, undefined, insecure ? { execute: [client.allowInsecureRequests] } : undefined);
    configurations.set(cacheKey, c);
    // A failed discovery is tried again on the next login, not remembered.
    c.catch(() => configurations.delete(cacheKey));
  }
  return c;
}

export interface OidcAuthorizationRequest {
  url: string;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The authorization code request with PKCE (S256), a fresh state and nonce. */
export async function oidcAuthorizationRequest(idp: OidcProviderConfig, redirectUri: string): Promise<OidcAuthorizationRequest> {
  const client = await openIdClient();
  let config: OpenIdClient.Configuration;
  try {
    config = await providerConfiguration(client, idp);
  } catch (e) {
    throw new OidcUnavailableError(`discovery failed: ${(e as Error).message}`);
  }
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid email profile',
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  return { url: url.href, state, nonce, codeVerifier };
}

/**
 * Redeems the code the provider sent back to `callbackUrl`, checking the state, the PKCE
 * verifier, the ID token's signature, issuer, audience and nonce (openid-client does each).
 */
export async function oidcCompleteLogin(
  idp: OidcProviderConfig,
  callbackUrl: URL,
  checks: { state: string; nonce: string; codeVerifier: string },
): Promise<OidcIdentity> {
  const client = await openIdClient();
  let config: OpenIdClient.Configuration;
  try {
    config = await providerConfiguration(client, idp);
  } catch (e) {
    throw new OidcUnavailableError(`discovery failed: ${(e as Error).message}`);
  }
  let tokens;
  try {
    tokens = await client.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: checks.codeVerifier,
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      idTokenExpected: true,
    });
  } catch (e) {
    if (e instanceof TypeError && !(e instanceof client.ClientError)) throw new OidcUnavailableError((e as Error).message);
    throw new OidcRejectedError((e as Error).message);
  }
  const claims = tokens.claims()!;
  let info: Record<string, unknown> = claims;
  if (typeof claims.email !== 'string') {
    try {
      info = { ...(await client.fetchUserInfo(config, tokens.access_token, claims.sub)), ...claims };
    } catch (e) {
      throw new OidcRejectedError(`userinfo: ${(e as Error).message}`);
    }
  }
  const name = typeof info.name === 'string' ? info.name : [info.given_name, info.family_name].filter((x) => typeof x === 'string' && x).join(' ');
  return {
    subject: claims.sub,
    email: typeof info.email === 'string' && info.email ? info.email : null,
    emailVerified: info.email_verified === true || info.email_verified === 'true',
    fullName: name || null,
  };
}
