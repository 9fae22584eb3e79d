import { createHmac } from 'node:crypto';
import { now } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { fetchUserById } from '../db/repos/users.js';
import { badRequest } from '../errors.js';
import { signingKey } from '../lib/signing.js';
import { isAdmin } from '../lib/roles.js';
import { realmSettings } from '../lib/realm_settings.js';
import { realmUrl } from '../lib/urls.js';
import type { Mailer } from '../lib/email.js';
import { safeEqual } from '../plugins/auth.js';
import { checkEmailAvailable, doUpdateUser, isValidEmailAddress } from './users.js';
import type { ActionServices } from '../services.js';

/**
 * A person's own email change, as Zulip's do_start_email_change_process: PATCH /settings
 * `email` mails a confirmation link to the new address, and the address changes when it is
 * opened. Like the password reset link, the link carries the account, the new address, an
 * expiry and an HMAC over them and the current address, so nothing is stored and it stops
 * working once used (the address changed) or after a day (Zulip's confirmation validity).
 */
const EMAIL_CHANGE_VALIDITY_SECONDS = 24 * 3600;

async function changeMac(services: ActionServices, user: User, email: string, expires: number): Promise<string> {
  const key = await signingKey(services.db);
  return createHmac('sha256', key).update(`email_change:${user.id}:${expires}:${user.delivery_email}:${email}`).digest('base64url');
}

/** Zulip's checks of a new address for oneself: the organization allows changes, a valid address, free. */
export async function checkEmailChange(services: ActionServices, realm: Realm, user: User, email: string): Promise<string> {
  if (realmSettings(realm).email_changes_disabled && !isAdmin(user)) throw badRequest('Email address changes are disabled in this organization.');
  const address = email.trim();
  if (!isValidEmailAddress(address)) throw badRequest('Invalid address.');
  await checkEmailAvailable(services.db.kysely, realm, address, user.id);
  return address;
}

/** Mails the confirmation link to the new address (a failure to send is the caller's error). */
export async function doStartEmailChange(services: ActionServices, mailer: Mailer, realm: Realm, user: User, email: string): Promise<void> {
  const expires = now() + EMAIL_CHANGE_VALIDITY_SECONDS;
  const token = `${user.id}-${expires}-${Buffer.from(email).toString('base64url')}-${await changeMac(services, user, email, expires)}`;
  await mailer.send({
    to: email,
    subject: `Verify your new email address for ${realm.name}`,
    text: [
      `Somebody (possibly you) asked to change the email address of ${user.full_name} in ${realm.name} (${realmUrl(services.config, realm)}) from ${user.delivery_email} to ${email}.`,
      '',
      'To confirm the new address, open this link within a day:',
      `${realmUrl(services.config, realm)}/accounts/confirm_new_email/${token}`,
      '',
      'If you did not ask for this, ignore this email: nothing changes.',
    ].join('\n'),
  });
}

/** The account and new address a confirmation link is for, or null when it is malformed, expired or used. */
export async function accessEmailChangeToken(services: ActionServices, realm: Realm, token: string): Promise<{ user: User; email: string } | null> {
  const m = /^(\d{1,12})-(\d{1,12})-([A-Za-z0-9_-]{1,400})-([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m || Number(m[2]) <= now()) return null;
  const user = await fetchUserById(services.db.kysely, realm.id, Number(m[1]));
  if (!user || user.is_bot || !user.is_active || realm.deactivated) return null;
  const email = Buffer.from(m[3]!, 'base64url').toString('utf8');
  return safeEqual(await changeMac(services, user, email, Number(m[2])), m[4]!) ? { user, email } : null;
}

/** Opens a confirmation link: the address changes (with its events) if it is still free. */
export async function doConfirmEmailChange(services: ActionServices, realm: Realm, user: User, email: string): Promise<void> {
  await checkEmailAvailable(services.db.kysely, realm, email, user.id);
  await doUpdateUser(services, realm, user, { newEmail: email }, user);
}
