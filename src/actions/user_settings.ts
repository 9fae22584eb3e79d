import { now, transaction } from '../db/index.js';
import { notifyRealmExportConsent } from './realm_export.js';
import type { Realm, User } from '../db/tables.js';
import { updateUserRow, insertAuditLog } from '../db/repos/users.js';
import { deleteUserDrafts } from '../db/repos/drafts.js';
import { fetchUserForUpdate } from '../db/repos/settings.js';
import { userIdsWhoCanAccess } from '../lib/access/users.js';
import {
  diffFromDefaults,
  LANGUAGES,
  parseStoredUserSettings,
  type StoredUserSettings,
  type UserSettingName,
} from '../lib/user_settings.js';
import type { ZulipEvent } from '../events/bus.js';
import type { ActionServices } from '../services.js';
import { syncEmailVisibility } from './users.js';

export interface UserSettingsChange {
  settings: Partial<StoredUserSettings>;
  timezone?: string;
}

/** Zulip's time zone check: any IANA name (aliases included) the runtime knows. */
export function isValidTimezone(name: string): boolean {
  if (name === '') return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * Zulip's do_change_user_setting for several settings at once, in one transaction. Each
 * changed setting gets a `user_settings` update event to the user's own clients (the legacy
 * update_display_settings / update_global_notifications events are not sent: Zulip stopped
 * at feature level 448). Side effects as in Zulip: a timezone change is announced to everyone
 * who can see the user (realm_user update), an email_address_visibility change rewrites the
 * user's API email and who sees the real one (via the users area's syncEmailVisibility), and
 * turning off drafts synchronization deletes the drafts stored on the server, and a change of
 * allow_private_data_export is a realm_export_consent event to the administrators.
 * Returns the names of the settings that changed.
 */
export async function doChangeUserSettings(
  services: ActionServices,
  realm: Realm,
  user: User,
  change: UserSettingsChange,
  actingUser: User,
): Promise<string[]> {
  return transaction(services.db, async (tx, afterCommit) => {
    const row = await fetchUserForUpdate(tx, services.db.dialect, user.id);
    const before = parseStoredUserSettings(row.settings);
    const changed: [UserSettingName, unknown][] = [];
    for (const [k, v] of Object.entries(change.settings) as [UserSettingName, unknown][]) {
      if (v !== undefined && before[k] !== v) changed.push([k, v]);
    }
    const timezoneChanged = change.timezone !== undefined && change.timezone !== row.timezone;
    if (changed.length === 0 && !timezoneChanged) return [];

    const updates: { settings?: string; timezone?: string } = {};
    if (changed.length) {
      updates.settings = JSON.stringify(diffFromDefaults({ ...before, ...Object.fromEntries(changed) }));
    }
    if (timezoneChanged) updates.timezone = change.timezone;
    await updateUserRow(tx, user.id, updates);

    const time = now();
    const audited: [string, unknown, unknown][] = changed.map(([k, v]) => [k, before[k], v]);
    if (timezoneChanged) audited.push(['timezone', row.timezone, change.timezone]);
    for (const [property, oldValue, newValue] of audited) {
      await insertAuditLog(tx, {
        realm_id: realm.id,
        acting_user_id: actingUser.id,
        modified_user_id: user.id,
        event_type: 'user_setting_changed',
        event_time: time,
        extra_data: JSON.stringify({ property, old_value: oldValue, new_value: newValue }),
      });
    }

    const own: ZulipEvent[] = changed.map(([property, value]) => {
      const event: ZulipEvent = { type: 'user_settings', op: 'update', property, value };
      if (property === 'default_language') event.language_name = LANGUAGES[value as string] ?? String(value);
      return event;
    });
    if (timezoneChanged) own.push({ type: 'user_settings', op: 'update', property: 'timezone', value: change.timezone });
    const realmUserEvents: { event: ZulipEvent; users: number[] }[] = [];
    if (timezoneChanged) {
      realmUserEvents.push({
        // Zulip's do_change_user_setting still sends the (deprecated) API email beside user_id.
        event: { type: 'realm_user', op: 'update', person: { email: row.email, user_id: user.id, timezone: change.timezone } },
        users: await userIdsWhoCanAccess(tx, realm, row),
      });
    }
    afterCommit(() => {
      for (const event of own) services.events.send(realm.id, event, [user.id]);
      for (const { event, users } of realmUserEvents) services.events.send(realm.id, event, users);
    });

    if (changed.some(([k]) => k === 'email_address_visibility')) {
      await syncEmailVisibility(services, tx, afterCommit, realm, [row]);
    }
    const consent = changed.find(([k]) => k === 'allow_private_data_export');
    if (consent) await notifyRealmExportConsent(services, tx, realm, user.id, consent[1] as boolean, afterCommit);
    if (changed.some(([k, v]) => k === 'enable_drafts_synchronization' && v === false)) {
      // As in Zulip: the drafts stay in the clients' local storage; no delete events are sent.
      await deleteUserDrafts(tx, user.id);
    }
    return audited.map(([k]) => k);
  });
}
