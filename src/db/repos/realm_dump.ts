import type { Selectable } from 'kysely';
import type { Tx } from '../index.js';
import type { DB } from '../tables.js';

/**
 * Reads for the data export (actions/realm_export.ts): every row of one organization, as
 * stored. Rows are plain objects; numbers come back as numbers on both databases.
 */

type Row<T extends keyof DB> = Selectable<DB[T]>;

/** pg returns bigint columns as strings: every value that is a decimal integer string of a numeric column becomes a number. */
function numeric<T extends object>(rows: T[], columns: readonly string[]): T[] {
  for (const row of rows) {
    const r = row as Record<string, unknown>;
    for (const c of columns) if (typeof r[c] === 'string') r[c] = Number(r[c]);
  }
  return rows;
}

export interface RealmDump {
  realm: Row<'realms'>;
  users: Row<'users'>[];
  /** Notification Bot, Welcome Bot, Email Gateway: Zulip's cross-realm bots. */
  systemBots: Row<'users'>[];
  streams: Row<'streams'>[];
  subscriptions: Row<'subscriptions'>[];
  userGroups: Row<'user_groups'>[];
  groupMembers: Row<'group_members'>[];
  groupSubgroups: Row<'group_subgroups'>[];
  userTopics: Row<'user_topics'>[];
  realmEmoji: Row<'realm_emoji'>[];
  profileFields: Row<'custom_profile_fields'>[];
  profileValues: Row<'custom_profile_values'>[];
  defaultStreams: Row<'default_streams'>[];
  realmDomains: Row<'realm_domains'>[];
  linkifiers: Row<'linkifiers'>[];
  playgrounds: Row<'realm_playgrounds'>[];
  channelFolders: Row<'channel_folders'>[];
  alertWords: Row<'alert_words'>[];
  mutedUsers: Row<'muted_users'>[];
  userStatus: Row<'user_status'>[];
  attachments: Row<'attachments'>[];
  attachmentMessages: Row<'attachment_messages'>[];
  botServices: Row<'bot_services'>[];
  drafts: Row<'drafts'>[];
  /** Scheduled messages and reminders, delivered and failed ones included. */
  scheduledMessages: Row<'scheduled_messages'>[];
  savedSnippets: Row<'saved_snippets'>[];
}

export async function fetchRealmDump(db: Tx, realmId: number): Promise<RealmDump> {
  const realm = numeric([await db.selectFrom('realms').selectAll().where('id', '=', realmId).executeTakeFirstOrThrow()], ['id', 'date_created'])[0]!;
  const users = numeric(await db.selectFrom('users').selectAll().where('realm_id', '=', realmId).where('is_system_bot', '=', 0).orderBy('id').execute(), [
    'id', 'realm_id', 'date_joined', 'last_login', 'bot_owner_id', 'default_sending_stream_id', 'default_events_register_stream_id',
  ]);
  const userIds = users.map((u) => u.id);
  const ofUsers = <T extends 'subscriptions' | 'user_topics' | 'alert_words' | 'muted_users' | 'user_status' | 'custom_profile_values'>(table: T) =>
    userIds.length ? db.selectFrom(table as 'subscriptions').selectAll().where('user_id', 'in', userIds) : null;
  const streams = numeric(await db.selectFrom('streams').selectAll().where('realm_id', '=', realmId).orderBy('id').execute(), ['id', 'date_created', 'creator_id', 'first_message_id', 'folder_id']);
  const groups = numeric(await db.selectFrom('user_groups').selectAll().where('realm_id', '=', realmId).orderBy('id').execute(), ['id', 'date_created', 'creator_id']);
  const groupIds = groups.map((g) => g.id);
  const attachments = numeric(await db.selectFrom('attachments').selectAll().where('realm_id', '=', realmId).orderBy('id').execute(), ['id', 'owner_id', 'size', 'create_time']);
  const attachmentIds = attachments.map((a) => a.id);
  const systemBots = numeric(await db.selectFrom('users').selectAll().where('realm_id', '=', realmId).where('is_system_bot', '=', 1).orderBy('id').execute(), ['id', 'realm_id', 'date_joined']);
  return {
    realm,
    users,
    systemBots,
    streams,
    subscriptions: numeric((await ofUsers('subscriptions')?.orderBy('user_id').orderBy('stream_id').execute()) ?? [], ['user_id', 'stream_id']),
    userGroups: groups,
    groupMembers: numeric(groupIds.length ? await db.selectFrom('group_members').selectAll().where('group_id', 'in', groupIds).orderBy('group_id').orderBy('user_id').execute() : [], ['group_id', 'user_id']),
    groupSubgroups: numeric(groupIds.length ? await db.selectFrom('group_subgroups').selectAll().where('group_id', 'in', groupIds).orderBy('group_id').orderBy('subgroup_id').execute() : [], ['group_id', 'subgroup_id']),
    userTopics: numeric(userIds.length ? await db.selectFrom('user_topics').selectAll().where('user_id', 'in', userIds).orderBy('user_id').execute() : [], ['user_id', 'stream_id', 'last_updated']),
    realmEmoji: numeric(await db.selectFrom('realm_emoji').selectAll().where('realm_id', '=', realmId).orderBy('id').execute(), ['id', 'author_id']),
    profileFields: numeric(await db.selectFrom('custom_profile_fields').selectAll().where('realm_id', '=', realmId).orderBy('id').execute(), ['id']),
    profileValues: numeric(userIds.length ? await db.selectFrom('custom_profile_values').selectAll().where('user_id', 'in', userIds).execute() : [], ['user_id', 'field_id']),
    defaultStreams: numeric(await db.selectFrom('default_streams').selectAll().where('realm_id', '=', realmId).execute(), ['stream_id']),
    realmDomains: numeric(await db.selectFrom('realm_domains').selectAll().where('realm_id', '=', realmId).orderBy('id').execute(), ['id']),
    linkifiers: numeric(await db.selectFrom('linkifiers').selectAll().where('realm_id', '=', realmId).orderBy('id').execute(), ['id']),
    playgrounds: numeric(await db.selectFrom('realm_playgrounds').selectAll().where('realm_id', '=', realmId).orderBy('id').execute(), ['id']),
    channelFolders: numeric(await db.selectFrom('channel_folders').selectAll().where('realm_id', '=', realmId).orderBy('id').execute(), ['id', 'creator_id', 'date_created']),
    alertWords: numeric(userIds.length ? await db.selectFrom('alert_words').selectAll().where('user_id', 'in', userIds).execute() : [], ['user_id']),
    mutedUsers: numeric(userIds.length ? await db.selectFrom('muted_users').selectAll().where('user_id', 'in', userIds).execute() : [], ['user_id', 'muted_user_id', 'date_muted']),
    userStatus: numeric(userIds.length ? await db.selectFrom('user_status').selectAll().where('user_id', 'in', userIds).execute() : [], ['user_id', 'timestamp']),
    attachments,
    attachmentMessages: numeric(attachmentIds.length ? await db.selectFrom('attachment_messages').selectAll().where('attachment_id', 'in', attachmentIds).execute() : [], ['attachment_id', 'message_id']),
    botServices: numeric(await db.selectFrom('bot_services').selectAll().where('realm_id', '=', realmId).orderBy('id').execute(), ['id', 'user_id']),
    drafts: numeric(userIds.length ? await db.selectFrom('drafts').selectAll().where('user_id', 'in', userIds).orderBy('id').execute() : [], ['id', 'user_id', 'last_edit_time']),
    scheduledMessages: numeric(await db.selectFrom('scheduled_messages').selectAll().where('realm_id', '=', realmId).orderBy('id').execute(), [
      'id', 'realm_id', 'sender_id', 'stream_id', 'scheduled_timestamp', 'request_timestamp', 'delivered_message_id', 'reminder_target_message_id', 'claimed_until',
    ]),
    savedSnippets: numeric(await db.selectFrom('saved_snippets').selectAll().where('realm_id', '=', realmId).orderBy('id').execute(), ['id', 'realm_id', 'user_id', 'date_created']),
  };
}

/** The organization's messages with IDs above `afterId`, oldest first, at most `limit`. */
export async function fetchRealmMessageBatch(db: Tx, realmId: number, afterId: number, limit: number): Promise<Row<'messages'>[]> {
  const rows = await db.selectFrom('messages').selectAll().where('realm_id', '=', realmId).where('id', '>', afterId).orderBy('id').limit(limit).execute();
  return numeric(rows, ['id', 'sender_id', 'stream_id', 'date_sent', 'last_edit_time', 'last_moved_time']);
}

export async function fetchUserMessagesFor(db: Tx, messageIds: readonly number[]): Promise<Row<'user_messages'>[]> {
  if (messageIds.length === 0) return [];
  const rows = await db.selectFrom('user_messages').selectAll().where('message_id', 'in', [...messageIds]).orderBy('message_id').orderBy('user_id').execute();
  return numeric(rows, ['user_id', 'message_id', 'flags']);
}

export async function fetchReactionsFor(db: Tx, messageIds: readonly number[]): Promise<Row<'reactions'>[]> {
  if (messageIds.length === 0) return [];
  const rows = await db.selectFrom('reactions').selectAll().where('message_id', 'in', [...messageIds]).orderBy('id').execute();
  return numeric(rows, ['id', 'message_id', 'user_id']);
}

/** Submessages (poll and to-do list widgets and their events) of these messages, oldest first. */
export async function fetchSubmessagesFor(db: Tx, messageIds: readonly number[]): Promise<Row<'submessages'>[]> {
  if (messageIds.length === 0) return [];
  const rows = await db.selectFrom('submessages').selectAll().where('message_id', 'in', [...messageIds]).orderBy('id').execute();
  return numeric(rows, ['id', 'message_id', 'sender_id']);
}

/** The stored files under `prefix` ("uploads/<realm id>/", "emoji/<realm id>/", "avatars/<realm id>/": no LIKE wildcards), one at a time. */
export async function* streamStoredFiles(db: Tx, prefix: string): AsyncGenerator<{ path: string; content_type: string; size: number; data: Buffer; date_created: number }> {
  const paths = await db.selectFrom('stored_files').select('path').where('path', 'like', `${prefix}%`).orderBy('path').execute();
  for (const { path } of paths) {
    const row = await db.selectFrom('stored_files').select(['path', 'content_type', 'size', 'data', 'date_created']).where('path', '=', path).executeTakeFirst();
    if (row) yield { ...row, size: Number(row.size), date_created: Number(row.date_created) };
  }
}
