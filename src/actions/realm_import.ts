import type { Insertable } from 'kysely';
import { now, transaction } from '../db/index.js';
import type { Realm, ScheduledMessageTable } from '../db/tables.js';
import { REMIND, SEND_LATER } from '../db/repos/scheduled_messages.js';
import { fetchMessagesByIds } from '../db/repos/messages.js';
import { insertRealm, updateRealmRow } from '../db/repos/realms.js';
import { insertImportedRow, insertImportedRows, updateImportedGroupPermissions, updateImportedStream, updateImportedUser } from '../db/repos/realm_import.js';
import { insertStoredFile } from '../db/repos/stored_files.js';
import { insertSubgroups, insertUserGroup, updateSystemGroupPermissions } from '../db/repos/user_groups.js';
import { fetchUserById } from '../db/repos/users.js';
import type { GroupSettingValue } from '../lib/group_settings.js';
import { USER_GROUP_PERMISSION_SETTINGS } from '../lib/group_settings.js';
import { realmPropertiesSchema, REALM_GROUP_SETTING_NAMES, initialRealmSettings } from '../lib/realm_settings.js';
import { diffFromDefaults, userSettingsSchema, type StoredUserSettings } from '../lib/user_settings.js';
import { SYSTEM_GROUPS, SYSTEM_GROUP_FOR_ROLE } from '../lib/system_groups.js';
import { BOT_GENERIC, ROLE_GUEST, ROLE_MEMBER } from '../lib/roles.js';
import { SYSTEM_BOTS, systemBotEmail, type SystemBotName } from '../lib/system_bots.js';
import { generateApiKey } from '../lib/secrets.js';
import { uploadedAvatarHash } from '../lib/avatar.js';
import { storedPath, uploadContentType } from '../lib/uploads.js';
import { dmKeyFor } from '../lib/format/messages.js';
import { renderMarkdown, type MarkdownContext } from '../lib/markdown/index.js';
import { realmUrl } from '../lib/urls.js';
import { realmEmojiSourceUrl } from '../lib/format/realm_emoji.js';
import type { Rec, ZulipExport } from '../lib/zulip_export/archive.js';
import { fromZulipFlagsMask } from '../lib/zulip_export/flags.js';
import { RECIPIENT_DIRECT_MESSAGE_GROUP, RECIPIENT_PERSONAL, RECIPIENT_STREAM } from '../lib/zulip_export/export.js';
import { checkNewRealmSubdomain } from './realms.js';
import { passwordResetToken } from './password_reset.js';
import { reminderText } from './scheduled_messages.js';
import type { ActionServices } from '../services.js';

export interface ImportReport {
  realm_id: number;
  string_id: string;
  counts: Record<string, number>;
  /** What was not imported, and why. */
  skipped: string[];
  /** One link per active person, to choose a password (the export carries none). */
  password_reset_links: { email: string; url: string }[];
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : null);
const int = (v: unknown): number | null => {
  const n = num(v);
  return n === null ? null : Math.floor(n);
};
const flag = (v: unknown): number => (v === true || v === 1 || v === 't' ? 1 : 0);
const nullableFlag = (v: unknown): number | null => (v === null || v === undefined ? null : flag(v));
const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback);
const rows = (data: Record<string, Rec[]>, table: string): Rec[] => (Array.isArray(data[table]) ? data[table] : []);

/** Zulip's MAX_TOPIC_NAME_LENGTH: longer topics (Slack thread names can be) are cut, as Zulip's importer does. */
const normalizeTopic = (topic: string): string => [...topic.trim()].slice(0, 60).join('');

/** Zulip's password reset link lifetime for imported users (a day, as `send_password_reset_email`). */
const RESET_LINK_SECONDS = 24 * 60 * 60;

/**
 * Zulip's do_import_realm: reads an export (Zulip's format, or a Slack export converted to it)
 * into a new organization at `subdomain`, in one transaction, so a failure leaves nothing
 * behind. Every ID is remapped; passwords and API keys are new (the export has none); cross-realm
 * bots, and rows naming something the export lacks, are skipped and reported.
 * Preconditions: the subdomain is valid and free (checkNewRealmSubdomain).
 */
export async function doImportRealm(services: ActionServices, data: ZulipExport, subdomain: string): Promise<ImportReport> {
  const skipped: string[] = [];
  const counts: Record<string, number> = {};
  const count = (k: string, n = 1) => (counts[k] = (counts[k] ?? 0) + n);
  const zRealm = rows(data.realm, 'zerver_realm')[0];
  if (!zRealm) throw new Error('realm.json has no zerver_realm row');
  const realmIdOld = int(zRealm.id);

  const result = await transaction(services.db, async (tx) => {
    await checkNewRealmSubdomain(tx, subdomain);
    const realm = await insertRealm(tx, {
      string_id: subdomain,
      name: str(zRealm.name, subdomain).slice(0, 40) || subdomain,
      description: str(zRealm.description),
      date_created: int(zRealm.date_created) ?? now(),
    });

    // Users.
    const userMap = new Map<number, number>();
    const zUsers = rows(data.realm, 'zerver_userprofile');
    // Zulip's cross-realm bots become this organization's own system bots (they send its
    // notices); others are unknown here.
    for (const u of rows(data.realm, 'zerver_userprofile_crossrealm')) {
      const local = str(u.email).split('@')[0];
      const name = (Object.keys(SYSTEM_BOTS) as SystemBotName[]).find((n) => SYSTEM_BOTS[n].localPart === local);
      if (!name) {
        skipped.push(`cross-realm bot ${str(u.email)} (no such bot here)`);
        continue;
      }
      const email = systemBotEmail(services.config, realm, name);
      const id = await insertImportedRow(tx, 'users', {
        realm_id: realm.id, email, email_lc: email.toLowerCase(), delivery_email: email, full_name: SYSTEM_BOTS[name].fullName, password_hash: null,
        api_key: generateApiKey(), role: ROLE_MEMBER, is_bot: 1, bot_type: BOT_GENERIC, date_joined: now(), is_system_bot: 1,
      });
      userMap.set(int(u.id)!, id);
    }
    const emailsSeen = new Set<string>();
    for (const u of zUsers) {
      const email = str(u.email);
      if (!email || emailsSeen.has(email.toLowerCase())) {
        skipped.push(`user ${String(u.id)}: missing or duplicate email '${email}'`);
        continue;
      }
      emailsSeen.add(email.toLowerCase());
      const settings: Partial<StoredUserSettings> = {};
      for (const [key, field] of Object.entries(userSettingsSchema.shape)) {
        if (key in u && field.safeParse(u[key]).success) (settings as Record<string, unknown>)[key] = u[key];
      }
      const isBot = flag(u.is_bot);
      const id = await insertImportedRow(tx, 'users', {
        realm_id: realm.id,
        email,
        email_lc: email.toLowerCase(),
        delivery_email: str(u.delivery_email, email) || email,
        full_name: str(u.full_name, email).slice(0, 100),
        password_hash: null,
        api_key: generateApiKey(),
        role: [100, 200, 300, 400, 600].includes(int(u.role) ?? 0) ? int(u.role)! : ROLE_MEMBER,
        is_active: flag(u.is_active),
        is_bot: isBot,
        bot_type: isBot ? (int(u.bot_type) ?? 1) : null,
        is_imported_stub: flag(u.is_mirror_dummy),
        timezone: str(u.timezone),
        avatar_source: u.avatar_source === 'U' ? 'U' : 'G',
        avatar_version: int(u.avatar_version) ?? 1,
        date_joined: int(u.date_joined) ?? now(),
        last_login: int(u.last_login),
        can_change_user_emails: flag(u.can_change_user_emails),
        can_create_users: flag(u.can_create_users),
        can_forge_sender: flag(u.can_forge_sender),
        settings: JSON.stringify(diffFromDefaults(settings)),
        tos_version: typeof u.tos_version === 'string' ? u.tos_version : null,
        default_all_public_streams: flag(u.default_all_public_streams),
      });
      userMap.set(int(u.id)!, id);
      count(isBot ? 'bots' : 'users');
    }
    const mapUser = (v: unknown): number | null => {
      const id = int(v);
      return id === null ? null : (userMap.get(id) ?? null);
    };

    // Groups: named ones (system groups included) become groups; anonymous ones become
    // group-setting values where they are used.
    const groupMap = new Map<number, number>();
    const named = rows(data.realm, 'zerver_namedusergroup');
    const memberships = rows(data.realm, 'zerver_usergroupmembership');
    const subgroupRows = rows(data.realm, 'zerver_groupgroupmembership');
    const systemIds = new Map<string, number>();
    for (const g of named) {
      const id = await insertImportedRow(tx, 'user_groups', {
        realm_id: realm.id,
        name: str(g.name),
        name_lc: str(g.name).toLowerCase(),
        description: str(g.description),
        is_system_group: flag(g.is_system_group),
        deactivated: flag(g.deactivated),
        date_created: int(g.date_created),
        creator_id: mapUser(g.creator),
      });
      groupMap.set(int(g.usergroup_ptr ?? g.id)!, id);
      if (flag(g.is_system_group)) systemIds.set(str(g.name), id);
      else count('user_groups');
    }
    // An export without system groups (Slack's): make them, with every user in their role's.
    const missingSystem = SYSTEM_GROUPS.filter((d) => !systemIds.has(d.name));
    for (const def of missingSystem) {
      const g = await insertUserGroup(tx, { realm_id: realm.id, name: def.name, description: def.description, is_system_group: 1, date_created: null, creator_id: null });
      systemIds.set(def.name, g.id);
    }
    if (missingSystem.length > 0) {
      for (const def of missingSystem) if (def.subgroup) await insertSubgroups(tx, systemIds.get(def.name)!, [systemIds.get(def.subgroup)!]);
      const roleRows: { group_id: number; user_id: number }[] = [];
      for (const u of zUsers) {
        const id = mapUser(u.id);
        const group = SYSTEM_GROUP_FOR_ROLE[int(u.role) ?? ROLE_MEMBER];
        if (id !== null && group && missingSystem.some((d) => d.name === group)) roleRows.push({ group_id: systemIds.get(group)!, user_id: id });
        if (id !== null && missingSystem.some((d) => d.name === 'role:fullmembers') && (int(u.role) ?? ROLE_MEMBER) <= ROLE_MEMBER && (int(u.role) ?? 0) !== ROLE_GUEST) {
          roleRows.push({ group_id: systemIds.get('role:fullmembers')!, user_id: id });
        }
      }
      await insertImportedRows(tx, 'group_members', roleRows);
      const nobody = systemIds.get('role:nobody')!;
      await updateSystemGroupPermissions(tx, realm.id, JSON.stringify(Object.fromEntries(USER_GROUP_PERMISSION_SETTINGS.map((s) => [s, nobody]))));
    }
    const members = new Map<number, number[]>();
    const subgroups = new Map<number, number[]>();
    for (const m of memberships) {
      const g = int(m.user_group)!;
      (members.get(g) ?? members.set(g, []).get(g)!).push(int(m.user_profile)!);
    }
    for (const m of subgroupRows) {
      const g = int(m.supergroup)!;
      (subgroups.get(g) ?? subgroups.set(g, []).get(g)!).push(int(m.subgroup)!);
    }
    const memberRows: { group_id: number; user_id: number }[] = [];
    const subgroupInserts: { group_id: number; subgroup_id: number }[] = [];
    for (const [oldId, newId] of groupMap) {
      for (const u of members.get(oldId) ?? []) {
        const id = userMap.get(u);
        if (id !== undefined) memberRows.push({ group_id: newId, user_id: id });
      }
      for (const sg of subgroups.get(oldId) ?? []) {
        const id = groupMap.get(sg);
        if (id !== undefined) subgroupInserts.push({ group_id: newId, subgroup_id: id });
      }
    }
    await insertImportedRows(tx, 'group_members', memberRows);
    await insertImportedRows(tx, 'group_subgroups', subgroupInserts);
    const groupValue = (v: unknown): GroupSettingValue | undefined => {
      const id = int(v);
      if (id === null) return undefined;
      const mapped = groupMap.get(id);
      if (mapped !== undefined) return mapped;
      if (!rows(data.realm, 'zerver_usergroup').some((g) => int(g.id) === id)) return undefined;
      return {
        direct_members: (members.get(id) ?? []).map((u) => userMap.get(u)).filter((x): x is number => x !== undefined).sort((a, b) => a - b),
        direct_subgroups: (subgroups.get(id) ?? []).map((g) => groupMap.get(g)).filter((x): x is number => x !== undefined).sort((a, b) => a - b),
      };
    };
    const permissionsOf = (row: Rec, names: readonly string[]): string => {
      const out: Record<string, GroupSettingValue> = {};
      for (const n of names) {
        const v = groupValue(row[n]);
        if (v !== undefined) out[n] = v;
      }
      return JSON.stringify(out);
    };
    for (const g of named) {
      const names = Object.keys(g).filter((k) => /^can_\w+_group$/.test(k));
      const permissions = flag(g.is_system_group) ? JSON.stringify(Object.fromEntries(USER_GROUP_PERMISSION_SETTINGS.map((s) => [s, systemIds.get('role:nobody')!]))) : permissionsOf(g, names);
      await updateImportedGroupPermissions(tx, groupMap.get(int(g.usergroup_ptr ?? g.id)!)!, permissions);
    }

    // Realm settings: Zulip's columns that Parley knows and whose values it accepts.
    const settings: Record<string, unknown> = initialRealmSettings(systemIds);
    for (const [key, field] of Object.entries(realmPropertiesSchema.shape)) {
      if (!(key in zRealm)) continue;
      if (field.safeParse(zRealm[key]).success) settings[key] = zRealm[key];
      else skipped.push(`organization setting ${key}: value ${JSON.stringify(zRealm[key])} not understood`);
    }
    for (const n of REALM_GROUP_SETTING_NAMES) {
      const v = groupValue(zRealm[n]);
      if (v !== undefined) settings[n] = v;
    }
    await updateRealmRow(tx, realm.id, {
      settings: JSON.stringify(settings),
      icon_source: zRealm.icon_source === 'U' ? 'U' : 'G',
      icon_version: int(zRealm.icon_version) ?? 1,
      logo_source: zRealm.logo_source === 'U' ? 'U' : 'D',
      logo_version: int(zRealm.logo_version) ?? 1,
      night_logo_source: zRealm.night_logo_source === 'U' ? 'U' : 'D',
      night_logo_version: int(zRealm.night_logo_version) ?? 1,
    } as Parameters<typeof updateRealmRow>[2]);
    const imported: Realm = { ...realm, settings: JSON.stringify(settings) };

    // Channel folders, channels, recipients.
    const folderMap = new Map<number, number>();
    for (const f of rows(data.realm, 'zerver_channelfolder')) {
      const id = await insertImportedRow(tx, 'channel_folders', {
        realm_id: realm.id, name: str(f.name), name_lc: str(f.name).toLowerCase(), description: str(f.description), rendered_description: str(f.rendered_description),
        creator_id: mapUser(f.creator), date_created: int(f.date_created) ?? now(), is_archived: flag(f.is_archived), folder_order: int(f.order) ?? 0,
      });
      folderMap.set(int(f.id)!, id);
    }
    const streamMap = new Map<number, number>();
    const recipientStream = new Map<number, number>();
    const zStreams = rows(data.realm, 'zerver_stream');
    for (const s of zStreams) {
      const id = await insertImportedRow(tx, 'streams', {
        realm_id: realm.id,
        name: str(s.name),
        name_lc: str(s.name).toLowerCase(),
        description: str(s.description),
        rendered_description: str(s.rendered_description),
        invite_only: flag(s.invite_only),
        is_web_public: flag(s.is_web_public),
        history_public_to_subscribers: s.history_public_to_subscribers === undefined ? 1 : flag(s.history_public_to_subscribers),
        date_created: int(s.date_created) ?? now(),
        creator_id: mapUser(s.creator),
        deactivated: flag(s.deactivated),
        message_retention_days: int(s.message_retention_days),
        topics_policy: typeof s.topics_policy === 'string' ? s.topics_policy : 'inherit',
        folder_id: int(s.folder) === null ? null : (folderMap.get(int(s.folder)!) ?? null),
      });
      streamMap.set(int(s.id)!, id);
      count('channels');
    }
    for (const s of zStreams) {
      const names = Object.keys(s).filter((k) => /^can_\w+_group$/.test(k));
      await updateImportedStream(tx, streamMap.get(int(s.id)!)!, { permissions: permissionsOf(s, names) });
    }
    const recipients = new Map<number, { type: number; typeId: number }>();
    for (const r of rows(data.realm, 'zerver_recipient')) recipients.set(int(r.id)!, { type: int(r.type)!, typeId: int(r.type_id)! });
    for (const [rid, r] of recipients) if (r.type === RECIPIENT_STREAM && streamMap.has(r.typeId)) recipientStream.set(rid, streamMap.get(r.typeId)!);
    const groupDmMembers = new Map<number, number[]>();
    const subs: Record<string, unknown>[] = [];
    for (const sub of rows(data.realm, 'zerver_subscription')) {
      const rid = int(sub.recipient)!;
      const user = mapUser(sub.user_profile);
      const r = recipients.get(rid);
      if (user === null || !r) continue;
      if (r.type === RECIPIENT_DIRECT_MESSAGE_GROUP) (groupDmMembers.get(rid) ?? groupDmMembers.set(rid, []).get(rid)!).push(user);
      if (r.type !== RECIPIENT_STREAM) continue;
      const stream = recipientStream.get(rid);
      if (stream === undefined) continue;
      subs.push({
        user_id: user, stream_id: stream, realm_id: realm.id, active: flag(sub.active), is_muted: flag(sub.is_muted ?? sub.in_home_view === false), pin_to_top: flag(sub.pin_to_top),
        color: str(sub.color, '#c2c2c2'), desktop_notifications: nullableFlag(sub.desktop_notifications), audible_notifications: nullableFlag(sub.audible_notifications),
        push_notifications: nullableFlag(sub.push_notifications), email_notifications: nullableFlag(sub.email_notifications), wildcard_mentions_notify: nullableFlag(sub.wildcard_mentions_notify),
      });
    }
    await insertImportedRows(tx, 'subscriptions', subs as never[]);
    count('subscriptions', subs.length);
    for (const d of rows(data.realm, 'zerver_defaultstream')) {
      const s = streamMap.get(int(d.stream)!);
      if (s !== undefined) await insertImportedRows(tx, 'default_streams', [{ realm_id: realm.id, stream_id: s }]);
    }
    for (const u of zUsers) {
      const id = mapUser(u.id);
      if (id === null) continue;
      const stream = (v: unknown) => (int(v) === null ? null : (streamMap.get(int(v)!) ?? null));
      await updateImportedUser(tx, id, { bot_owner_id: mapUser(u.bot_owner), default_sending_stream_id: stream(u.default_sending_stream), default_events_register_stream_id: stream(u.default_events_register_stream) });
    }

    // Organization tables.
    await insertImportedRows(tx, 'realm_domains', rows(data.realm, 'zerver_realmdomain').map((d) => ({ realm_id: realm.id, domain: str(d.domain), allow_subdomains: flag(d.allow_subdomains) })));
    await insertImportedRows(tx, 'linkifiers', rows(data.realm, 'zerver_realmfilter').map((l) => ({ realm_id: realm.id, pattern: str(l.pattern), url_template: str(l.url_template), order: int(l.order) ?? 0 })));
    await insertImportedRows(tx, 'realm_playgrounds', rows(data.realm, 'zerver_realmplayground').map((p) => ({ realm_id: realm.id, name: str(p.name), pygments_language: str(p.pygments_language), url_template: str(p.url_template) })));
    const fieldMap = new Map<number, number>();
    for (const f of rows(data.realm, 'zerver_customprofilefield')) {
      const id = await insertImportedRow(tx, 'custom_profile_fields', {
        realm_id: realm.id, name: str(f.name), hint: str(f.hint), type: int(f.field_type) ?? 1, field_data: str(f.field_data), order: int(f.order) ?? 0,
        display_in_profile_summary: flag(f.display_in_profile_summary), required: flag(f.required), editable_by_user: f.editable_by_user === undefined ? 1 : flag(f.editable_by_user),
        use_for_user_matching: flag(f.use_for_user_matching),
      });
      fieldMap.set(int(f.id)!, id);
      count('profile_fields');
    }
    await insertImportedRows(tx, 'custom_profile_values', rows(data.realm, 'zerver_customprofilefieldvalue').flatMap((v) => {
      const user = mapUser(v.user_profile);
      const field = fieldMap.get(int(v.field)!);
      return user !== null && field !== undefined ? [{ user_id: user, field_id: field, value: str(v.value), rendered_value: typeof v.rendered_value === 'string' ? v.rendered_value : null }] : [];
    }));
    await insertImportedRows(tx, 'alert_words', rows(data.realm, 'zerver_alertword').flatMap((a) => (mapUser(a.user_profile) !== null ? [{ user_id: mapUser(a.user_profile)!, word: str(a.word) }] : [])));
    await insertImportedRows(tx, 'muted_users', rows(data.realm, 'zerver_muteduser').flatMap((m) =>
      mapUser(m.user_profile) !== null && mapUser(m.muted_user) !== null ? [{ user_id: mapUser(m.user_profile)!, muted_user_id: mapUser(m.muted_user)!, date_muted: int(m.date_muted) ?? now() }] : [],
    ));
    await insertImportedRows(tx, 'user_status', rows(data.realm, 'zerver_userstatus').flatMap((s) =>
      mapUser(s.user_profile) !== null
        ? [{ user_id: mapUser(s.user_profile)!, status_text: str(s.status_text), emoji_name: str(s.emoji_name), emoji_code: str(s.emoji_code), reaction_type: str(s.reaction_type, 'unicode_emoji'), timestamp: int(s.timestamp) ?? now() }]
        : [],
    ));
    await insertImportedRows(tx, 'bot_services', rows(data.realm, 'zerver_service').flatMap((s) =>
      mapUser(s.user_profile) !== null ? [{ realm_id: realm.id, user_id: mapUser(s.user_profile)!, name: str(s.name), base_url: str(s.base_url), token: str(s.token), interface: int(s.interface) ?? 1 }] : [],
    ));

    // Custom emoji and their files.
    const emojiFiles = data.files.emoji ?? { records: [], data: new Map() };
    const emojiByFile = new Map<string, Buffer>();
    for (const r of emojiFiles.records) {
      const body = emojiFiles.data.get(str(r.path));
      if (body) emojiByFile.set(str(r.file_name), body);
    }
    const emojiForRender: { id: string; name: string; sourceUrl: string; deactivated: boolean }[] = [];
    const emojiMap = new Map<number, number>();
    for (const e of rows(data.realm, 'zerver_realmemoji')) {
      const body = emojiByFile.get(str(e.file_name));
      if (!body) {
        skipped.push(`custom emoji :${str(e.name)}: (no image file in the export)`);
        continue;
      }
      const id = await insertImportedRow(tx, 'realm_emoji', { realm_id: realm.id, name: str(e.name), file_name: str(e.file_name), author_id: mapUser(e.author), deactivated: flag(e.deactivated) });
      emojiMap.set(int(e.id)!, id);
      await insertStoredFile(tx, { path: storedPath.emoji(realm.id, str(e.file_name)), realm_id: realm.id, content_type: uploadContentType(str(e.file_name), ''), size: body.length, data: body, date_created: now() });
      emojiForRender.push({ id: String(id), name: str(e.name), sourceUrl: realmEmojiSourceUrl({ realm_id: realm.id, file_name: str(e.file_name) }), deactivated: !!flag(e.deactivated) });
      count('custom_emoji');
    }

    // Messages, oldest first, so new IDs keep their order.
    const clients = new Map(rows(data.realm, 'zerver_client').map((c) => [int(c.id), str(c.name)]));
    const streamFirst = new Map<number, number>();
    const zMessages = [...data.messages].sort((a, b) => (int(a.id) ?? 0) - (int(b.id) ?? 0));
    const renderCtx: MarkdownContext = {
      realmUrl: realmUrl(services.config, realm),
      users: zUsers.flatMap((u) => (mapUser(u.id) !== null ? [{ id: mapUser(u.id)!, fullName: str(u.full_name), isActive: !!flag(u.is_active) }] : [])),
      groups: named.filter((g) => !flag(g.is_system_group)).map((g) => ({ id: groupMap.get(int(g.usergroup_ptr ?? g.id)!)!, name: str(g.name), deactivated: !!flag(g.deactivated) })),
      channels: zStreams.map((s) => ({ id: streamMap.get(int(s.id)!)!, name: str(s.name) })),
      realmEmoji: emojiForRender,
      inlineImagePreview: true,
    };
    const pathIdMap = new Map<string, string>();
    for (const a of rows(data.attachment, 'zerver_attachment')) {
      const old = str(a.path_id);
      pathIdMap.set(old, old.replace(/^\d+\//, `${realm.id}/`));
    }
    const rewritePaths = (text: string): string =>
      realmIdOld === null || realmIdOld === realm.id
        ? text
        : text.replace(new RegExp(`/(user_uploads|user_avatars)/${realmIdOld}/`, 'g'), (_m, area: string) => `/${area}/${realm.id}/`);
    // Filled as messages are written: links to earlier messages (the usual case) are remapped.
    const messageMap = new Map<number, number>();
    const remapRendered = (html: string): string => rewriteRenderedIds(rewritePaths(html), userMap, groupMap, streamMap, messageMap);
    for (const m of zMessages) {
      const r = recipients.get(int(m.recipient)!);
      const sender = mapUser(m.sender);
      if (!r || sender === null) {
        skipped.push(`message ${String(m.id)}: unknown ${r ? 'sender' : 'recipient'}`);
        continue;
      }
      let type: string;
      let streamId: number | null = null;
      let dmKey: string | null = null;
      if (r.type === RECIPIENT_STREAM) {
        streamId = streamMap.get(r.typeId) ?? null;
        if (streamId === null) {
          skipped.push(`message ${String(m.id)}: unknown channel`);
          continue;
        }
        type = 'stream';
      } else if (r.type === RECIPIENT_PERSONAL) {
        const other = userMap.get(r.typeId);
        if (other === undefined) {
          skipped.push(`message ${String(m.id)}: unknown recipient`);
          continue;
        }
        type = 'private';
        dmKey = dmKeyFor([sender, other]);
      } else {
        const membersOf = groupDmMembers.get(int(m.recipient)!) ?? [];
        type = 'private';
        dmKey = dmKeyFor([sender, ...membersOf]);
      }
      const content = rewritePaths(str(m.content));
      let rendered = typeof m.rendered_content === 'string' ? remapRendered(m.rendered_content) : null;
      let hasLink = flag(m.has_link);
      let hasImage = flag(m.has_image);
      const hasAttachment = flag(m.has_attachment);
      if (rendered === null) {
        const out = renderMarkdown(content, renderCtx);
        rendered = out.html;
        hasLink = out.hasLink ? 1 : 0;
        hasImage = out.hasImage ? 1 : 0;
      }
      const topic = normalizeTopic(str(m.subject ?? m.topic_name));
      const editHistory = typeof m.edit_history === 'string' ? remapEditHistory(m.edit_history, userMap, streamMap, remapRendered) : null;
      const id = await insertImportedRow(tx, 'messages', {
        realm_id: realm.id,
        sender_id: sender,
        type,
        stream_id: streamId,
        topic: type === 'stream' ? topic : '',
        topic_lc: type === 'stream' ? topic.toLowerCase() : '',
        dm_key: dmKey,
        content,
        rendered_content: rendered,
        rendered_content_version: int(m.rendered_content_version) ?? 1,
        date_sent: int(m.date_sent ?? m.pub_date) ?? now(),
        sending_client: clients.get(int(m.sending_client)) ?? 'import',
        last_edit_time: int(m.last_edit_time),
        last_moved_time: lastMovedTime(editHistory),
        edit_history: editHistory,
        has_link: hasLink,
        has_image: hasImage,
        has_attachment: hasAttachment,
      });
      messageMap.set(int(m.id)!, id);
      if (streamId !== null && !streamFirst.has(streamId)) streamFirst.set(streamId, id);
    }
    count('messages', messageMap.size);
    for (const [stream, first] of streamFirst) await updateImportedStream(tx, stream, { first_message_id: first });

    const receipts: { user_id: number; message_id: number; flags: number }[] = [];
    for (const um of data.userMessages) {
      const user = mapUser(um.user_profile);
      const message = messageMap.get(int(um.message)!);
      if (user === null || message === undefined) continue;
      receipts.push({ user_id: user, message_id: message, flags: fromZulipFlagsMask(int(um.flags_mask ?? um.flags) ?? 0) });
    }
    await insertImportedRows(tx, 'user_messages', receipts, 500);
    count('message_receipts', receipts.length);
    const reactions: { message_id: number; user_id: number; emoji_name: string; emoji_code: string; reaction_type: string }[] = [];
    for (const x of rows(data.realm, 'zerver_reaction')) {
      const user = mapUser(x.user_profile);
      const message = messageMap.get(int(x.message)!);
      if (user === null || message === undefined) continue;
      let code = str(x.emoji_code);
      if (x.reaction_type === 'realm_emoji') {
        const mapped = emojiMap.get(int(code) ?? -1);
        if (mapped === undefined) {
          skipped.push(`reaction :${str(x.emoji_name)}: on message ${String(x.message)} (custom emoji not imported)`);
          continue;
        }
        code = String(mapped);
      }
      reactions.push({ message_id: message, user_id: user, emoji_name: str(x.emoji_name), emoji_code: code, reaction_type: str(x.reaction_type, 'unicode_emoji') });
    }
    await insertImportedRows(tx, 'reactions', reactions);
    count('reactions', reactions.length);
    await insertImportedRows(tx, 'user_topics', rows(data.realm, 'zerver_usertopic').flatMap((t) => {
      const user = mapUser(t.user_profile);
      const stream = streamMap.get(int(t.stream)!) ?? recipientStream.get(int(t.recipient) ?? -1);
      const topic = normalizeTopic(str(t.topic_name));
      return user !== null && stream !== undefined ? [{ user_id: user, stream_id: stream, topic, topic_lc: topic.toLowerCase(), visibility_policy: int(t.visibility_policy) ?? 1, last_updated: int(t.last_updated) ?? now() }] : [];
    }));

    // Submessages (polls and to-do lists), carried like reactions. Zulip's export has
    // none; Parley's carries them in zerver_submessage.
    const submessages: { message_id: number; sender_id: number; msg_type: string; content: string }[] = [];
    for (const x of [...rows(data.realm, 'zerver_submessage')].sort((a, b) => (int(a.id) ?? 0) - (int(b.id) ?? 0))) {
      const sender = mapUser(x.sender);
      const message = messageMap.get(int(x.message) ?? -1);
      if (sender === null || message === undefined) {
        skipped.push(`submessage ${String(x.id)}: unknown ${sender === null ? 'sender' : 'message'}`);
        continue;
      }
      submessages.push({ message_id: message, sender_id: sender, msg_type: str(x.msg_type, 'widget'), content: remapWidgetKeys(str(x.content), userMap) });
    }
    await insertImportedRows(tx, 'submessages', submessages);
    count('submessages', submessages.length);

    // Drafts and scheduled messages name a recipient: a channel, a user or a direct-message
    // group; they keep it as Parley's API shows it (the other participants, or the sender alone).
    const addressOf = (recipientId: unknown, sender: number): { type: 'stream' | 'private'; streamId: number | null; to: number[] } | null => {
      const rid = int(recipientId);
      const r = rid === null ? undefined : recipients.get(rid);
      if (!r) return null;
      if (r.type === RECIPIENT_STREAM) {
        const stream = streamMap.get(r.typeId);
        return stream === undefined ? null : { type: 'stream', streamId: stream, to: [stream] };
      }
      const members = r.type === RECIPIENT_PERSONAL ? [userMap.get(r.typeId)] : (groupDmMembers.get(rid!) ?? []);
      if (members.some((u) => u === undefined) || members.length === 0) return null;
      const others = [...new Set(members as number[])].filter((u) => u !== sender).sort((a, b) => a - b);
      return { type: 'private', streamId: null, to: others.length > 0 ? others : [sender] };
    };
    const drafts: { user_id: number; type: string; to: string; topic: string; content: string; last_edit_time: number }[] = [];
    for (const d of [...rows(data.realm, 'zerver_draft')].sort((a, b) => (int(a.id) ?? 0) - (int(b.id) ?? 0))) {
      const user = mapUser(d.user_profile);
      if (user === null) {
        skipped.push(`draft ${String(d.id)}: unknown user`);
        continue;
      }
      // A draft whose recipient is gone stays, unaddressed (Zulip's recipient is SET_NULL).
      const address = addressOf(d.recipient, user);
      const topic = address?.type === 'stream' ? normalizeTopic(str(d.topic)) : '';
      drafts.push({ user_id: user, type: address?.type ?? '', to: JSON.stringify(address?.to ?? []), topic, content: str(d.content), last_edit_time: int(d.last_edit_time) ?? now() });
    }
    await insertImportedRows(tx, 'drafts', drafts);
    count('drafts', drafts.length);
    const scheduled: Insertable<ScheduledMessageTable>[] = [];
    for (const m of [...rows(data.realm, 'zerver_scheduledmessage')].sort((a, b) => (int(a.id) ?? 0) - (int(b.id) ?? 0))) {
      const sender = mapUser(m.sender);
      const address = sender === null ? null : addressOf(m.recipient, sender);
      if (sender === null || address === null) {
        skipped.push(`scheduled message ${String(m.id)}: unknown ${sender === null ? 'sender' : 'recipient'}`);
        continue;
      }
      const mapMessage = (v: unknown): number | null => messageMap.get(int(v) ?? -1) ?? null;
      const deliveryType = int(m.delivery_type) ?? SEND_LATER;
      const target = mapMessage(m.reminder_target_message);
      const note = typeof m.reminder_note === 'string' ? m.reminder_note : null;
      let content = rewritePaths(str(m.content));
      let rendered = typeof m.rendered_content === 'string' ? remapRendered(m.rendered_content) : null;
      // A pending reminder's text names its message by ID and URL: it is written anew for the
      // imported message, as it would be when sent (Zulip's send_reminder).
      if (deliveryType === REMIND && target !== null && !flag(m.delivered)) {
        const [message] = await fetchMessagesByIds(tx, realm.id, [target]);
        content = await reminderText(tx, services.config, imported, message!, note);
        rendered = null;
      }
      const topic = address.type === 'stream' ? normalizeTopic(str(m.subject)) : '';
      scheduled.push({
        realm_id: realm.id,
        sender_id: sender,
        delivery_type: deliveryType,
        type: address.type,
        stream_id: address.streamId,
        topic,
        to_user_ids: JSON.stringify(address.type === 'private' ? address.to : []),
        content,
        rendered_content: rendered ?? renderMarkdown(content, renderCtx).html,
        scheduled_timestamp: int(m.scheduled_timestamp) ?? now(),
        request_timestamp: int(m.request_timestamp),
        read_by_sender: flag(m.read_by_sender),
        sending_client: clients.get(int(m.sending_client)) ?? 'import',
        delivered: flag(m.delivered),
        failed: flag(m.failed),
        failure_message: typeof m.failure_message === 'string' ? m.failure_message : null,
        delivered_message_id: mapMessage(m.delivered_message),
        reminder_target_message_id: target,
        reminder_note: note,
      });
    }
    await insertImportedRows(tx, 'scheduled_messages', scheduled);
    count('scheduled_messages', scheduled.length);
    const snippets = rows(data.realm, 'zerver_savedsnippet').flatMap((x) => {
      const user = mapUser(x.user_profile);
      return user !== null ? [{ realm_id: realm.id, user_id: user, title: str(x.title), content: str(x.content), date_created: int(x.date_created) ?? now() }] : [];
    });
    await insertImportedRows(tx, 'saved_snippets', snippets);
    count('saved_snippets', snippets.length);

    // Uploads: the attachment rows, their files and their messages.
    const uploads = data.files.uploads ?? { records: [], data: new Map() };
    const uploadByPath = new Map<string, Buffer>();
    for (const r of uploads.records) {
      const body = uploads.data.get(str(r.path)) ?? uploads.data.get(str(r.s3_path));
      if (body) uploadByPath.set(str(r.s3_path ?? r.path), body).set(str(r.path), body);
    }
    const links: { attachment_id: number; message_id: number }[] = [];
    for (const a of rows(data.attachment, 'zerver_attachment')) {
      const body = uploadByPath.get(str(a.path_id));
      const owner = mapUser(a.owner);
      if (!body || owner === null) {
        skipped.push(`upload ${str(a.path_id)}: ${body ? 'unknown owner' : 'file missing from the export'}`);
        continue;
      }
      const pathId = pathIdMap.get(str(a.path_id))!;
      const id = await insertImportedRow(tx, 'attachments', {
        realm_id: realm.id, owner_id: owner, path_id: pathId, file_name: str(a.file_name), size: body.length, content_type: str(a.content_type) || uploadContentType(str(a.file_name), ''), create_time: int(a.create_time) ?? now(),
      });
      await insertStoredFile(tx, { path: storedPath.upload(pathId), realm_id: realm.id, content_type: str(a.content_type) || uploadContentType(str(a.file_name), ''), size: body.length, data: body, date_created: int(a.create_time) ?? now() });
      for (const mid of Array.isArray(a.messages) ? a.messages : []) {
        const message = messageMap.get(int(mid)!);
        if (message !== undefined) links.push({ attachment_id: id, message_id: message });
      }
      count('uploads');
    }
    await insertImportedRows(tx, 'attachment_messages', links);

    // Avatars (renamed to the new user's file name) and the organization's icon and logos.
    const avatars = data.files.avatars ?? { records: [], data: new Map() };
    for (const r of avatars.records) {
      const path = str(r.path);
      const body = avatars.data.get(path) ?? avatars.data.get(str(r.s3_path));
      const user = mapUser(r.user_profile_id);
      const m = /([0-9a-f]{40})?((?:-medium)?\.png|\.original)$/.exec(path);
      if (!body || user === null || !m || m[2] === '.original') continue;
      const name = `${uploadedAvatarHash({ realm_id: realm.id, id: user })}${m[2]}`;
      await insertStoredFile(tx, { path: storedPath.avatar(realm.id, name), realm_id: realm.id, content_type: 'image/png', size: body.length, data: body, date_created: now() });
      if (m[2] === '.png') count('avatars');
    }
    const icons = data.files.realm_icons ?? { records: [], data: new Map() };
    for (const r of icons.records) {
      const path = str(r.path);
      const body = icons.data.get(path);
      const m = /realm\/([^/]+)$/.exec(path);
      if (!body || !m) continue;
      await insertStoredFile(tx, { path: storedPath.avatar(realm.id, `realm/${m[1]}`), realm_id: realm.id, content_type: str(r.content_type, 'image/png'), size: body.length, data: body, date_created: now() });
    }
    for (const t of ['zerver_onboardingstep', 'zerver_realmauditlog']) {
      const n = rows(data.realm, t).length;
      if (n > 0) skipped.push(`${t}: ${n} row(s) (not imported)`);
    }
    return { realm: imported, userIds: [...userMap.values()] };
  });

  const links: { email: string; url: string }[] = [];
  for (const id of result.userIds) {
    const user = await fetchUserById(services.db.kysely, result.realm.id, id);
    if (!user || user.is_bot || !user.is_active || user.is_imported_stub) continue;
    const token = await passwordResetToken(services, user, now() + RESET_LINK_SECONDS);
    links.push({ email: user.delivery_email, url: `${realmUrl(services.config, result.realm)}/accounts/password/reset/${token}` });
  }
  return { realm_id: result.realm.id, string_id: result.realm.string_id, counts, skipped, password_reset_links: links };
}

/**
 * Zulip's fix_message_rendered_content: the IDs that rendered HTML names (mentions of users
 * and groups, channel, topic and message links) are the export's; they become the new ones.
 */
function rewriteRenderedIds(html: string, users: Map<number, number>, groups: Map<number, number>, streams: Map<number, number>, messages: Map<number, number>): string {
  const swap = (map: Map<number, number>) => (whole: string, before: string, id: string) => {
    const mapped = map.get(Number(id));
    return mapped === undefined ? whole : `${before}${mapped}`;
  };
  return html
    .replace(/(data-user-id=")(\d+)(?=")/g, swap(users))
    .replace(/(data-user-group-id=")(\d+)(?=")/g, swap(groups))
    .replace(/(data-stream-id=")(\d+)(?=")/g, swap(streams))
    .replace(/(href="\/#narrow\/(?:channel|stream)\/)(\d+)(?=-)/g, swap(streams))
    .replace(/(href="\/#narrow\/[^"]*\/(?:near|with)\/)(\d+)(?=["/])/g, swap(messages));
}

/** An edit history with its user and channel IDs remapped (Zulip's fix_message_edit_history). */
function remapEditHistory(text: string, users: Map<number, number>, streams: Map<number, number>, remapRendered: (html: string) => string): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (!Array.isArray(parsed)) return null;
  for (const entry of parsed as Record<string, unknown>[]) {
    if (typeof entry.user_id === 'number') entry.user_id = users.get(entry.user_id) ?? null;
    for (const k of ['stream', 'prev_stream']) if (typeof entry[k] === 'number') entry[k] = streams.get(entry[k] as number) ?? entry[k];
    if (typeof entry.prev_rendered_content === 'string') entry.prev_rendered_content = remapRendered(entry.prev_rendered_content);
  }
  return JSON.stringify(parsed);
}

/**
 * A poll's or to-do list's event with the user ID inside its key remapped: the web app keys a
 * poll option added by a user "<user ID>,<index>" (votes name it) and a task "<index>,<user ID>"
 * (strikes name it); "canned" marks the widget's own options and tasks.
 */
function remapWidgetKeys(content: string, users: Map<number, number>): string {
  let event: unknown;
  try {
    event = JSON.parse(content);
  } catch {
    return content;
  }
  if (typeof event !== 'object' || event === null) return content;
  const { type, key } = event as { type?: unknown; key?: unknown };
  if (typeof key !== 'string') return content;
  const pattern = type === 'vote' ? /^(\d+)(,\d+)$/ : type === 'strike' ? /^(\d+,)(\d+)$/ : null;
  const m = pattern?.exec(key);
  if (!m) return content;
  const userPart = type === 'vote' ? m[1]! : m[2]!;
  const mapped = users.get(Number(userPart));
  if (mapped === undefined) return content;
  const newKey = type === 'vote' ? `${mapped}${m[2]}` : `${m[1]}${mapped}`;
  return content.replace(JSON.stringify(key), JSON.stringify(newKey));
}

/** The last move in an edit history (newest first), as Parley keeps it beside the history. */
function lastMovedTime(history: string | null): number | null {
  if (!history) return null;
  const entries = JSON.parse(history) as Record<string, unknown>[];
  for (const e of entries) if ('prev_topic' in e || 'prev_stream' in e) return typeof e.timestamp === 'number' ? Math.floor(e.timestamp) : null;
  return null;
}

