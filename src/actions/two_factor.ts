import { createHash, randomBytes } from 'node:crypto';
import { JsonableError } from '../errors.js';
import { now, transaction } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { fetchUserById } from '../db/repos/users.js';
import { insertAuthLoginState, takeAuthLoginState, fetchAuthLoginState } from '../db/repos/auth_login_states.js';
import {
  advanceTotpTimeStep,
  countRecoveryCodes,
  deleteTwoFactor,
  fetchTotpDevice,
  replaceRecoveryCodes,
  replaceTotpDevice,
  takeRecoveryCode,
} from '../db/repos/two_factor.js';
import { isRecoveryCodeShape, newRecoveryCodes, newTotpSecret, recoveryCodeHash, totpUri, twoFactorNeeded, verifyTotp } from '../lib/two_factor.js';
import { isAdmin } from '../lib/roles.js';
import type { ActionServices, Services } from '../services.js';

/** How long someone who typed the right password has to type the second factor. */
const PENDING_SECONDS = 10 * 60;

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
const wrongCode = (): JsonableError => new JsonableError('The two-factor code is incorrect or was already used.', 'AUTHENTICATION_FAILED', 401);

export interface TwoFactorStatus {
  enabled: boolean;
  recovery_codes_left: number;
  /** The server requires this person to keep it on (required_for_admins). */
  required: boolean;
  available: boolean;
}

export async function fetchTwoFactorStatus(services: Services, user: User): Promise<TwoFactorStatus> {
  const device = await fetchTotpDevice(services.db.kysely, user.id);
  const enabled = !!device?.confirmed;
  return {
    enabled,
    recovery_codes_left: enabled ? await countRecoveryCodes(services.db.kysely, user.id) : 0,
    required: services.config.twoFactor === 'required_for_admins' && isAdmin(user),
    available: services.config.twoFactor !== 'off',
  };
}

/**
 * Starts enrolling a TOTP app: a new, unconfirmed secret (replacing an unfinished enrolment).
 * Someone already enrolled must turn it off first, with a code, so that an API key alone (which
 * 2FA does not gate) cannot move the second factor to another phone.
 */
export async function doStartTotpEnrolment(services: Services, realm: Realm, user: User): Promise<{ secret: string; otpauth_uri: string }> {
  if (services.config.twoFactor === 'off') throw new JsonableError('Two-factor authentication is not enabled on this server', 'BAD_REQUEST');
  const device = await fetchTotpDevice(services.db.kysely, user.id);
  if (device?.confirmed) throw new JsonableError('Two-factor authentication is already on; turn it off first to use another app.', 'BAD_REQUEST');
  const secret = newTotpSecret();
  await replaceTotpDevice(services.db.kysely, { user_id: user.id, secret, confirmed: 0, last_time_step: 0, created: now() });
  return { secret, otpauth_uri: totpUri(secret, realm.name || 'Parley', user.delivery_email) };
}

/** One attempt at a second factor: the same per-person budget as password attempts (Zulip's authenticate_by_username). */
async function checkAttempt(services: Services, realm: Realm, user: User): Promise<void> {
  await services.rateLimiter.checkAuthAttempt(realm.id, `two_factor:${user.id}`);
}

/**
 * Confirms an enrolment with a code from the app; returns the new recovery codes, the only time
 * they are shown (only their hashes are kept).
 */
export async function doConfirmTotpEnrolment(services: Services, realm: Realm, user: User, code: string): Promise<string[]> {
  await checkAttempt(services, realm, user);
  const device = await fetchTotpDevice(services.db.kysely, user.id);
  if (!device || device.confirmed) throw new JsonableError('There is no two-factor enrolment to confirm; start again.', 'BAD_REQUEST');
  const step = await verifyTotp(device.secret, code, device.last_time_step);
  const codes = newRecoveryCodes();
  const confirmed =
    step !== null &&
    (await transaction(services.db, async (tx) => {
      if (!(await advanceTotpTimeStep(tx, user.id, step, true))) return false;
      await replaceRecoveryCodes(tx, user.id, codes.map(recoveryCodeHash));
      return true;
    }));
  if (!confirmed) {
    services.log.info({ realm: realm.id, user: user.id, code: 'TWO_FACTOR_FAILED' }, 'two-factor enrolment refused');
    throw wrongCode();
  }
  await services.rateLimiter.clearAuthAttempts(realm.id, `two_factor:${user.id}`);
  services.log.info({ realm: realm.id, user: user.id }, 'two-factor enrolled');
  return codes;
}

/**
 * Checks a second factor of an enrolled person: a TOTP code not used before, or a recovery
 * code, which is used up. Attempts are rate-limited per person.
 */
export async function checkTwoFactorCode(services: Services, realm: Realm, user: User, code: string): Promise<'totp' | 'recovery'> {
  await checkAttempt(services, realm, user);
  const device = await fetchTotpDevice(services.db.kysely, user.id);
  let used: 'totp' | 'recovery' | null = null;
  if (device?.confirmed) {
    if (isRecoveryCodeShape(code)) {
      if (await takeRecoveryCode(services.db.kysely, user.id, recoveryCodeHash(code))) used = 'recovery';
    } else {
      const step = await verifyTotp(device.secret, code, device.last_time_step);
      if (step !== null && (await advanceTotpTimeStep(services.db.kysely, user.id, step, false))) used = 'totp';
    }
  }
  if (!used) {
    services.log.info({ realm: realm.id, user: user.id, code: 'TWO_FACTOR_FAILED' }, 'login refused');
    throw wrongCode();
  }
  await services.rateLimiter.clearAuthAttempts(realm.id, `two_factor:${user.id}`);
  return used;
}

/** Turns two-factor authentication off (with a current code), unless the server requires it of this person. */
export async function doDisableTwoFactor(services: Services, realm: Realm, user: User, code: string): Promise<void> {
  if (services.config.twoFactor === 'required_for_admins' && isAdmin(user)) {
    throw new JsonableError('Two-factor authentication is required for administrators on this server.', 'BAD_REQUEST');
  }
  await checkTwoFactorCode(services, realm, user, code);
  await deleteTwoFactor(services.db.kysely, user.id);
  services.log.info({ realm: realm.id, user: user.id }, 'two-factor turned off');
}

/**
 * An administrator's reset (`npx parley disable-two-factor`) for someone who lost both their phone
 * and their recovery codes: the app and codes are forgotten; with required_for_admins, an
 * administrator enrols again at the next login. Returns whether there was anything to remove.
 */
export async function doResetTwoFactor(services: ActionServices, realm: Realm, user: User): Promise<boolean> {
  const had = (await fetchTotpDevice(services.db.kysely, user.id)) !== undefined;
  await deleteTwoFactor(services.db.kysely, user.id);
  if (had) services.log.info({ realm: realm.id, user: user.id }, 'two-factor reset by an administrator');
  return had;
}

/** New recovery codes (with a current code); the old ones stop working. */
export async function doRegenerateRecoveryCodes(services: Services, realm: Realm, user: User, code: string): Promise<string[]> {
  await checkTwoFactorCode(services, realm, user, code);
  const codes = newRecoveryCodes();
  await replaceRecoveryCodes(services.db.kysely, user.id, codes.map(recoveryCodeHash));
  services.log.info({ realm: realm.id, user: user.id }, 'two-factor recovery codes replaced');
  return codes;
}

/** Where a browser password login goes once it is complete (the apps' OTP flows, or a page). */
export interface LoginTarget {
  mobileFlowOtp?: string;
  desktopFlowOtp?: string;
  next: string;
}

export type PendingTwoFactor = { token: string; enrolment: { secret: string; otpauth_uri: string } | null };

/**
 * After a right password: null when no second factor is needed; otherwise a token for the
 * second step (held by the login page), and, for someone who must enrol first, the new secret.
 */
export async function doStartTwoFactorLogin(services: Services, realm: Realm, user: User, target: LoginTarget): Promise<PendingTwoFactor | null> {
  const device = await fetchTotpDevice(services.db.kysely, user.id);
  const need = twoFactorNeeded(services.config, user, !!device?.confirmed);
  if (need === 'none') return null;
  const enrolment = need === 'enrol' ? await doStartTotpEnrolment(services, realm, user) : null;
  const token = randomBytes(24).toString('base64url');
  await insertAuthLoginState(services.db.kysely, {
    id: sha256(token),
    kind: 'two_factor',
    realm_id: realm.id,
    user_id: user.id,
    data: JSON.stringify({ ...target, enrol: need === 'enrol' }),
    expires: now() + PENDING_SECONDS,
  });
  return { token, enrolment };
}

/**
 * The second step: the token from the first and a code. A wrong code leaves the token usable
 * (within the rate limit) so a typo costs nothing; a right one uses it up. Returns the user,
 * where the login goes, and the recovery codes when this step finished an enrolment.
 */
export async function checkTwoFactorLogin(services: Services, realm: Realm, token: string, code: string): Promise<{ user: User; target: LoginTarget; recoveryCodes: string[] | null }> {
  const expired = (): JsonableError => new JsonableError('This login has expired. Log in again.', 'AUTHENTICATION_FAILED', 401);
  const row = token ? await fetchAuthLoginState(services.db.kysely, sha256(token), 'two_factor') : undefined;
  if (!row || row.realm_id !== realm.id || row.expires < now() || row.user_id === null) throw expired();
  const user = await fetchUserById(services.db.kysely, realm.id, row.user_id);
  if (!user) throw expired();
  const data = JSON.parse(row.data) as LoginTarget & { enrol: boolean };
  const recoveryCodes = data.enrol ? await doConfirmTotpEnrolment(services, realm, user, code) : null;
  if (!data.enrol) await checkTwoFactorCode(services, realm, user, code);
  if (!(await takeAuthLoginState(services.db.kysely, sha256(token), 'two_factor'))) throw expired();
  return { user, target: { mobileFlowOtp: data.mobileFlowOtp, desktopFlowOtp: data.desktopFlowOtp, next: data.next }, recoveryCodes };
}
