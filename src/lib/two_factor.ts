import { createHash, randomInt } from 'node:crypto';
import type { Config } from '../config.js';
import type { User } from '../db/tables.js';
import { lazyRequire } from './lazy.js';
import { isAdmin } from './roles.js';

const otplib = lazyRequire<typeof import('otplib')>('otplib');

/** django-otp's StaticDevice gives ten codes; Zulip's two-factor setup shows as many. */
export const RECOVERY_CODE_COUNT = 10;
/** A code of the step before or after the current one is still accepted (django-otp's tolerance of one step). */
const TOTP_TOLERANCE_SECONDS = 30;

/** A new base32 TOTP secret (160 bits, RFC 4226's recommendation). */
export function newTotpSecret(): string {
  return otplib().generateSecret();
}

/** The otpauth:// URI an authenticator app reads (as a QR code or a link). */
export function totpUri(secret: string, issuer: string, account: string): string {
  return otplib().generateURI({ issuer, label: account, secret });
}

/**
 * The time step of `code` when it is right for `secret` now and later than `afterTimeStep`
 * (a code already used does not work again); null otherwise.
 */
export async function verifyTotp(secret: string, code: string, afterTimeStep: number): Promise<number | null> {
  const token = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(token)) return null;
  const r = await otplib().verify({ secret, token, epochTolerance: TOTP_TOLERANCE_SECONDS, afterTimeStep });
  return r.valid && 'timeStep' in r ? r.timeStep : null;
}

const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** Ten new recovery codes, "xxxxx-xxxxx" from an alphabet without look-alikes (50 bits each). */
export function newRecoveryCodes(): string[] {
  const part = () => Array.from({ length: 5 }, () => RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)]).join('');
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => `${part()}-${part()}`);
}

/** What is stored of a recovery code: the SHA-256 of its letters, whatever the case and dashes typed. */
export function recoveryCodeHash(code: string): string {
  return createHash('sha256').update(code.toLowerCase().replace(/[^a-z0-9]/g, '')).digest('hex');
}

/** Whether a typed code looks like a recovery code rather than a TOTP code. */
export const isRecoveryCodeShape = (code: string): boolean => code.toLowerCase().replace(/[^a-z0-9]/g, '').length === 10;

/**
 * Zulip's TWO_FACTOR_AUTHENTICATION_ENABLED, with Parley's "required for administrators":
 * whether a browser password login of this person must pass a second factor (enrolled), or must
 * enrol one before it finishes.
 */
export function twoFactorNeeded(config: Config, user: Pick<User, 'role'>, enrolled: boolean): 'none' | 'code' | 'enrol' {
  if (config.twoFactor === 'off') return 'none';
  if (enrolled) return 'code';
  return config.twoFactor === 'required_for_admins' && isAdmin(user) ? 'enrol' : 'none';
}
