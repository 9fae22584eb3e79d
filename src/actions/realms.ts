import { now, transaction } from '../db/index.js';
import type { Realm } from '../db/tables.js';
import { insertRealm, updateRealmRow } from '../db/repos/realms.js';
import { insertSubgroups, insertUserGroup, updateSystemGroupPermissions } from '../db/repos/user_groups.js';
import { USER_GROUP_PERMISSION_SETTINGS } from '../lib/group_settings.js';
import { SYSTEM_GROUPS } from '../lib/system_groups.js';
import { initialRealmSettings } from '../lib/realm_settings.js';
import type { ActionServices } from '../services.js';

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
