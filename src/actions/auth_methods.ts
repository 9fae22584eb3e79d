import { badRequest, ownerRequired } from '../errors.js';
import { now, transaction } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { fetchRealmById, updateRealmRow } from '../db/repos/realms.js';
import { fetchActiveUserIds, insertAuditLog } from '../db/repos/users.js';
import { AUTH_BACKEND_NAMES, availableAuthBackends, formatRealmAuthMethods, realmAuthMethods, settingsWithDisabledBackends, type AuthBackendName } from '../lib/auth_methods.js';
import { ldapFindByEmails, LdapUnavailableError } from '../lib/ldap.js';
import { isOwner } from '../lib/roles.js';
import type { ActionServices } from '../services.js';

/**
 * PATCH /realm authentication_methods (Zulip's update_realm): owners only; every name must be a
 * backend this server provides; at least one stays on, and one the acting owner can log in with
 * (a Parley password for Email, an entry in the directory for LDAP, any for OpenID Connect), so no
 * owner locks themself out.
 * Returns the backends to switch off.
 */
export async function checkAuthMethodsUpdate(services: ActionServices, realm: Realm, user: User, wanted: Record<string, unknown>): Promise<AuthBackendName[]> {
  if (!isOwner(user)) throw ownerRequired();
  const available = availableAuthBackends(services.config);
  const next: Partial<Record<AuthBackendName, boolean>> = { ...realmAuthMethods(services.config, realm) };
  for (const [name, value] of Object.entries(wanted)) {
    if (!(AUTH_BACKEND_NAMES as readonly string[]).includes(name) || !available.includes(name as AuthBackendName)) {
      throw badRequest(`Invalid authentication method: ${name}`);
    }
    if (typeof value !== 'boolean') throw badRequest(`authentication_methods["${name}"] is not a boolean`);
    next[name as AuthBackendName] = value;
  }
  const enabled = available.filter((n) => next[n]);
  if (enabled.length === 0) throw badRequest('At least one authentication method must be enabled.');
  let usable = enabled.includes('Email') && user.password_hash !== null;
  if (!usable && enabled.includes('LDAP') && services.config.ldap) {
    try {
      usable = (await ldapFindByEmails(services.config.ldap, [user.delivery_email])).get(user.delivery_email) != null;
    } catch (e) {
      if (!(e instanceof LdapUnavailableError)) throw e;
      throw badRequest('The directory service cannot be reached to confirm you could still log in; try again later.');
    }
  }
  // An identity provider's people are matched by email, which Parley cannot ask it about: an
  // owner who switches it on is taken to hold an account there.
  if (!usable && enabled.includes('OpenID Connect')) usable = true;
  if (!usable) throw badRequest('You would not be able to log in with any enabled authentication method; keep one you can use enabled.');
  return available.filter((n) => !next[n]);
}

/** Stores the switched-off backends and sends Zulip's realm update_dict event with authentication_methods. */
export async function doSetRealmAuthMethods(services: ActionServices, realm: Realm, actingUser: User, disabled: AuthBackendName[]): Promise<boolean> {
  return transaction(services.db, async (tx, afterCommit) => {
    const row = (await fetchRealmById(tx, realm.id))!;
    const before = realmAuthMethods(services.config, row);
    const settings = settingsWithDisabledBackends(row.settings, disabled);
    const after = { ...row, settings };
    if (JSON.stringify(realmAuthMethods(services.config, after)) === JSON.stringify(before)) return false;
    await updateRealmRow(tx, realm.id, { settings });
    await insertAuditLog(tx, {
      realm_id: realm.id,
      acting_user_id: actingUser.id,
      modified_user_id: null,
      event_type: 'realm_property_changed',
      event_time: now(),
      extra_data: JSON.stringify({ property: 'authentication_methods', old_value: before, new_value: realmAuthMethods(services.config, after) }),
    });
    const recipients = await fetchActiveUserIds(tx, realm.id);
    const event = { type: 'realm', op: 'update_dict', property: 'default', data: { authentication_methods: formatRealmAuthMethods(services.config, after) } } as const;
    afterCommit(() => services.events.send(realm.id, event, recipients));
    services.log.info({ realm: realm.id, user: actingUser.id, disabled }, 'authentication methods changed');
    return true;
  });
}
