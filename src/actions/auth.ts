import { JsonableError } from '../errors.js';
import type { Realm, User } from '../db/tables.js';
import { fetchUserByEmail } from '../db/repos/users.js';
import { DUMMY_PASSWORD_HASH, verifyPassword } from '../lib/secrets.js';
import type { Services } from '../services.js';

const authenticationFailed = (): JsonableError =>
  new JsonableError('Your username or password is incorrect', 'AUTHENTICATION_FAILED', 401);

/**
 * Email/password login for POST /fetch_api_key. An unknown user and a wrong password
 * take the same time and give the same answer; deactivation is only revealed to
 * someone who knows the password.
 */
export async function checkFetchApiKey(services: Services, realm: Realm, username: string, password: string): Promise<User> {
  // Password guessing: Zulip's authenticate_by_username allows a few attempts per username.
  await services.rateLimiter.checkAuthAttempt(realm.id, username);
  const user = await fetchUserByEmail(services.db.kysely, realm.id, username);
  const ok = await verifyPassword(password, user?.password_hash ?? DUMMY_PASSWORD_HASH);
  if (!user || !ok || user.is_bot) throw authenticationFailed();
  await services.rateLimiter.clearAuthAttempts(realm.id, username);
  if (realm.deactivated) throw new JsonableError('This organization has been deactivated', 'REALM_DEACTIVATED', 401);
  if (!user.is_active) throw new JsonableError('Account is deactivated', 'USER_DEACTIVATED', 401);
  return user;
}
