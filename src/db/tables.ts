import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

/**
 * Row types of every table. Conventions that hide SQLite/PostgreSQL differences:
 * booleans are integers 0/1 (`Flag`), times are Unix seconds in bigint columns
 * (parsed to numbers), structured values are JSON text (`JsonText`).
 */
export type Flag = number;
export type JsonText = string;

export interface RealmTable {
  id: Generated<number>;
  string_id: string;
  name: string;
  description: Generated<string>;
  date_created: number;
  deactivated: Generated<Flag>;
  /** JSON object of realm settings that differ from the defaults in lib/realm_settings.ts. */
  settings: Generated<JsonText>;
  icon_source: Generated<string>;
  icon_version: Generated<number>;
  logo_source: Generated<string>;
  logo_version: Generated<number>;
  night_logo_source: Generated<string>;
  night_logo_version: Generated<number>;
}

export interface UserTable {
  id: Generated<number>;
  realm_id: number;
  email: string;
  email_lc: string;
  delivery_email: string;
  full_name: string;
  password_hash: string | null;
  api_key: string;
  role: Generated<number>;
  is_active: Generated<Flag>;
  is_bot: Generated<Flag>;
  bot_type: number | null;
  bot_owner_id: number | null;
  is_imported_stub: Generated<Flag>;
  is_deleted: Generated<Flag>;
  timezone: Generated<string>;
  avatar_source: Generated<string>;
  avatar_version: Generated<number>;
  date_joined: number;
  last_login: number | null;
  can_change_user_emails: Generated<Flag>;
  can_create_users: Generated<Flag>;
  can_forge_sender: Generated<Flag>;
  /** JSON object of personal settings that differ from the defaults in lib/user_settings.ts. */
  settings: Generated<JsonText>;
  tos_version: string | null;
  /** Notification Bot, Welcome Bot and Email Gateway: listed as cross_realm_bots, never as members. */
  is_system_bot: Generated<Flag>;
  default_sending_stream_id: number | null;
  default_events_register_stream_id: number | null;
  default_all_public_streams: Generated<Flag>;
}

export interface StreamTable {
  id: Generated<number>;
  realm_id: number;
  name: string;
  name_lc: string;
  description: Generated<string>;
  rendered_description: Generated<string>;
  invite_only: Generated<Flag>;
  is_web_public: Generated<Flag>;
  history_public_to_subscribers: Generated<Flag>;
  date_created: number;
  creator_id: number | null;
  first_message_id: number | null;
  deactivated: Generated<Flag>;
  message_retention_days: number | null;
  topics_policy: Generated<string>;
  folder_id: number | null;
  /** JSON object: can_*_group name -> group-setting value. */
  permissions: Generated<JsonText>;
}

export interface SubscriptionTable {
  user_id: number;
  stream_id: number;
  realm_id: number;
  active: Generated<Flag>;
  is_muted: Generated<Flag>;
  pin_to_top: Generated<Flag>;
  color: Generated<string>;
  desktop_notifications: Flag | null;
  audible_notifications: Flag | null;
  push_notifications: Flag | null;
  email_notifications: Flag | null;
  wildcard_mentions_notify: Flag | null;
}

export interface MessageTable {
  id: Generated<number>;
  realm_id: number;
  sender_id: number;
  /** 'stream' or 'private', as in Zulip's message dicts. */
  type: string;
  stream_id: number | null;
  topic: Generated<string>;
  topic_lc: Generated<string>;
  /** Direct messages: sorted, comma-joined user IDs of every participant, sender included. */
  dm_key: string | null;
  content: string;
  rendered_content: string;
  rendered_content_version: Generated<number>;
  date_sent: number;
  sending_client: Generated<string>;
  last_edit_time: number | null;
  last_moved_time: number | null;
  edit_history: JsonText | null;
  has_link: Generated<Flag>;
  has_image: Generated<Flag>;
  has_attachment: Generated<Flag>;
}

export interface UserMessageTable {
  user_id: number;
  message_id: number;
  flags: Generated<number>;
}

/** Receipts staged by a send, not yet in user_messages (db/receipts.ts). */
export interface UserMessagePendingTable {
  message_id: number;
  recipients: Buffer;
}

export interface ReactionTable {
  id: Generated<number>;
  message_id: number;
  user_id: number;
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
}

export interface UserGroupTable {
  id: Generated<number>;
  realm_id: number;
  name: string;
  name_lc: string;
  description: Generated<string>;
  is_system_group: Generated<Flag>;
  deactivated: Generated<Flag>;
  date_created: number | null;
  creator_id: number | null;
  /** JSON object: can_*_group name -> group-setting value. */
  permissions: Generated<JsonText>;
}

export interface GroupMemberTable {
  group_id: number;
  user_id: number;
}

export interface GroupSubgroupTable {
  group_id: number;
  subgroup_id: number;
}

export interface UserTopicTable {
  user_id: number;
  stream_id: number;
  topic: string;
  topic_lc: string;
  visibility_policy: number;
  last_updated: number;
}

export interface DraftTable {
  id: Generated<number>;
  user_id: number;
  type: string;
  to: Generated<JsonText>;
  topic: Generated<string>;
  content: string;
  last_edit_time: number;
}

export interface NavigationViewTable {
  user_id: number;
  fragment: string;
  is_pinned: Flag;
  name: string | null;
}

export interface SavedSnippetTable {
  id: Generated<number>;
  realm_id: number;
  user_id: number;
  title: string;
  content: string;
  date_created: number;
}

export interface RealmPlaygroundTable {
  id: Generated<number>;
  realm_id: number;
  name: string;
  pygments_language: string;
  url_template: string;
}

export interface RealmDomainTable {
  id: Generated<number>;
  realm_id: number;
  domain: string;
  allow_subdomains: Generated<Flag>;
}

export interface CustomProfileFieldTable {
  id: Generated<number>;
  realm_id: number;
  name: string;
  hint: Generated<string>;
  type: number;
  field_data: Generated<string>;
  order: Generated<number>;
  display_in_profile_summary: Generated<Flag>;
  required: Generated<Flag>;
  editable_by_user: Generated<Flag>;
  use_for_user_matching: Generated<Flag>;
}

export interface CustomProfileValueTable {
  user_id: number;
  field_id: number;
  value: string;
  rendered_value: string | null;
}

export interface InviteTable {
  id: Generated<number>;
  realm_id: number;
  email: Generated<string>;
  referred_by: number;
  invited_as: Generated<number>;
  date_created: number;
  expiry: number | null;
  stream_ids: Generated<JsonText>;
  group_ids: Generated<JsonText>;
  include_realm_default_subscriptions: Generated<Flag>;
  notify_referrer_on_join: Generated<Flag>;
  welcome_message_custom_text: string | null;
  /** 0 pending, 1 used, 2 revoked. */
  status: Generated<number>;
  key: string;
  multiuse: Generated<Flag>;
}

export interface PushDeviceTable {
  id: Generated<number>;
  user_id: number;
  kind: string;
  token: string;
  app_id: string | null;
  date_created: number;
}

export interface ClientDeviceTable {
  id: Generated<number>;
  user_id: number;
  push_key_id: number | null;
  push_token_id: string | null;
  pending_push_token_id: string | null;
  push_token_last_updated_timestamp: number | null;
  push_registration_error_code: string | null;
  push_key: string | null;
  push_token_kind: string | null;
  date_created: number;
}

export interface DigestEmailSentTable {
  user_id: number;
  sent_at: number;
}

export interface ExternalTokenTable {
  user_id: number;
  provider: string;
  token: JsonText;
  date_created: number;
}

export interface DefaultStreamTable {
  realm_id: number;
  stream_id: number;
}

export interface LinkifierTable {
  id: Generated<number>;
  realm_id: number;
  pattern: string;
  url_template: string;
  order: Generated<number>;
}

export interface RealmEmojiTable {
  id: Generated<number>;
  realm_id: number;
  name: string;
  file_name: string;
  author_id: number | null;
  deactivated: Generated<Flag>;
}

export interface PresenceTable {
  user_id: number;
  realm_id: number;
  last_active_time: number | null;
  last_connected_time: number | null;
  last_update_id: Generated<number>;
}

export interface PresenceSequenceTable {
  realm_id: number;
  last_update_id: Generated<number>;
}

export interface AlertWordTable {
  user_id: number;
  word: string;
}

export interface MutedUserTable {
  user_id: number;
  muted_user_id: number;
  date_muted: number;
}

export interface AuditLogTable {
  id: Generated<number>;
  realm_id: number;
  acting_user_id: number | null;
  modified_user_id: number | null;
  modified_stream_id: number | null;
  modified_group_id: number | null;
  event_type: string;
  event_time: number;
  extra_data: Generated<JsonText>;
}

export interface SessionTable {
  id: string;
  user_id: number;
  expires: number;
}

export interface AuthLoginStateTable {
  id: string;
  kind: string;
  realm_id: number;
  user_id: number | null;
  data: string;
  expires: number;
}

export interface UserTotpDeviceTable {
  user_id: number;
  secret: string;
  confirmed: number;
  last_time_step: number;
  created: number;
}

export interface UserRecoveryCodeTable {
  id: Generated<number>;
  user_id: number;
  code_hash: string;
}

export interface UserStatusTable {
  user_id: number;
  status_text: Generated<string>;
  emoji_name: Generated<string>;
  emoji_code: Generated<string>;
  reaction_type: Generated<string>;
  timestamp: number;
}

export interface ServerSecretTable {
  name: string;
  value: string;
}

export interface StoredFileTable {
  /** "<area>/<realm_id>/...": e.g. the attachment's path_id under "uploads/". */
  path: string;
  realm_id: number;
  content_type: string;
  size: number;
  data: Buffer;
  date_created: number;
}

export interface AttachmentTable {
  id: Generated<number>;
  realm_id: number;
  owner_id: number;
  /** "<realm_id>/<2 hex>/<random>/<file name>", the part of the URL after /user_uploads/. */
  path_id: string;
  file_name: string;
  size: number;
  content_type: string;
  create_time: number;
}

/** Zulip's ImageAttachment (migration 0180): an uploaded image and the thumbnails made of it. */
export interface ImageAttachmentTable {
  id: Generated<number>;
  realm_id: number;
  path_id: string;
  original_width_px: number;
  original_height_px: number;
  frames: number;
  content_type: string | null;
  /** JSON list of lib/thumbnail.ts StoredThumbnailFormat. */
  thumbnail_metadata: string;
  /** 1 until the thumbnail worker has made every format. */
  pending: number;
  /** Unix seconds until which a process works on the row. */
  claimed_until: number | null;
}

/** Zulip's UserProfile.last_reminder for bots (migration 0181): the last notice to the bot's owner. */
export interface BotOwnerReminderTable {
  bot_id: number;
  last_reminder: number;
}

export interface AttachmentMessageTable {
  attachment_id: number;
  message_id: number;
}

/** An outgoing-webhook bot's endpoint (Zulip's Service). interface: 1 Zulip format, 2 Slack-compatible. */
export interface BotServiceTable {
  id: Generated<number>;
  realm_id: number;
  user_id: number;
  name: string;
  base_url: string;
  token: string;
  interface: number;
}

export interface BotStorageTable {
  bot_id: number;
  key: string;
  value: string;
}

export interface SubmessageTable {
  id: Generated<number>;
  message_id: number;
  sender_id: number;
  msg_type: string;
  content: string;
}

/** One sent message whose notifications are still to be worked out (migration 0200). */
export interface NotificationJobTable {
  message_id: number;
  due_at: number;
  /** Until when a process holds the row (Unix seconds). */
  claimed_until: number | null;
}

/** A push or missed-message email owed to one user for one message (migration 0200). */
export interface NotificationOutboxTable {
  id: Generated<number>;
  user_id: number;
  message_id: number;
  /** 'push' or 'email'. */
  kind: string;
  /** lib/notification_data.ts NotificationTrigger. */
  trigger: string;
  due_at: number;
  claimed_until: number | null;
}

/** Zulip's ScheduledMessage: a message sent later (delivery_type 1) or a reminder (2). */
export interface ScheduledMessageTable {
  id: Generated<number>;
  realm_id: number;
  sender_id: number;
  delivery_type: number;
  /** 'stream' or 'private'. */
  type: string;
  stream_id: number | null;
  topic: Generated<string>;
  /** Direct messages: JSON array, the `to` of the API object (the other participants, or the sender alone). */
  to_user_ids: Generated<JsonText>;
  content: string;
  rendered_content: string;
  scheduled_timestamp: number;
  /** When it was asked for (Unix seconds); null for rows older than migration 0230. */
  request_timestamp: number | null;
  read_by_sender: Generated<Flag>;
  sending_client: Generated<string>;
  delivered: Generated<Flag>;
  failed: Generated<Flag>;
  failure_message: string | null;
  delivered_message_id: number | null;
  reminder_target_message_id: number | null;
  reminder_note: string | null;
  /** Until when a process holds the row for a delivery attempt (Unix seconds). */
  claimed_until: number | null;
}

export interface ChannelFolderTable {
  id: Generated<number>;
  realm_id: number;
  name: string;
  name_lc: string;
  description: Generated<string>;
  rendered_description: Generated<string>;
  creator_id: number | null;
  date_created: number;
  is_archived: Generated<Flag>;
  /** Zulip's `order` (a reserved word in SQL). */
  folder_order: Generated<number>;
}

/** Zulip's ChannelEmailAddress: mail to `<slug>.<email_token>@<gateway domain>` posts to the channel as `sender_id`. */
export interface ChannelEmailAddressTable {
  id: Generated<number>;
  realm_id: number;
  channel_id: number;
  creator_id: number | null;
  sender_id: number;
  email_token: string;
  date_created: number;
  deactivated: Generated<Flag>;
}

/** Zulip's MissedMessageEmailAddress: `mm<32 hex>@<gateway domain>` replies to message_id's conversation as user_id. */
export interface MissedMessageEmailAddressTable {
  id: Generated<number>;
  realm_id: number;
  message_id: number;
  user_id: number;
  email_token: string;
  timestamp: number;
  times_used: Generated<number>;
}

/** A batch of messages moved to the archive (Zulip's ArchiveTransaction). */
export interface ArchiveTransactionTable {
  id: Generated<number>;
  realm_id: number | null;
  /** ARCHIVE_RETENTION_POLICY_BASED (1) or ARCHIVE_MANUAL (2), Zulip's values. */
  type: number;
  timestamp: number;
  restored: Generated<Flag>;
  restored_timestamp: number | null;
}

export type ArchivedMessageTable = Omit<MessageTable, 'id' | 'topic' | 'topic_lc' | 'rendered_content_version' | 'sending_client' | 'has_link' | 'has_image' | 'has_attachment'> & {
  id: number;
  topic: string;
  topic_lc: string;
  rendered_content_version: number;
  sending_client: string;
  has_link: Flag;
  has_image: Flag;
  has_attachment: Flag;
  archive_transaction_id: number;
};

export interface ArchivedUserMessageTable {
  user_id: number;
  message_id: number;
  flags: number;
}

export interface ArchivedReactionTable {
  id: number;
  message_id: number;
  user_id: number;
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
}

export interface ArchivedSubmessageTable {
  id: number;
  message_id: number;
  sender_id: number;
  msg_type: string;
  content: string;
}

export type ArchivedAttachmentTable = Omit<AttachmentTable, 'id'> & { id: number };

/** A pending outgoing-webhook delivery (migration 0191). */
export interface OutgoingWebhookJobTable {
  id: Generated<number>;
  realm_id: number;
  message_id: number;
  bot_id: number;
  trigger: string;
  message_url: string;
  failed_tries: Generated<number>;
  claimed_until: number | null;
}

export interface WorkerLeaseTable {
  name: string;
  /** When the last run finished (Unix seconds). */
  last_run_at: number;
  /** While a process runs the job: until when it holds it (Unix seconds). */
  leased_until: number;
}

/** Zulip's RealmExport (migration 0170); times are Unix seconds with fractions, as Zulip reports them. */
export interface RealmExportTable {
  id: Generated<number>;
  realm_id: number;
  acting_user_id: number | null;
  /** 'public', 'full_with_consent' or 'full_without_consent'. */
  export_type: string;
  date_requested: number;
  date_started: number | null;
  date_succeeded: number | null;
  date_failed: number | null;
  date_deleted: number | null;
  /** The tarball's key in stored_files, once written. */
  export_path: string | null;
  failure_message: string | null;
  /** Until when a process holds the row while writing it (Unix seconds). */
  claimed_until: number | null;
}

export interface DB {
  realms: RealmTable;
  users: UserTable;
  streams: StreamTable;
  subscriptions: SubscriptionTable;
  messages: MessageTable;
  user_messages: UserMessageTable;
  user_messages_pending: UserMessagePendingTable;
  reactions: ReactionTable;
  user_groups: UserGroupTable;
  group_members: GroupMemberTable;
  group_subgroups: GroupSubgroupTable;
  user_topics: UserTopicTable;
  drafts: DraftTable;
  navigation_views: NavigationViewTable;
  saved_snippets: SavedSnippetTable;
  realm_playgrounds: RealmPlaygroundTable;
  realm_domains: RealmDomainTable;
  custom_profile_fields: CustomProfileFieldTable;
  custom_profile_values: CustomProfileValueTable;
  invites: InviteTable;
  push_devices: PushDeviceTable;
  client_devices: ClientDeviceTable;
  digest_emails_sent: DigestEmailSentTable;
  external_tokens: ExternalTokenTable;
  default_streams: DefaultStreamTable;
  linkifiers: LinkifierTable;
  realm_emoji: RealmEmojiTable;
  presence: PresenceTable;
  presence_sequences: PresenceSequenceTable;
  alert_words: AlertWordTable;
  muted_users: MutedUserTable;
  audit_log: AuditLogTable;
  sessions: SessionTable;
  auth_login_states: AuthLoginStateTable;
  user_totp_devices: UserTotpDeviceTable;
  user_recovery_codes: UserRecoveryCodeTable;
  user_status: UserStatusTable;
  server_secrets: ServerSecretTable;
  stored_files: StoredFileTable;
  attachments: AttachmentTable;
  attachment_messages: AttachmentMessageTable;
  image_attachments: ImageAttachmentTable;
  bot_owner_reminders: BotOwnerReminderTable;
  bot_storage: BotStorageTable;
  bot_services: BotServiceTable;
  submessages: SubmessageTable;
  scheduled_messages: ScheduledMessageTable;
  notification_jobs: NotificationJobTable;
  notification_outbox: NotificationOutboxTable;
  channel_folders: ChannelFolderTable;
  channel_email_addresses: ChannelEmailAddressTable;
  missed_message_email_addresses: MissedMessageEmailAddressTable;
  archive_transactions: ArchiveTransactionTable;
  archived_messages: ArchivedMessageTable;
  archived_user_messages: ArchivedUserMessageTable;
  archived_reactions: ArchivedReactionTable;
  archived_submessages: ArchivedSubmessageTable;
  archived_attachments: ArchivedAttachmentTable;
  archived_attachment_messages: AttachmentMessageTable;
  worker_leases: WorkerLeaseTable;
  outgoing_webhook_jobs: OutgoingWebhookJobTable;
  realm_exports: RealmExportTable;
}

export type Realm = Selectable<RealmTable>;
export type User = Selectable<UserTable>;
export type NewUser = Insertable<UserTable>;
export type UserUpdate = Updateable<UserTable>;
export type Stream = Selectable<StreamTable>;
export type Subscription = Selectable<SubscriptionTable>;
export type Message = Selectable<MessageTable>;
export type UserGroup = Selectable<UserGroupTable>;
export type CustomProfileField = Selectable<CustomProfileFieldTable>;
