import { now, transaction, type Tx } from '../db/index.js';
import { badRequest } from '../errors.js';
import type { Realm } from '../db/tables.js';
import { fetchRealmByStringId, insertRealm, updateRealmRow } from '../db/repos/realms.js';
import { deleteRealmSessions } from '../db/repos/sessions.js';
import { insertAuditLog, fetchActiveUserIds } from '../db/repos/users.js';
import type { User } from '../db/tables.js';
import { insertSubgroups, insertUserGroup, updateSystemGroupPermissions } from '../db/repos/user_groups.js';
import { USER_GROUP_PERMISSION_SETTINGS } from '../lib/group_settings.js';
import { SYSTEM_GROUPS } from '../lib/system_groups.js';
import { initialRealmSettings } from '../lib/realm_settings.js';
import type { ActionServices } from '../services.js';

/** Names Zulip reserves for its own hosts (zerver/forms.py's is_reserved_subdomain, abridged). */
const RESERVED_SUBDOMAINS = new Set(['www', 'api', 'static', 'chat', 'help', 'admin', 'mail', 'email', 'blog', 'status', 'docs', 'support', 'zulip', 'parley']);

/**
 * Zulip's check_subdomain for a new organization: 3 to 40 lowercase letters, digits and
 * dashes, not starting or ending with a dash, not reserved and not taken.
 */
export async function checkNewRealmSubdomain(db: Tx, stringId: string): Promise<void> {
  if (!/^[a-z0-9][a-z0-9-]{1,38}[a-z0-9]$/.test(stringId)) {
    throw badRequest('Subdomains can only have lowercase letters, numbers, and dashes, 3 to 40 characters, not starting or ending with a dash.');
  }
  if (RESERVED_SUBDOMAINS.has(stringId)) throw badRequest(`Subdomain '${stringId}' is reserved. Please choose a different one.`);
  if (await fetchRealmByStringId(db, stringId)) throw badRequest(`Subdomain '${stringId}' is already in use. Please choose a different one.`);
}

/** Creates an organization with its system groups and default group-valued settings. */
export async function doCreateRealm(
  services: ActionServices,
  opts: { stringId: string; name: string; description?: string },
): Promise<Realm> {
  return transaction(services.db, async (tx) => {
    const realm = await insertRealm(tx, {
      string_id: opts.stringId,
      name: opts.name,
      description: opts.description ?? '',
      date_created: now(),
    });
    const ids = new Map<string, number>();
    for (const def of SYSTEM_GROUPS) {
      const g = await insertUserGroup(tx, {
        realm_id: realm.id,
        name: def.name,
        description: def.description,
        is_system_group: 1,
        date_created: null,
        creator_id: null,
      });
      ids.set(def.name, g.id);
    }
    // System groups cannot be edited by anyone: every permission of theirs is role:nobody.
    const nobody = ids.get('role:nobody')!;
    const permissions = JSON.stringify(Object.fromEntries(USER_GROUP_PERMISSION_SETTINGS.map((s) => [s, nobody])));
    await updateSystemGroupPermissions(tx, realm.id, permissions);
    for (const def of SYSTEM_GROUPS) {
      if (def.subgroup) await insertSubgroups(tx, ids.get(def.name)!, [ids.get(def.subgroup)!]);
    }
    const settings = JSON.stringify(initialRealmSettings(ids));
    await updateRealmRow(tx, realm.id, { settings });
    return { ...realm, settings };
  });
}

/**
 * Zulip's do_deactivate_realm: the organization is marked deactivated (its users and data are
 * kept, so it can be reactivated), every connected client gets `realm deactivated`, and every
 * browser session ends; from then on each request answers REALM_DEACTIVATED.
 */
export async function doDeactivateRealm(services: ActionServices, realm: Realm, actingUser: User | null): Promise<void> {
  if (realm.deactivated) return;
  await transaction(services.db, async (tx, afterCommit) => {
    await updateRealmRow(tx, realm.id, { deactivated: 1 });
    await insertAuditLog(tx, {
      realm_id: realm.id,
      acting_user_id: actingUser?.id ?? null,
      modified_user_id: null,
      event_type: 'realm_deactivated',
      event_time: now(),
      extra_data: JSON.stringify({ deactivation_reason: actingUser ? 'owner_request' : 'administrator' }),
    });
    await deleteRealmSessions(tx, realm.id);
    const userIds = await fetchActiveUserIds(tx, realm.id);
    afterCommit(() => services.events.send(realm.id, { type: 'realm', op: 'deactivated', realm_id: realm.id }, userIds));
  });
}
