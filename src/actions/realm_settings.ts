import { now, transaction } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { updateRealmRow } from '../db/repos/realms.js';
import { fetchRealmUsers, insertAuditLog, updateUserRow, fetchActiveUserIds } from '../db/repos/users.js';
import { fetchRealmForUpdate } from '../db/repos/settings.js';
import {
  checkGroupSettingChange,
  checkGroupSettingValue,
  groupSettingValuesEqual,
  loadGroupMembership,
  type GroupSettingUpdate,
  type GroupSettingValue,
} from '../lib/group_settings.js';
import { renderRealmDescription } from '../lib/format/settings.js';
import {
  mandatoryTopics,
  parseRealmSettings,
  REALM_GROUP_SETTING_CONFIG,
  REALM_GROUP_SETTING_NAMES,
  REALM_PROPERTY_DEFAULTS,
  realmSettings,
  type RealmGroupSettingName,
  type RealmProperties,
  type RealmPropertyName,
} from '../lib/realm_settings.js';
import {
  diffFromDefaults,
  REALM_USER_DEFAULTS_KEY,
  parseStoredUserSettings,
  realmUserSettingsDefaults,
  type StoredUserSettings,
  type UserSettingName,
} from '../lib/user_settings.js';
import type { ZulipEvent } from '../events/bus.js';
import type { ActionServices } from '../services.js';
import { realmUrl } from '../lib/urls.js';
import { syncEmailVisibility } from './users.js';

/** A validated PATCH /realm: only the values that differ from the current ones matter. */
export interface RealmSettingsUpdate {
  name?: string;
  description?: string;
  properties: Partial<RealmProperties>;
  /** New group-setting values, already validated by checkRealmGroupSettingUpdates. */
  groups: Partial<Record<RealmGroupSettingName, GroupSettingValue>>;
}

/** One applied change, in the order Zulip reports them. */
export interface RealmSettingChange {
  name: string;
  value: unknown;
}

/**
 * Validates group-setting updates for the realm as Zulip's update_realm does: a stale `old`
 * is refused, and only a `new` that differs from the current value is validated (group
 * exists and is active, members are active users, system-group restrictions). Returns the
 * normalized values that actually change.
 */
export async function checkRealmGroupSettingUpdates(
  services: ActionServices,
  realm: Realm,
  updates: Partial<Record<RealmGroupSettingName, GroupSettingUpdate>>,
): Promise<Partial<Record<RealmGroupSettingName, GroupSettingValue>>> {
  const names = REALM_GROUP_SETTING_NAMES.filter((n) => updates[n] !== undefined);
  if (names.length === 0) return {};
  const db = services.db.kysely;
  const [m, active] = await Promise.all([loadGroupMembership(db, realm.id), fetchActiveUserIds(db, realm.id)]);
  const activeIds = new Set(active);
  const current = realmSettings(realm);
  const out: Partial<Record<RealmGroupSettingName, GroupSettingValue>> = {};
  for (const name of names) {
    const update = updates[name]!;
    // Clients know anonymous settings without their deactivated members (see formatGroupSettingValue).
    const currentValue = withoutInactiveMembers(current[name], activeIds);
    if (!checkGroupSettingChange(currentValue, update)) continue;
    out[name] = checkGroupSettingValue(m, update.new, name, REALM_GROUP_SETTING_CONFIG[name], activeIds);
  }
  return out;
}

function withoutInactiveMembers(value: GroupSettingValue, activeIds: ReadonlySet<number>): GroupSettingValue {
  if (typeof value === 'number') return value;
  return { direct_members: value.direct_members.filter((u) => activeIds.has(u)), direct_subgroups: value.direct_subgroups };
}

/** Zulip's do_set_realm_property event shapes, which differ by setting for historical reasons. */
function realmPropertyEvent(name: RealmPropertyName, value: unknown, settings: RealmProperties): ZulipEvent {
  switch (name) {
    case 'allow_message_editing':
    case 'message_content_edit_limit_seconds':
    case 'jitsi_server_url':
      return { type: 'realm', op: 'update_dict', property: 'default', data: { [name]: value } };
    case 'topics_policy':
      return { type: 'realm', op: 'update_dict', property: 'default', data: { topics_policy: value, mandatory_topics: mandatoryTopics(settings) } };
    default:
      return { type: 'realm', op: 'update', property: name, value };
  }
}

/** Stored JSON: scalar values that differ from the defaults, every group setting, other keys kept. */
function storeRealmSettings(previousText: string, properties: Partial<RealmProperties>, groups: Partial<Record<RealmGroupSettingName, GroupSettingValue>>): string {
  let stored: Record<string, unknown>;
  try {
    stored = JSON.parse(previousText) as Record<string, unknown>;
  } catch {
    stored = {};
  }
  for (const [k, v] of Object.entries(properties)) {
    if (REALM_PROPERTY_DEFAULTS[k as RealmPropertyName] === v) delete stored[k];
    else stored[k] = v;
  }
  for (const [k, v] of Object.entries(groups)) stored[k] = v;
  return JSON.stringify(stored);
}

/**
 * Applies a validated realm settings update: writes the row, audits each change and, after
 * commit, sends each change's `realm` event to every active user of the realm. Returns the
 * changes actually made (a value equal to the current one changes nothing).
 */
export async function doUpdateRealmSettings(
  services: ActionServices,
  realm: Realm,
  actingUser: User,
  update: RealmSettingsUpdate,
): Promise<RealmSettingChange[]> {
  return transaction(services.db, async (tx, afterCommit) => {
    const row = await fetchRealmForUpdate(tx, services.db.dialect, realm.id);
    const before = parseRealmSettings(row.settings);
    const changes: RealmSettingChange[] = [];
    const events: ZulipEvent[] = [];
    const audit: { property: string; old: unknown; new: unknown }[] = [];
    const rowChanges: { name?: string; description?: string; settings?: string } = {};

    if (update.name !== undefined && update.name !== row.name) {
      rowChanges.name = update.name;
      changes.push({ name: 'name', value: update.name });
      events.push({ type: 'realm', op: 'update', property: 'name', value: update.name });
      audit.push({ property: 'name', old: row.name, new: update.name });
    }
    if (update.description !== undefined && update.description !== row.description) {
      rowChanges.description = update.description;
      changes.push({ name: 'description', value: update.description });
      events.push({
        type: 'realm',
        op: 'update_dict',
        property: 'default',
        data: { description: update.description, rendered_description: renderRealmDescription(update.description, realmUrl(services.config, realm)) },
      });
      audit.push({ property: 'description', old: row.description, new: update.description });
    }

    const props: Partial<RealmProperties> = {};
    for (const [k, v] of Object.entries(update.properties) as [RealmPropertyName, unknown][]) {
      if (v === undefined || before[k] === v) continue;
      (props as Record<string, unknown>)[k] = v;
    }
    const after = { ...before, ...props } as RealmProperties;
    for (const [k, v] of Object.entries(props) as [RealmPropertyName, unknown][]) {
      changes.push({ name: k, value: v });
      events.push(realmPropertyEvent(k, v, after));
      audit.push({ property: k, old: before[k], new: v });
    }

    const groups: Partial<Record<RealmGroupSettingName, GroupSettingValue>> = {};
    for (const name of REALM_GROUP_SETTING_NAMES) {
      const v = update.groups[name];
      if (v === undefined || groupSettingValuesEqual(before[name], v)) continue;
      groups[name] = v;
      changes.push({ name, value: v });
      events.push({ type: 'realm', op: 'update_dict', property: 'default', data: { [name]: v } });
      audit.push({ property: name, old: before[name], new: v });
    }

    if (Object.keys(props).length || Object.keys(groups).length) {
      rowChanges.settings = storeRealmSettings(row.settings, props, groups);
    }
    if (changes.length === 0) return changes;
    await updateRealmRow(tx, realm.id, rowChanges);
    const time = now();
    for (const a of audit) {
      await insertAuditLog(tx, {
        realm_id: realm.id,
        acting_user_id: actingUser.id,
        modified_user_id: null,
        event_type: 'realm_property_changed',
        event_time: time,
        extra_data: JSON.stringify({ property: a.property, old_value: a.old, new_value: a.new }),
      });
    }
    const recipients = await fetchActiveUserIds(tx, realm.id);
    afterCommit(() => {
      for (const event of events) services.events.send(realm.id, event, recipients);
    });
    return changes;
  });
}

/**
 * PATCH /realm/user_settings_defaults: stores the realm's defaults for new users and sends a
 * `realm_user_settings_defaults` update event per changed setting to every active user.
 */
export async function doUpdateRealmUserSettingsDefaults(
  services: ActionServices,
  realm: Realm,
  actingUser: User,
  values: Partial<StoredUserSettings>,
): Promise<RealmSettingChange[]> {
  return transaction(services.db, async (tx, afterCommit) => {
    const row = await fetchRealmForUpdate(tx, services.db.dialect, realm.id);
    const before = realmUserSettingsDefaults(row);
    const changes: RealmSettingChange[] = [];
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined || before[k as UserSettingName] === v) continue;
      changes.push({ name: k, value: v });
    }
    if (changes.length === 0) return changes;
    let stored: Record<string, unknown>;
    try {
      stored = JSON.parse(row.settings) as Record<string, unknown>;
    } catch {
      stored = {};
    }
    const merged = { ...before, ...Object.fromEntries(changes.map((c) => [c.name, c.value])) } as StoredUserSettings;
    stored[REALM_USER_DEFAULTS_KEY] = diffFromDefaults(merged);
    await updateRealmRow(tx, realm.id, { settings: JSON.stringify(stored) });
    const time = now();
    for (const c of changes) {
      await insertAuditLog(tx, {
        realm_id: realm.id,
        acting_user_id: actingUser.id,
        modified_user_id: null,
        event_type: 'realm_default_user_settings_changed',
        event_time: time,
        extra_data: JSON.stringify({ property: c.name, old_value: before[c.name as UserSettingName], new_value: c.value }),
      });
    }
    const recipients = await fetchActiveUserIds(tx, realm.id);
    afterCommit(() => {
      for (const c of changes) {
        services.events.send(realm.id, { type: 'realm_user_settings_defaults', op: 'update', property: c.name, value: c.value }, recipients);
      }
    });
    return changes;
  });
}


/**
 * The organization-wide email_address_visibility of Zulip before feature level 163, kept as a
 * PATCH /realm parameter: it becomes the realm default for new users and every human user's
 * own setting (what Zulip's migration to the per-user setting did), with the user_settings,
 * realm_user_settings_defaults and email-change events each part implies.
 */
export async function doSetRealmEmailAddressVisibility(
  services: ActionServices,
  realm: Realm,
  actingUser: User,
  value: StoredUserSettings['email_address_visibility'],
): Promise<boolean> {
  const defaultsChanged = (await doUpdateRealmUserSettingsDefaults(services, realm, actingUser, { email_address_visibility: value })).length > 0;
  return transaction(services.db, async (tx, afterCommit) => {
    const users = (await fetchRealmUsers(tx, realm.id)).filter((u) => !u.is_bot);
    const changed: User[] = [];
    for (const u of users) {
      const stored = parseStoredUserSettings(u.settings);
      if (stored.email_address_visibility === value) continue;
      await updateUserRow(tx, u.id, { settings: JSON.stringify(diffFromDefaults({ ...stored, email_address_visibility: value })) });
      changed.push(u);
    }
    if (changed.length) {
      await insertAuditLog(tx, {
        realm_id: realm.id,
        acting_user_id: actingUser.id,
        modified_user_id: null,
        event_type: 'realm_property_changed',
        event_time: now(),
        extra_data: JSON.stringify({ property: 'email_address_visibility', new_value: value, users: changed.length }),
      });
      afterCommit(() => {
        for (const u of changed) {
          if (!u.is_active) continue;
          services.events.send(realm.id, { type: 'user_settings', op: 'update', property: 'email_address_visibility', value }, [u.id]);
        }
      });
      await syncEmailVisibility(services, tx, afterCommit, realm, changed);
    }
    return defaultsChanged || changed.length > 0;
  });
}
