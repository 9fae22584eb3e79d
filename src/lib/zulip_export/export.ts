import type { Tx } from '../../db/index.js';
import { fetchRealmDump, fetchRealmMessageBatch, fetchReactionsFor, fetchSubmessagesFor, fetchUserMessagesFor, streamStoredFiles } from '../../db/repos/realm_dump.js';
import { fetchStoredFile } from '../../db/repos/stored_files.js';
import type { GroupSettingValue } from '../group_settings.js';
import { realmSettings, REALM_GROUP_SETTING_NAMES } from '../realm_settings.js';
import { userSettings } from '../user_settings.js';
import { uploadedAvatarHash } from '../avatar.js';
import { storedPath } from '../uploads.js';
import { dmKeyFor, dmParticipantIds } from '../format/messages.js';
import type { Rec, ZulipExport } from './archive.js';
import { toZulipFlagsMask } from './flags.js';

export const EXPORT_TYPES = ['public', 'full_with_consent', 'full_without_consent'] as const;
export type ExportType = (typeof EXPORT_TYPES)[number];

/** Zulip's Recipient.type values. */
export const RECIPIENT_PERSONAL = 1;
export const RECIPIENT_STREAM = 2;
export const RECIPIENT_DIRECT_MESSAGE_GROUP = 3;

const bool = (v: number | null | undefined): boolean => !!v;
const MESSAGE_BATCH = 1000;

/**
 * Builds the organization's data export in Zulip's format (zerver/lib/export.py), with
 * Parley's own IDs as the export's IDs (each table's are unique). What it holds, by type:
 * - public: every table of realm.json, and only the messages of public channels; no drafts,
 *   scheduled messages or saved snippets;
 * - full_with_consent: also the private channels' and direct messages that a consenting user
 *   (allow_private_data_export) sent or received, and only consenting users' message flags
 *   outside public channels, alert words, muted users, topic settings, drafts, scheduled
 *   messages and saved snippets;
 * - full_without_consent (and the server administrator's `parley export`): everything.
 * Passwords and API keys are never exported: an import gives new ones.
 */
export async function buildZulipExport(db: Tx, realmId: number, type: ExportType): Promise<ZulipExport> {
  const dump = await fetchRealmDump(db, realmId);
  const settings = realmSettings(dump.realm);
  const consenting = new Set<number>();
  for (const u of dump.users) {
    if (type === 'full_without_consent' || (type === 'full_with_consent' && userSettings(u).allow_private_data_export)) consenting.add(u.id);
  }
  const privateOk = (userId: number): boolean => consenting.has(userId);

  // Recipients: one per user, channel and direct-message group, numbered in that order.
  const recipients: Rec[] = [];
  const userRecipient = new Map<number, number>();
  const streamRecipient = new Map<number, number>();
  const groupRecipient = new Map<string, number>();
  const huddles: Rec[] = [];
  const subscriptions: Rec[] = [];
  const addRecipient = (kind: number, typeId: number): number => {
    const id = recipients.length + 1;
    recipients.push({ id, type: kind, type_id: typeId });
    return id;
  };
  for (const u of [...dump.users, ...dump.systemBots]) userRecipient.set(u.id, addRecipient(RECIPIENT_PERSONAL, u.id));
  for (const s of dump.streams) streamRecipient.set(s.id, addRecipient(RECIPIENT_STREAM, s.id));
  const dmRecipient = (senderId: number, dmKey: string): number => {
    const ids = dmParticipantIds(dmKey);
    if (ids.length <= 2) return userRecipient.get(ids.find((id) => id !== senderId) ?? senderId) ?? 0;
    let id = groupRecipient.get(dmKey);
    if (id === undefined) {
      const huddleId = huddles.length + 1;
      id = addRecipient(RECIPIENT_DIRECT_MESSAGE_GROUP, huddleId);
      groupRecipient.set(dmKey, id);
      huddles.push({ id: huddleId, huddle_hash: dmKey, group_size: ids.length, recipient: id });
      for (const userId of ids) subscriptions.push({ id: 0, user_profile: userId, recipient: id, active: true, is_user_active: true, is_muted: false, pin_to_top: false, color: '#c2c2c2' });
    }
    return id;
  };

  // Group-setting values: a group's ID, or an anonymous group (a zerver_usergroup row with no
  // zerver_namedusergroup row) holding the value's members and subgroups.
  const groups: Rec[] = dump.userGroups.map((g) => ({ id: g.id, realm: realmId }));
  const groupMemberships: Rec[] = dump.groupMembers.map((m) => ({ user_group: m.group_id, user_profile: m.user_id }));
  const groupGroupMemberships: Rec[] = dump.groupSubgroups.map((m) => ({ supergroup: m.group_id, subgroup: m.subgroup_id }));
  let nextGroupId = Math.max(0, ...dump.userGroups.map((g) => g.id)) + 1;
  const groupSetting = (value: GroupSettingValue | undefined): number | null => {
    if (value === undefined) return null;
    if (typeof value === 'number') return value;
    const id = nextGroupId++;
    groups.push({ id, realm: realmId });
    for (const u of value.direct_members) groupMemberships.push({ user_group: id, user_profile: u });
    for (const g of value.direct_subgroups) groupGroupMemberships.push({ supergroup: id, subgroup: g });
    return id;
  };
  const permissions = (text: string): Rec => {
    const out: Rec = {};
    let parsed: Record<string, GroupSettingValue> = {};
    try {
      parsed = JSON.parse(text) as Record<string, GroupSettingValue>;
    } catch {
      parsed = {};
    }
    for (const [key, value] of Object.entries(parsed)) out[key] = groupSetting(value);
    return out;
  };

  const r = dump.realm;
  const realmRow: Rec = {
    ...Object.fromEntries(Object.entries(settings).filter(([k]) => !(REALM_GROUP_SETTING_NAMES as string[]).includes(k))),
    id: r.id,
    string_id: r.string_id,
    name: r.name,
    description: r.description,
    date_created: r.date_created,
    deactivated: bool(r.deactivated),
    icon_source: r.icon_source,
    icon_version: r.icon_version,
    logo_source: r.logo_source,
    logo_version: r.logo_version,
    night_logo_source: r.night_logo_source,
    night_logo_version: r.night_logo_version,
  };
  for (const n of REALM_GROUP_SETTING_NAMES) realmRow[n] = groupSetting(settings[n]);

  const users: Rec[] = dump.users.map((u) => ({
    ...userSettings(u),
    id: u.id,
    realm: realmId,
    email: u.email,
    delivery_email: u.delivery_email,
    full_name: u.full_name,
    role: u.role,
    is_active: bool(u.is_active),
    is_bot: bool(u.is_bot),
    bot_type: u.bot_type,
    bot_owner: u.bot_owner_id,
    is_mirror_dummy: bool(u.is_imported_stub),
    date_joined: u.date_joined,
    last_login: u.last_login,
    timezone: u.timezone,
    avatar_source: u.avatar_source,
    avatar_version: u.avatar_version,
    tos_version: u.tos_version,
    can_change_user_emails: bool(u.can_change_user_emails),
    can_create_users: bool(u.can_create_users),
    can_forge_sender: bool(u.can_forge_sender),
    default_sending_stream: u.default_sending_stream_id,
    default_events_register_stream: u.default_events_register_stream_id,
    default_all_public_streams: bool(u.default_all_public_streams),
    recipient: userRecipient.get(u.id),
  }));

  const streams: Rec[] = dump.streams.map((s) => ({
    ...permissions(s.permissions),
    id: s.id,
    realm: realmId,
    name: s.name,
    description: s.description,
    rendered_description: s.rendered_description,
    invite_only: bool(s.invite_only),
    is_web_public: bool(s.is_web_public),
    history_public_to_subscribers: bool(s.history_public_to_subscribers),
    date_created: s.date_created,
    creator: s.creator_id,
    first_message_id: s.first_message_id,
    deactivated: bool(s.deactivated),
    message_retention_days: s.message_retention_days,
    topics_policy: s.topics_policy,
    folder: s.folder_id,
    recipient: streamRecipient.get(s.id),
  }));
  const nullableBool = (v: number | null) => (v === null ? null : !!v);
  for (const sub of dump.subscriptions) {
    subscriptions.push({
      id: 0,
      user_profile: sub.user_id,
      recipient: streamRecipient.get(sub.stream_id),
      active: bool(sub.active),
      is_user_active: true,
      is_muted: bool(sub.is_muted),
      pin_to_top: bool(sub.pin_to_top),
      color: sub.color,
      desktop_notifications: nullableBool(sub.desktop_notifications),
      audible_notifications: nullableBool(sub.audible_notifications),
      push_notifications: nullableBool(sub.push_notifications),
      email_notifications: nullableBool(sub.email_notifications),
      wildcard_mentions_notify: nullableBool(sub.wildcard_mentions_notify),
    });
  }
  for (const u of dump.users) subscriptions.push({ id: 0, user_profile: u.id, recipient: userRecipient.get(u.id), active: true, is_user_active: bool(u.is_active), is_muted: false, pin_to_top: false, color: '#c2c2c2' });

  const namedGroups: Rec[] = dump.userGroups.map((g) => ({
    ...permissions(g.permissions),
    usergroup_ptr: g.id,
    realm_for_sharding: realmId,
    name: g.name,
    description: g.description,
    is_system_group: bool(g.is_system_group),
    deactivated: bool(g.deactivated),
    date_created: g.date_created,
    creator: g.creator_id,
  }));

  // Messages, their flags, reactions and submessages, a batch at a time.
  const publicStream = new Set(dump.streams.filter((s) => !s.invite_only).map((s) => s.id));
  const clients = new Map<string, number>();
  const clientId = (name: string): number => {
    let id = clients.get(name);
    if (id === undefined) clients.set(name, (id = clients.size + 1));
    return id;
  };
  const messages: Rec[] = [];
  const userMessages: Rec[] = [];
  const reactions: Rec[] = [];
  const submessages: Rec[] = [];
  const exported = new Set<number>();
  for (let after = 0; ; ) {
    const batch = await fetchRealmMessageBatch(db, realmId, after, MESSAGE_BATCH);
    if (batch.length === 0) break;
    after = batch[batch.length - 1]!.id;
    const receipts = await fetchUserMessagesFor(db, batch.map((m) => m.id));
    const byMessage = new Map<number, typeof receipts>();
    for (const um of receipts) {
      let list = byMessage.get(um.message_id);
      if (!list) byMessage.set(um.message_id, (list = []));
      list.push(um);
    }
    const kept: number[] = [];
    for (const m of batch) {
      const isPublic = m.type === 'stream' && m.stream_id !== null && publicStream.has(m.stream_id);
      const rows = byMessage.get(m.id) ?? [];
      if (!isPublic && !privateOk(m.sender_id) && !rows.some((um) => privateOk(um.user_id))) continue;
      kept.push(m.id);
      exported.add(m.id);
      messages.push({
        id: m.id,
        sender: m.sender_id,
        recipient: m.type === 'stream' ? streamRecipient.get(m.stream_id!) : dmRecipient(m.sender_id, m.dm_key ?? String(m.sender_id)),
        realm: realmId,
        subject: m.topic,
        content: m.content,
        rendered_content: m.rendered_content,
        rendered_content_version: m.rendered_content_version,
        date_sent: m.date_sent,
        sending_client: clientId(m.sending_client),
        last_edit_time: m.last_edit_time,
        edit_history: m.edit_history,
        has_attachment: bool(m.has_attachment),
        has_image: bool(m.has_image),
        has_link: bool(m.has_link),
        type: 1,
        is_channel_message: m.type === 'stream',
      });
      for (const um of rows) {
        if (!isPublic && !privateOk(um.user_id)) continue;
        userMessages.push({ id: userMessages.length + 1, user_profile: um.user_id, message: m.id, flags_mask: toZulipFlagsMask(um.flags) });
      }
    }
    for (const x of await fetchReactionsFor(db, kept)) {
      reactions.push({ id: x.id, user_profile: x.user_id, message: x.message_id, emoji_name: x.emoji_name, emoji_code: x.emoji_code, reaction_type: x.reaction_type });
    }
    for (const x of await fetchSubmessagesFor(db, kept)) {
      submessages.push({ id: x.id, message: x.message_id, sender: x.sender_id, msg_type: x.msg_type, content: x.content });
    }
  }

  // A draft's or scheduled message's recipient, as Zulip stores it: a channel's, the other
  // participant's (or the sender's own, for a note to self), or a direct-message group's.
  const recipientOf = (senderId: number, type: string, streamId: number | null, to: string): number | null => {
    if (type === 'stream') return streamId === null ? null : (streamRecipient.get(streamId) ?? null);
    if (type !== 'private') return null;
    return dmRecipient(senderId, dmKeyFor([senderId, ...(JSON.parse(to) as number[])]));
  };
  const drafts: Rec[] = dump.drafts.filter((d) => privateOk(d.user_id)).map((d) => ({
    id: d.id, user_profile: d.user_id, recipient: recipientOf(d.user_id, d.type, d.type === 'stream' ? (JSON.parse(d.to) as number[])[0]! : null, d.to),
    topic: d.topic, content: d.content, last_edit_time: d.last_edit_time,
  }));
  const scheduledMessages: Rec[] = dump.scheduledMessages.filter((m) => privateOk(m.sender_id)).map((m) => ({
    id: m.id,
    sender: m.sender_id,
    recipient: recipientOf(m.sender_id, m.type, m.stream_id, m.to_user_ids),
    subject: m.topic,
    content: m.content,
    rendered_content: m.rendered_content,
    sending_client: clientId(m.sending_client),
    stream: m.stream_id,
    realm: realmId,
    scheduled_timestamp: m.scheduled_timestamp,
    // Rows from before Parley recorded it; Zulip's column may not be empty.
    request_timestamp: m.request_timestamp ?? m.scheduled_timestamp,
    read_by_sender: bool(m.read_by_sender),
    delivered: bool(m.delivered),
    delivered_message: m.delivered_message_id !== null && exported.has(m.delivered_message_id) ? m.delivered_message_id : null,
    // Zulip's rule: the content links an upload of this organization.
    has_attachment: m.content.includes(`/user_uploads/${realmId}/`),
    failed: bool(m.failed),
    failure_message: m.failure_message,
    delivery_type: m.delivery_type,
    reminder_target_message: m.reminder_target_message_id !== null && exported.has(m.reminder_target_message_id) ? m.reminder_target_message_id : null,
    reminder_note: m.reminder_note,
  }));
  subscriptions.forEach((s, i) => (s.id = i + 1));

  const realm: Record<string, Rec[]> = {
    zerver_realm: [realmRow],
    zerver_userprofile: users,
    zerver_userprofile_mirrordummy: [],
    zerver_userprofile_crossrealm: dump.systemBots.map((b) => ({ id: b.id, email: b.email, full_name: b.full_name, is_bot: true, recipient: userRecipient.get(b.id) })),
    zerver_recipient: recipients,
    zerver_huddle: huddles,
    zerver_stream: streams,
    zerver_subscription: subscriptions,
    zerver_usergroup: groups,
    zerver_namedusergroup: namedGroups,
    zerver_usergroupmembership: groupMemberships.map((m, i) => ({ id: i + 1, ...m })),
    zerver_groupgroupmembership: groupGroupMemberships.map((m, i) => ({ id: i + 1, ...m })),
    zerver_reaction: reactions,
    zerver_submessage: submessages,
    zerver_draft: drafts,
    zerver_scheduledmessage: scheduledMessages,
    zerver_savedsnippet: dump.savedSnippets.filter((x) => privateOk(x.user_id)).map((x) => ({ id: x.id, realm: realmId, user_profile: x.user_id, title: x.title, content: x.content, date_created: x.date_created })),
    zerver_client: [...clients].map(([name, id]) => ({ id, name })),
    zerver_defaultstream: dump.defaultStreams.map((d, i) => ({ id: i + 1, realm: realmId, stream: d.stream_id })),
    zerver_realmdomain: dump.realmDomains.map((d) => ({ id: d.id, realm: realmId, domain: d.domain, allow_subdomains: bool(d.allow_subdomains) })),
    zerver_realmfilter: dump.linkifiers.map((l) => ({ id: l.id, realm: realmId, pattern: l.pattern, url_template: l.url_template, order: l.order })),
    zerver_realmplayground: dump.playgrounds.map((p) => ({ id: p.id, realm: realmId, name: p.name, pygments_language: p.pygments_language, url_template: p.url_template })),
    zerver_realmemoji: dump.realmEmoji.map((e) => ({ id: e.id, realm: realmId, name: e.name, file_name: e.file_name, author: e.author_id, deactivated: bool(e.deactivated), is_animated: /\.gif$/i.test(e.file_name) })),
    zerver_customprofilefield: dump.profileFields.map((f) => ({
      id: f.id, realm: realmId, name: f.name, hint: f.hint, field_type: f.type, field_data: f.field_data, order: f.order,
      display_in_profile_summary: bool(f.display_in_profile_summary), required: bool(f.required), editable_by_user: bool(f.editable_by_user), use_for_user_matching: bool(f.use_for_user_matching),
    })),
    zerver_customprofilefieldvalue: dump.profileValues.map((v, i) => ({ id: i + 1, user_profile: v.user_id, field: v.field_id, value: v.value, rendered_value: v.rendered_value })),
    zerver_channelfolder: dump.channelFolders.map((f) => ({
      id: f.id, realm: realmId, name: f.name, description: f.description, rendered_description: f.rendered_description, creator: f.creator_id,
      date_created: f.date_created, is_archived: bool(f.is_archived), order: f.folder_order,
    })),
    zerver_usertopic: dump.userTopics.filter((t) => privateOk(t.user_id)).map((t, i) => ({
      id: i + 1, user_profile: t.user_id, stream: t.stream_id, recipient: streamRecipient.get(t.stream_id), topic_name: t.topic, last_updated: t.last_updated, visibility_policy: t.visibility_policy,
    })),
    zerver_alertword: dump.alertWords.filter((a) => privateOk(a.user_id)).map((a, i) => ({ id: i + 1, realm: realmId, user_profile: a.user_id, word: a.word })),
    zerver_muteduser: dump.mutedUsers.filter((m) => privateOk(m.user_id)).map((m, i) => ({ id: i + 1, user_profile: m.user_id, muted_user: m.muted_user_id, date_muted: m.date_muted })),
    zerver_userstatus: dump.userStatus.map((s, i) => ({
      id: i + 1, user_profile: s.user_id, status_text: s.status_text, emoji_name: s.emoji_name, emoji_code: s.emoji_code, reaction_type: s.reaction_type, timestamp: s.timestamp,
    })),
    zerver_service: dump.botServices.map((s) => ({ id: s.id, user_profile: s.user_id, name: s.name, base_url: s.base_url, token: s.token, interface: s.interface })),
  };

  // Attachments linked to an exported message (or to none), with their files.
  const linked = new Map<number, number[]>();
  for (const am of dump.attachmentMessages) {
    let list = linked.get(am.attachment_id);
    if (!list) linked.set(am.attachment_id, (list = []));
    list.push(am.message_id);
  }
  const attachments: Rec[] = [];
  const uploads = { records: [] as Rec[], data: new Map<string, Buffer>() };
  const emails = new Map(dump.users.map((u) => [u.id, u.email]));
  for (const a of dump.attachments) {
    const all = linked.get(a.id) ?? [];
    const messageIds = all.filter((id) => exported.has(id));
    if (all.length > 0 && messageIds.length === 0) continue;
    if (all.length === 0 && !privateOk(a.owner_id) && type !== 'public') continue;
    attachments.push({
      id: a.id, owner: a.owner_id, realm: realmId, path_id: a.path_id, file_name: a.file_name, size: a.size, create_time: a.create_time,
      content_type: a.content_type, is_realm_public: true, is_web_public: false, messages: messageIds, scheduled_messages: [],
    });
    const file = await fetchStoredFile(db, storedPath.upload(a.path_id));
    if (!file) continue;
    uploads.data.set(a.path_id, file.data);
    uploads.records.push({
      path: a.path_id, s3_path: a.path_id, realm_id: realmId, user_profile_id: a.owner_id, user_profile_email: emails.get(a.owner_id),
      size: file.size, last_modified: a.create_time, content_type: a.content_type,
    });
  }

  const avatars = { records: [] as Rec[], data: new Map<string, Buffer>() };
  const byHash = new Map(dump.users.map((u) => [uploadedAvatarHash(u), u]));
  const realmIcons = { records: [] as Rec[], data: new Map<string, Buffer>() };
  for await (const f of streamStoredFiles(db, `avatars/${realmId}/`)) {
    const name = f.path.slice(`avatars/${realmId}/`.length);
    if (name.startsWith('realm/')) {
      const path = `${realmId}/realm/${name.slice('realm/'.length)}`;
      realmIcons.data.set(path, f.data);
      realmIcons.records.push({ path, s3_path: path, realm_id: realmId, content_type: f.content_type, size: f.size });
      continue;
    }
    const m = /^([0-9a-f]{40})(.*)$/.exec(name);
    const user = m ? byHash.get(m[1]!) : undefined;
    if (!user) continue;
    const path = `${realmId}/${name}`;
    avatars.data.set(path, f.data);
    avatars.records.push({ path, s3_path: path, realm_id: realmId, user_profile_id: user.id, user_profile_email: user.email, content_type: f.content_type, size: f.size, last_modified: f.date_created });
  }

  const emoji = { records: [] as Rec[], data: new Map<string, Buffer>() };
  for (const e of dump.realmEmoji) {
    const file = await fetchStoredFile(db, storedPath.emoji(realmId, e.file_name));
    if (!file) continue;
    const path = `${realmId}/emoji/images/${e.file_name}`;
    emoji.data.set(path, file.data);
    emoji.records.push({ path, s3_path: path, realm_id: realmId, file_name: e.file_name, name: e.name, user_profile_id: e.author_id, user_profile_email: e.author_id ? emails.get(e.author_id) : null });
  }

  return {
    realm,
    messages,
    userMessages,
    attachment: { zerver_attachment: attachments },
    files: { uploads, avatars, emoji, realm_icons: realmIcons },
  };
}
