import { createHmac } from 'node:crypto';
import { now } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { fetchUserByDeliveryEmail, fetchUserById } from '../db/repos/users.js';
import { deleteUserSessions } from '../db/repos/sessions.js';
import { signingKey } from '../lib/signing.js';
import { safeEqual } from '../plugins/auth.js';
import { realmUrl } from '../lib/urls.js';
import { userSettings } from '../lib/user_settings.js';
import type { Mailer } from '../lib/email.js';
import { doChangePassword } from './users.js';
import type { ActionServices } from '../services.js';

/**
 * Password reset by email, as Django's PasswordResetTokenGenerator (which Zulip uses): the link
 * carries the account, an expiry and an HMAC over both and the account's current password hash,
 * so it stops working once used (the hash changes) or expired, with nothing stored.
 */

async function resetMac(services: ActionServices, user: User, expires: number): Promise<string> {
  const key = await signingKey(services.db);
  return createHmac('sha256', key).update(`password_reset:${user.id}:${expires}:${user.password_hash ?? ''}`).digest('base64url');
}

export async function passwordResetToken(services: ActionServices, user: User, expires: number): Promise<string> {
  return `${user.id}-${expires}-${await resetMac(services, user, expires)}`;
}

/** The account a reset link is for, or null when it is malformed, expired, used or for someone who cannot log in. */
export async function accessPasswordResetToken(services: ActionServices, realm: Realm, token: string): Promise<User | null> {
  const m = /^(\d{1,12})-(\d{1,12})-([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return null;
  const expires = Number(m[2]);
  if (expires <= now()) return null;
  const user = await fetchUserById(services.db.kysely, realm.id, Number(m[1]));
  if (!user || user.is_bot || !user.is_active || realm.deactivated) return null;
  return safeEqual(await resetMac(services, user, expires), m[3]!) ? user : null;
}

/**
 * Zulip's password_reset form: mails a reset link to an active account with this address. The
 * answer never says whether there is one, so nothing is sent for unknown addresses.
 */
export async function doSendPasswordReset(services: ActionServices, mailer: Mailer, realm: Realm, email: string): Promise<void> {
  const user = await fetchUserByDeliveryEmail(services.db.kysely, realm.id, email.trim());
  if (!user || user.is_bot || !user.is_active || realm.deactivated) {
    services.log.info({ realm: realm.id }, 'password reset requested for an address without an active account');
    return;
  }
  const minutes = services.config.passwordResetExpiryMinutes;
  const token = await passwordResetToken(services, user, now() + minutes * 60);
  const link = `${realmUrl(services.config, realm)}/accounts/password/reset/${token}`;
  const sent = mailer.send({
    to: user.delivery_email,
    subject: `Reset your password for ${realm.name}`,
    text: [
      `Somebody (possibly you) asked to reset the password of ${user.delivery_email} in ${realm.name} (${realmUrl(services.config, realm)}).`,
      '',
      `To choose a new password, open this link within ${minutes >= 120 ? `${Math.round(minutes / 60)} hours` : `${minutes} minutes`}:`,
      link,
      '',
      'If you did not ask for this, ignore this email: your password stays as it is.',
    ].join('\n'),
  });
  // A mail failure must not tell the asker more than success would.
  await sent.then(
    () => services.log.info({ realm: realm.id, user: user.id }, 'password reset email sent'),
    (e: unknown) => services.log.warn({ realm: realm.id, user: user.id, err: e instanceof Error ? e.message : String(e) }, 'password reset email failed'),
  );
}

/** Sets the new password (the caller checked its strength) and ends every session of the account, as Django does. */
export async function doResetPassword(services: ActionServices, realm: Realm, user: User, password: string): Promise<void> {
  await doChangePassword(services, realm, user, password);
  await deleteUserSessions(services.db.kysely, user.id);
  services.log.info({ realm: realm.id, user: user.id }, 'password reset');
}

/**
 * Zulip's email_on_new_login: tells people about each new login to their account unless they
 * turned enable_login_emails off; accounts created in the last minute are spared it (their
 * first login is the sign-up itself). Sending is not awaited by the login.
 */
export function notifyNewLogin(services: ActionServices, mailer: Mailer, realm: Realm, user: User, client: { userAgent: string; ip: string }): void {
  if (!userSettings(user).enable_login_emails || now() - user.date_joined < 60) return;
  const when = new Date().toUTCString();
  mailer
    .send({
      to: user.delivery_email,
      subject: `New login to ${realm.name}`,
      text: [
        `Your account ${user.delivery_email} in ${realm.name} (${realmUrl(services.config, realm)}) was just logged into.`,
        '',
        `Time: ${when}`,
        `Device: ${client.userAgent || 'unknown'}`,
        `Address: ${client.ip}`,
        '',
        'If this was you, there is nothing to do. If not, reset your password at once:',
        `${realmUrl(services.config, realm)}/accounts/password/reset`,
        '',
        'You can turn these emails off in your personal settings (notifications).',
      ].join('\n'),
    })
    .catch((e: unknown) => services.log.warn({ realm: realm.id, user: user.id, err: e instanceof Error ? e.message : String(e) }, 'new login email failed'));
}
