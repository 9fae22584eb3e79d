import { createHash } from 'node:crypto';
import { JsonableError } from '../errors.js';
import { now } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { fetchUserByDeliveryEmail } from '../db/repos/users.js';
import { insertAuthLoginState, takeAuthLoginState } from '../db/repos/auth_login_states.js';
import { oidcAuthorizationRequest, oidcCompleteLogin, OidcRejectedError, OidcUnavailableError, type OidcIdentity } from '../lib/oidc.js';
import { realmAuthMethods } from '../lib/auth_methods.js';
import { doCreateExternallyAuthenticatedUser } from './external_auth.js';
import type { OidcProviderConfig } from '../config.js';
import type { LoginTarget } from './two_factor.js';
import type { ActionServices } from '../services.js';

/** Zulip's social auth keeps its partial login this long (SOCIAL_AUTH session data). */
const STATE_SECONDS = 10 * 60;

const refused = (msg: string): JsonableError => new JsonableError(msg, 'AUTHENTICATION_FAILED', 401);
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

interface StoredOidcState extends LoginTarget {
  provider: string;
  nonce: string;
  codeVerifier: string;
}

/** The provider called `key`, while the organization has OpenID Connect switched on. */
export function accessOidcProvider(services: ActionServices, realm: Realm, key: string): OidcProviderConfig {
  const idp = services.config.oidc.find((p) => p.key === key);
  if (!idp) throw new JsonableError('Unknown identity provider', 'NOT_FOUND', 404);
  if (!realmAuthMethods(services.config, realm)['OpenID Connect']) {
    throw new JsonableError('Single sign-on with OpenID Connect is disabled in this organization', 'AUTHENTICATION_FAILED', 403);
  }
  return idp;
}

/**
 * Starts an authorization code flow: the state, nonce and PKCE verifier are kept (keyed by the
 * state's hash) for the callback; the browser is sent to the returned URL and must come back
 * with the state it was given, which it also holds in a cookie.
 */
export async function doStartOidcLogin(services: ActionServices, realm: Realm, idp: OidcProviderConfig, redirectUri: string, target: LoginTarget): Promise<{ url: string; state: string }> {
  let req;
  try {
    req = await oidcAuthorizationRequest(idp, redirectUri);
  } catch (e) {
    if (!(e instanceof OidcUnavailableError)) throw e;
    services.log.warn({ realm: realm.id, provider: idp.key, err: e.message }, 'oidc: provider unavailable');
    throw new JsonableError(`${idp.displayName} cannot be reached, so logging in with it is not possible right now. Try again later.`, 'AUTHENTICATION_FAILED', 503);
  }
  const data: StoredOidcState = { provider: idp.key, nonce: req.nonce, codeVerifier: req.codeVerifier, ...target };
  await insertAuthLoginState(services.db.kysely, { id: sha256(req.state), kind: 'oidc', realm_id: realm.id, user_id: null, data: JSON.stringify(data), expires: now() + STATE_SECONDS });
  return { url: req.url, state: req.state };
}

/**
 * The provider's callback: the state must be one this server issued for this organization,
 * unexpired and unused (it is used up here either way), and the one the browser's cookie holds.
 * Then the code is redeemed and the person matched by verified email, or their account created
 * under the organization's sign-up rules (as a directory's first login). Returns the user (not
 * yet checked for deactivation, as for every login method) and where the login goes.
 */
export async function checkOidcCallback(
  services: ActionServices,
  realm: Realm,
  callbackUrl: URL,
  cookieState: string | undefined,
): Promise<{ user: User; target: LoginTarget; provider: string }> {
  const state = callbackUrl.searchParams.get('state') ?? '';
  const row = state ? await takeAuthLoginState(services.db.kysely, sha256(state), 'oidc') : undefined;
  if (!row || row.realm_id !== realm.id || row.expires < now() || !cookieState || cookieState !== state) {
    services.log.info({ realm: realm.id, method: 'oidc', code: 'BAD_STATE' }, 'login refused');
    throw refused('This login attempt is invalid or has expired (the state does not match). Start logging in again.');
  }
  const stored = JSON.parse(row.data) as StoredOidcState;
  const idp = accessOidcProvider(services, realm, stored.provider);
  const target: LoginTarget = { mobileFlowOtp: stored.mobileFlowOtp, desktopFlowOtp: stored.desktopFlowOtp, next: stored.next };
  const providerError = callbackUrl.searchParams.get('error');
  if (providerError) {
    services.log.info({ realm: realm.id, method: 'oidc', provider: idp.key, code: providerError }, 'login refused');
    throw refused(`${idp.displayName} did not log you in (${providerError}).`);
  }
  let identity: OidcIdentity;
  try {
    identity = await oidcCompleteLogin(idp, callbackUrl, { state, nonce: stored.nonce, codeVerifier: stored.codeVerifier });
  } catch (e) {
    if (e instanceof OidcUnavailableError) {
      services.log.warn({ realm: realm.id, provider: idp.key, err: e.message }, 'oidc: provider unavailable');
      throw new JsonableError(`${idp.displayName} cannot be reached, so logging in with it is not possible right now. Try again later.`, 'AUTHENTICATION_FAILED', 503);
    }
    if (e instanceof OidcRejectedError) {
      services.log.info({ realm: realm.id, method: 'oidc', provider: idp.key, err: e.message }, 'login refused');
      throw refused(`${idp.displayName} did not confirm who you are. Start logging in again.`);
    }
    throw e;
  }
  if (!identity.email) throw refused(`Your ${idp.displayName} account has no email address. Ask your administrator to add one.`);
  if (!identity.emailVerified) {
    services.log.info({ realm: realm.id, method: 'oidc', provider: idp.key, username: identity.email, code: 'EMAIL_NOT_VERIFIED' }, 'login refused');
    throw refused(`${idp.displayName} has not verified your email address ${identity.email}. Verify it with ${idp.displayName}, then log in again.`);
  }
  let user = await fetchUserByDeliveryEmail(services.db.kysely, realm.id, identity.email);
  if (user?.is_bot) throw refused(`No account of this organization uses ${identity.email}.`);
  if (!user) {
    user = await doCreateExternallyAuthenticatedUser(services, realm, identity.email, identity.fullName, `${idp.displayName} account`);
    services.log.info({ realm: realm.id, user: user.id, provider: idp.key }, 'oidc: created account on first login');
  }
  return { user, target, provider: idp.key };
}
