import { JsonableError } from '../errors.js';
import type { Realm, User } from '../db/tables.js';
import { fetchUserByEmail } from '../db/repos/users.js';
import { DUMMY_PASSWORD_HASH, verifyPassword } from '../lib/secrets.js';
import { jose } from '../lib/lazy.js';
import { checkLdapLogin } from './ldap.js';
import { realmAuthMethods } from '../lib/auth_methods.js';
import type { Services } from '../services.js';

const authenticationFailed = (): JsonableError =>
  new JsonableError('Your username or password is incorrect', 'AUTHENTICATION_FAILED', 401);

/**
 * Username/password login for POST /fetch_api_key and the login form. With a directory
 * configured it is asked first (Zulip's ZulipLDAPAuthBackend; a person it knows is never
 * checked against Parley's password table); otherwise, or for names it does not know, the
 * email and Parley password. An unknown user and a wrong password take the same time and give
 * the same answer; deactivation is only revealed to someone who knows the password.
 */
export async function checkFetchApiKey(services: Services, realm: Realm, username: string, password: string): Promise<User> {
  // Password guessing: Zulip's authenticate_by_username allows a few attempts per username.
  await services.rateLimiter.checkAuthAttempt(realm.id, username);
  const methods = realmAuthMethods(services.config, realm);
  const ldap = methods.LDAP ? services.config.ldap : null;
  let user: User | undefined;
  let method = 'password';
  try {
    const fromDirectory = ldap ? await checkLdapLogin(services, ldap, realm, username, password) : null;
    if (fromDirectory) {
      user = fromDirectory;
      method = 'ldap';
    } else {
      if (!methods.Email) {
        // Zulip's PASSWORD_AUTH_DISABLED when no password backend is on; with the directory on, an unknown name.
        if (!ldap) throw new JsonableError('Password authentication is disabled in this organization', 'PASSWORD_AUTH_DISABLED', 401);
        await verifyPassword(password, DUMMY_PASSWORD_HASH);
        throw authenticationFailed();
      }
      user = await fetchUserByEmail(services.db.kysely, realm.id, username);
      const ok = await verifyPassword(password, user?.password_hash ?? DUMMY_PASSWORD_HASH);
      if (!user || !ok || user.is_bot) throw authenticationFailed();
    }
  } catch (e) {
    if (e instanceof JsonableError) services.log.info({ realm: realm.id, username, code: e.code }, 'login refused');
    throw e;
  }
  await services.rateLimiter.clearAuthAttempts(realm.id, username);
  if (realm.deactivated) throw new JsonableError('This organization has been deactivated', 'REALM_DEACTIVATED', 401);
  if (!user.is_active) throw new JsonableError('Account is deactivated', 'USER_DEACTIVATED', 401);
  services.log.info({ realm: realm.id, user: user.id, method }, 'login');
  return user;
}

/**
 * Zulip's jwt_fetch_api_key: a token signed with the configured key whose `email` claim names an
 * account of this organization. A token is as good as a password, so attempts are rate-limited
 * per address like passwords.
 */
export async function checkJwtFetchApiKey(services: Services, realm: Realm, token: string): Promise<User> {
  const jwt = services.config.jwt;
  if (!jwt) throw new JsonableError('JWT authentication is not enabled for this organization', 'BAD_REQUEST', 400);
  if (!token) throw new JsonableError('No JSON web token passed in request', 'BAD_REQUEST', 400);
  let email: unknown;
  try {
    const { jwtVerify } = await jose();
    const { payload } = await jwtVerify(token, new TextEncoder().encode(jwt.key), { algorithms: jwt.algorithms });
    email = payload.email;
  } catch (e) {
    if (e instanceof (await jose()).errors.JOSEError) {
      services.log.info({ realm: realm.id, method: 'jwt', code: e.code }, 'login refused');
      throw new JsonableError('Bad JSON web token', 'BAD_REQUEST', 400);
    }
    throw e;
  }
  if (typeof email !== 'string' || !email) throw new JsonableError('No email specified in JSON web token claims', 'BAD_REQUEST', 400);
  await services.rateLimiter.checkAuthAttempt(realm.id, email);
  const user = await fetchUserByEmail(services.db.kysely, realm.id, email);
  if (!user || user.is_bot) {
    services.log.info({ realm: realm.id, method: 'jwt', username: email }, 'login refused');
    throw authenticationFailed();
  }
  if (realm.deactivated) throw new JsonableError('This organization has been deactivated', 'REALM_DEACTIVATED', 401);
  if (!user.is_active) throw new JsonableError('Account is deactivated', 'USER_DEACTIVATED', 401);
  await services.rateLimiter.clearAuthAttempts(realm.id, email);
  services.log.info({ realm: realm.id, user: user.id, method: 'jwt' }, 'login');
  return user;
}
