import { JsonableError } from '../errors.js';
import type { Realm, User } from '../db/tables.js';
import { fetchRealmUsers, fetchUserByDeliveryEmail, fetchUserById } from '../db/repos/users.js';
import { fetchCustomProfileFields, fetchCustomProfileValue } from '../db/repos/custom_profile_fields.js';
import { fetchStoredFile } from '../db/repos/stored_files.js';
import { checkFullName, doChangeFullName, doDeactivateUser, doReactivateUser, doUpdateProfileData, type ProfileDataChange } from './users.js';
import { doSetAvatar, avatarFileNames } from './avatars.js';
import { ldapAuthenticate, ldapFindByEmails, ldapProfile, ldapSyncsActiveStatus, LdapUnavailableError, type LdapProfile } from '../lib/ldap.js';
import { FIELD_LONG_TEXT, FIELD_SHORT_TEXT, FIELD_URL } from '../lib/custom_profile_fields.js';
import { sniffImageType, storedPath } from '../lib/uploads.js';
import { doCreateExternallyAuthenticatedUser } from './external_auth.js';
import { AVATAR_FROM_USER } from '../lib/avatar.js';
import type { LdapConfig } from '../config.js';
import type { ActionServices } from '../services.js';

export const directoryUnavailable = (): JsonableError =>
  new JsonableError('The directory service (LDAP) cannot be reached, so logging in is not possible right now. Try again later.', 'AUTHENTICATION_FAILED', 503);

const authenticationFailed = (msg = 'Your username or password is incorrect'): JsonableError => new JsonableError(msg, 'AUTHENTICATION_FAILED', 401);

/** Zulip's var name of a custom profile field in AUTH_LDAP_USER_ATTR_MAP (custom_profile_field__<var>). */
function fieldVarName(name: string): string {
  return name.toLowerCase().split(' ').join('_');
}

/**
 * Names, avatar and custom profile fields from the directory (Zulip's sync_full_name_from_ldap,
 * sync_avatar_from_ldap, sync_custom_profile_fields_from_ldap). Only text-like fields are synced.
 * Returns whether anything changed.
 */
async function doSyncLdapData(services: ActionServices, realm: Realm, user: User, profile: LdapProfile): Promise<boolean> {
  let changed = false;
  const db = services.db.kysely;
  if (profile.fullName !== null && profile.fullName !== user.full_name) {
    const name = await checkFullName(db, realm, profile.fullName, user.id).catch(() => null);
    if (name !== null && name !== user.full_name) {
      await doChangeFullName(services, realm, user, name, null);
      changed = true;
    }
  }
  if (profile.avatar) {
    const contentType = sniffImageType(profile.avatar);
    const stored = user.avatar_source === AVATAR_FROM_USER ? await fetchStoredFile(db, storedPath.avatar(realm.id, avatarFileNames(user).full)) : undefined;
    if (contentType && !(stored && Buffer.from(stored.data).equals(profile.avatar))) {
      await doSetAvatar(services, realm, user, { data: profile.avatar, contentType });
      changed = true;
    }
  }
  const change: ProfileDataChange = { set: [], remove: [] };
  for (const field of await fetchCustomProfileFields(db, realm.id)) {
    const value = profile.profileFields[fieldVarName(field.name)];
    if (value === undefined || ![FIELD_SHORT_TEXT, FIELD_LONG_TEXT, FIELD_URL].includes(field.type)) continue;
    if ((await fetchCustomProfileValue(db, user.id, field.id))?.value === value) continue;
    change.set.push({ field, value });
  }
  if (change.set.length > 0) {
    await doUpdateProfileData(services, realm, user, change);
    changed = true;
  }
  return changed;
}

/**
 * Creates the account of someone the directory just vouched for (Zulip's get_or_build_user),
 * then copies avatar and profile fields from the directory.
 */
async function doCreateLdapUser(services: ActionServices, realm: Realm, email: string, profile: LdapProfile): Promise<User> {
  const user = await doCreateExternallyAuthenticatedUser(services, realm, email, profile.fullName, 'directory account');
  await doSyncLdapData(services, realm, user, { ...profile, fullName: null });
  services.log.info({ realm: realm.id, user: user.id }, 'ldap: created account on first login');
  return (await fetchUserById(services.db.kysely, realm.id, user.id)) ?? user;
}

/**
 * Zulip's ZulipLDAPAuthBackend.authenticate for fetch_api_key and the login form. null: the
 * directory has nobody by that name, so the caller may try Parley's own passwords; otherwise the
 * directory decides, and its password is never compared with (or stored in) Parley's.
 * Deactivation and realm checks are the caller's, as for password logins.
 */
export async function checkLdapLogin(services: ActionServices, cfg: LdapConfig, realm: Realm, typed: string, password: string): Promise<User | null> {
  let result;
  try {
    result = await ldapAuthenticate(cfg, typed, password);
  } catch (e) {
    if (!(e instanceof LdapUnavailableError)) throw e;
    services.log.warn({ realm: realm.id, err: e.message }, 'ldap: directory unavailable during login');
    throw directoryUnavailable();
  }
  if (result.kind === 'no_such_user') return null;
  if (result.kind === 'wrong_password') throw authenticationFailed();
  const profile = ldapProfile(cfg, result.person);
  if (ldapSyncsActiveStatus(cfg) && profile.disabled) throw new JsonableError('Account is deactivated', 'USER_DEACTIVATED', 401);
  if (profile.email === null) throw authenticationFailed('Your directory account has no email address. Ask your administrator to add one.');
  const existing = await fetchUserByDeliveryEmail(services.db.kysely, realm.id, profile.email);
  if (existing) {
    if (existing.is_bot) throw authenticationFailed();
    return existing;
  }
  return doCreateLdapUser(services, realm, profile.email, profile);
}

export interface LdapSyncSummary {
  updated: number;
  deactivated: number;
  reactivated: number;
  missing: number;
}

/**
 * Zulip's sync_ldap_user_data for one organization: every human account is looked up in the
 * directory by its email; names, avatars and profile fields follow the directory. When the
 * attribute map says who is disabled, disabled people are deactivated and people enabled again
 * reactivated; with PARLEY_LDAP_DEACTIVATE_NON_MATCHING, accounts the directory lacks are deactivated.
 * @throws LdapUnavailableError before changing anything when the directory cannot answer.
 */
export async function doSyncLdap(services: ActionServices, cfg: LdapConfig, realm: Realm): Promise<LdapSyncSummary> {
  const users = (await fetchRealmUsers(services.db.kysely, realm.id)).filter((u) => !u.is_bot);
  const found = await ldapFindByEmails(cfg, users.map((u) => u.delivery_email));
  const summary: LdapSyncSummary = { updated: 0, deactivated: 0, reactivated: 0, missing: 0 };
  for (const user of users) {
    const person = found.get(user.delivery_email) ?? null;
    if (!person) {
      summary.missing++;
      if (cfg.deactivateNonMatching && user.is_active) {
        await doDeactivateUser(services, realm, user, null);
        summary.deactivated++;
        services.log.info({ realm: realm.id, user: user.id }, 'ldap sync: deactivated an account the directory does not have');
      }
      continue;
    }
    const profile = ldapProfile(cfg, person);
    if (ldapSyncsActiveStatus(cfg) && profile.disabled) {
      if (user.is_active) {
        await doDeactivateUser(services, realm, user, null);
        summary.deactivated++;
        services.log.info({ realm: realm.id, user: user.id }, 'ldap sync: deactivated an account disabled in the directory');
      }
      continue;
    }
    let current = user;
    if (!user.is_active && ldapSyncsActiveStatus(cfg)) {
      await doReactivateUser(services, realm, user, null);
      current = { ...user, is_active: 1 };
      summary.reactivated++;
      services.log.info({ realm: realm.id, user: user.id }, 'ldap sync: reactivated an account present in the directory');
    }
    if (await doSyncLdapData(services, realm, current, profile)) summary.updated++;
  }
  return summary;
}
