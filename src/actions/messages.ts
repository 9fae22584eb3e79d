import { createHash } from 'node:crypto';
import { now, transaction, type Database, type Tx } from '../db/index.js';
import type { Message, Realm, Stream, User } from '../db/tables.js';
import {
  deleteMessagesByIds,
  deleteUserMessagesFor,
  fetchRecipientRows,
  fetchTopicMessagesForMove,
  setUserMessageFlagsRow,
  updateMessageRow,
  type MessageChanges,
  dmConversationExists,
  fetchFirstMessageId,
  fetchMessagesByIds,
  fetchStreamAccessRows,
  fetchTopicHistoryRows,
  fetchTopicMessagesNewestFirst,
  fetchUserIdsWithRows,
  fetchUserIdsWithTopicPolicy,
  fetchUsersWithMessagesInTopic,
  updateStreamFirstMessageId,
  fetchMutedStreamIds,
  fetchSubscribedStreamIds,
  fetchActiveUsersByIds,
  fetchChannelRecipients,
  fetchGroupsByNames,
  fetchMutingUserIds,
  fetchStreamsByNamesForMentions,
  fetchTopicParticipants,
  fetchUserSettingsRows,
  fetchUsersByEmails,
  fetchUsersByFullNames,
  insertMessages,
  type ChannelRecipientRow,
  setStreamFirstMessageIdIfNull,
  topicHasMessages,
  topicHasMessagesReceivedBy,
} from '../db/repos/messages.js';
import { fetchActiveUserRoles, fetchUserById, fetchUsersByIds } from '../db/repos/users.js';
import { fetchSystemGroups } from '../db/repos/user_groups.js';
import {
  bulkInsertUserMessages,
  fetchUnreadIdsInStream,
  fetchReaderIds,
  fetchUnreadMessages,
  fetchUserMessageFlags,
  insertHistoricalUserMessages,
  markUnreadBatchRead,
  updateUserMessageFlag,
  type UserMessageRow,
} from '../db/repos/user_messages.js';
import { fetchUserTopicsForTopic } from '../db/repos/user_topics.js';
import { insertSubmessage } from '../db/repos/submessages.js';
import { getWidgetData } from '../lib/widgets.js';
import { pythonJsonDumps } from '../integrations/python_json.js';
import type { MessageReceipts } from '../db/receipts.js';
import { JsonableError, badRequest } from '../errors.js';
import type { EventRecipient, MessageEventExtra, ZulipEvent } from '../events/bus.js';
import { fetchImageAttachmentsByPathIds } from '../db/repos/image_attachments.js';
import { rewriteThumbnailedImage, uploadPreview } from '../lib/thumbnail.js';
import { accessMessage, accessMessages } from '../lib/access/messages.js';
import {
  ChannelCaller,
  accessStreamForSend,
  canAccessStreamHistory,
  canAdministerChannel,
  hasChannelPermission,
  accessStreamById,
  checkCanSendMessageGroup,
  metadataAccessUserIds,
} from '../lib/access/streams.js';
import { canAccessDeliveryEmail, loadUserAccess } from '../lib/access/users.js';
import { AVATAR_FROM_GRAVATAR } from '../lib/avatar.js';
import { dmKeyFor, dmParticipantIds, formatMessage, isMeMessage, type EditHistoryEntry, type MessageDict, type MessageRelations } from '../lib/format/messages.js';
import type { MessageUserRow, SubmessageRow } from '../db/repos/messages.js';
import { groupPermissions } from '../lib/format/user_groups.js';
import {
  USER_GROUP_PERMISSION_CONFIG,
  loadGroupMembership,
  loadUserGroupMembership,
  userHasGroupPermission,
  type GroupMembership,
  type GroupPermissionConfig,
  type GroupSettingValue,
} from '../lib/group_settings.js';
import { fetchAllActivePushMessageIds, insertNotificationJobs, insertNotificationOutboxRows } from '../db/repos/notifications.js';
import { insertOutgoingWebhookJobs } from '../db/repos/outgoing_webhooks.js';
import { settlePendingPreviews } from './thumbnails.js';
import { API_FLAGS, FLAG_BITS, NON_EDITABLE_FLAGS, isFlagName, sharedFlagsList, type FlagName } from '../lib/message_flags.js';
import { REALM_GROUP_SETTING_CONFIG, realmSettings } from '../lib/realm_settings.js';
import {
  codePointLength,
  displayTopic,
  firstUnprintablePosition,
  normalizeSendTopic,
  topicKey,
  truncateCodePoints,
  VISIBILITY_FOLLOWED,
  VISIBILITY_INHERIT,
  VISIBILITY_MUTED,
  VISIBILITY_UNMUTED,
} from '../lib/topics.js';
import {
  AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_NEVER,
  AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_INITIATION,
  AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_PARTICIPATION,
  AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_SEND,
  userSettings,
} from '../lib/user_settings.js';
import { realmUrl } from '../lib/urls.js';
import { mentionCandidates, renderMarkdown, topicLinks, type Linkifier, type MarkdownContext } from '../lib/markdown/index.js';
import {
  RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS,
  isResolveNotificationContent,
  newThreadNotificationContent,
  oldThreadNotificationContent,
  resolveNotificationContent,
  resolveToggle,
  type MoveSummary,
} from '../lib/move_notifications.js';
import { fetchSystemBot } from '../lib/system_bots.js';
import { BOT_OUTGOING_WEBHOOK, isAdmin, isGuest, isModerator } from '../lib/roles.js';
import { fetchStreamById } from '../db/repos/streams.js';
import { fetchLinkifiers } from '../db/repos/settings.js';
import {
  fetchActiveRealmEmojiCached,
  fetchChannelRecipientsCached,
  fetchLinkifiersCached,
  fetchMutingUserIdsCached,
  fetchRealmAlertWordsCached,
  fetchUserTopicCached,
  topicHasMessagesCached,
  fetchStreamWithSubscriptionCached,
} from '../db/cached.js';
import { fetchOutgoingWebhookBotIdsCached } from '../db/repos/bots.js';
import { realmEmojiSourceUrl } from '../lib/format/realm_emoji.js';
import { MAX_MESSAGE_LENGTH, MAX_STREAM_NAME_LENGTH } from '../version.js';
import type { ActionServices } from '../services.js';
import { setUserTopicPolicies } from './user_topics.js';
import { claimableMessageAttachments, setMessageAttachments } from './uploads.js';
import type { AttachmentRow } from '../db/repos/attachments.js';
import { runtimeCounters } from '../lib/runtime_counters.js';

/** Zulip's Realm.WILDCARD_MENTION_THRESHOLD: wildcard mentions reaching more people need can_mention_many_users_group. */
export const WILDCARD_MENTION_THRESHOLD = 15;

// ---------------------------------------------------------------------------------------------
// Parsing the `to` and `content` parameters the way Zulip does (zerver/actions/message_send.py).

/**
 * A channel given as its name or ID. Clients send a raw name, a JSON string, a JSON integer,
 * or a JSON list holding exactly one of those (zulip-mobile sends `["name"]`).
 */
export function parseStreamIndicator(raw: string): string | number {
  // A plain channel name is no JSON: skip the (costly) failing parse.
  if (!mayBeJson(raw)) return raw;
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    return raw;
  }
  if (Array.isArray(data)) {
    if (data.length !== 1) throw badRequest('Expected exactly one channel');
    data = data[0];
  }
  if (typeof data === 'string') return data;
  if (typeof data === 'number' && Number.isSafeInteger(data)) return data;
  throw badRequest('Invalid data type for channel');
}

/** False only for text JSON.parse is certain to reject: its first non-blank character starts no JSON value. */
function mayBeJson(raw: string): boolean {
  const t = raw.replace(/^[ \t\n\r]+/, '');
  const c = t.charAt(0);
  if (c === '[' || c === '{' || c === '"' || c === '-' || (c >= '0' && c <= '9')) return true;
  return t.startsWith('true') || t.startsWith('false') || t.startsWith('null');
}

/**
 * Direct-message recipients: a JSON list of user IDs or of emails, or comma-separated
 * emails (zulip-mobile). Emails are trimmed and de-duplicated, empty ones dropped.
 */
export function parsePrivateRecipients(raw: string): { ids: number[] } | { emails: string[] } {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    data = raw;
  }
  if (typeof data === 'string') data = data.split(',');
  if (!Array.isArray(data)) throw badRequest('Invalid data type for recipients');
  if (data.length === 0) return { ids: [] };
  const mixed = (): JsonableError => badRequest('Recipient lists may contain emails or user IDs, but not both.');
  if (typeof data[0] === 'string') {
    if (!data.every((e): e is string => typeof e === 'string')) throw mixed();
    return { emails: [...new Set(data.map((e) => e.trim()))].filter(Boolean) };
  }
  if (typeof data[0] !== 'number' || !Number.isSafeInteger(data[0])) throw badRequest('Invalid data type for recipients');
  if (!data.every((e): e is number => typeof e === 'number' && Number.isSafeInteger(e))) throw mixed();
  return { ids: [...new Set(data)] };
}

/**
 * Zulip's normalize_body: trailing whitespace and leading blank lines dropped (leading spaces
 * stay: they can start a code block), never empty, no NUL, truncated past the limit.
 */
export function normalizeMessageContent(content: string): string {
  const body = content.trimEnd().replace(/^\n+/, '');
  if (body.length === 0) throw badRequest('Message must not be empty');
  if (body.includes('\u0000')) throw badRequest('Message must not contain null bytes');
  return truncateCodePoints(body, MAX_MESSAGE_LENGTH, '\n[message truncated]');
}

/** Zulip's check_stream_name, applied to the name a message is addressed to before looking it up. */
function checkChannelName(name: string): void {
  if (name === '') throw badRequest("Channel name can't be empty.");
  if (codePointLength(name) > MAX_STREAM_NAME_LENGTH) throw badRequest(`Channel name too long (limit: ${MAX_STREAM_NAME_LENGTH} characters).`);
  const pos = firstUnprintablePosition(name);
  if (pos !== null) throw badRequest(`Invalid character in channel name, at position ${pos}.`);
}

/**
 * Zulip's Client.default_read_by_sender: messages sent from a full Zulip UI start read for
 * their sender; messages sent through the API (integrations using a user's key) do not.
 */
export function defaultReadBySender(client: string): boolean {
  const name = client.toLowerCase();
  return (
    ['zulipandroid', 'zulipios', 'zulipdesktop', 'zulipmobile', 'zulipelectron', 'zulipterminal', 'snipe', 'website', 'ios', 'android'].includes(name) ||
    name.includes('desktop app')
  );
}

// ---------------------------------------------------------------------------------------------
// Rendering.

export interface RenderResult {
  html: string;
  /** Users notified by name (not silently); members of mentioned groups are added by the caller. */
  mentionedUserIds: Set<number>;
  mentionedGroupIds: Set<number>;
  streamWildcard: boolean;
  topicWildcard: boolean;
  hasLink: boolean;
  hasImage: boolean;
  hasAttachment: boolean;
  /** Linked uploads (after /user_uploads/), claimed when the message is written. */
  attachmentPathIds: string[];
  /** Users one of whose alert words occurs in the message. */
  alertWordUserIds: Set<number>;
  linkifiers: readonly Linkifier[];
}

/** Zulip's get_user_upload_previews: the uploads a message may show as images. */
const UPLOAD_PATH_RE = /\/user_uploads\/(\d+\/[/\p{L}\p{N}_.-]+)/gu;

/**
 * Renders a message with the Markdown module, loading only what its content can refer to:
 * the users, groups and channels it names (users the sender may not see and channels the
 * sender cannot see are left out, so they render as plain text), linkifiers and alert words.
 */
export async function renderContent(services: ActionServices, realm: Realm, sender: User, content: string): Promise<RenderResult> {
  const db = services.db.kysely;
  const settings = realmSettings(realm);
  const c = mentionCandidates(content);
  const uploadPathIds = [...content.matchAll(UPLOAD_PATH_RE)].map((m) => m[1]!);
  const [byName, byId, groups, channels, linkifiers, alertWords, access, realmEmoji, images] = await Promise.all([
    fetchUsersByFullNames(db, realm.id, c.userNames),
    fetchActiveUsersByIds(db, realm.id, c.userIds),
    fetchGroupsByNames(db, realm.id, c.groupNames),
    fetchStreamsByNamesForMentions(db, realm.id, c.channelNames, sender.id),
    fetchLinkifiersCached(db, realm.id),
    fetchRealmAlertWordsCached(db, realm.id),
    loadUserAccess(db, realm, sender),
    // Custom emoji syntax needs a colon.
    content.includes(':') ? fetchActiveRealmEmojiCached(db, realm.id) : Promise.resolve([]),
    fetchImageAttachmentsByPathIds(db, realm.id, uploadPathIds),
  ]);
  const users = new Map([...byName, ...byId].filter((u) => access.canAccess(u)).map((u) => [u.id, { id: u.id, fullName: u.full_name, isActive: true }]));
  const caller = new ChannelCaller(db, realm, sender);
  const visibleChannels: { id: number; name: string }[] = [];
  for (const ch of channels) if (await caller.metadataAccess(ch, ch.subscriber_id === sender.id)) visibleChannels.push({ id: ch.id, name: ch.name });
  const ctx: MarkdownContext = {
    realmUrl: realmUrl(services.config, realm),
    users: [...users.values()],
    // System groups are not mentionable.
    groups: groups.filter((g) => !g.is_system_group).map((g) => ({ id: g.id, name: g.name, deactivated: false })),
    channels: visibleChannels,
    linkifiers: linkifiers.map((l) => ({ pattern: l.pattern, url_template: l.url_template })),
    realmEmoji: realmEmoji.map((e) => ({ id: String(e.id), name: e.name, sourceUrl: realmEmojiSourceUrl(e), deactivated: false })),
    translateEmoticons: userSettings(sender).translate_emoticons,
    defaultCodeBlockLanguage: settings.default_code_block_language || null,
    inlineImagePreview: settings.inline_image_preview,
    alertWords,
    uploadPreviews: new Map(images.map((i) => [i.path_id, uploadPreview(i)])),
  };
  const r = renderMarkdown(content, ctx);
  // Zulip's rewrite_thumbnailed_images after rendering: spinners of images already thumbnailed.
  let html = r.html;
  for (const [pathId, preview] of ctx.uploadPreviews!) {
    if (preview.url !== null) html = rewriteThumbnailedImage(html, pathId, { ...preview, url: preview.url }) ?? html;
  }
  return {
    html,
    mentionedUserIds: new Set(r.mentionedUserIds),
    mentionedGroupIds: new Set(r.mentionedGroupIds),
    streamWildcard: r.wildcards.stream,
    topicWildcard: r.wildcards.topic,
    hasLink: r.hasLink,
    hasImage: r.hasImage,
    hasAttachment: r.hasAttachment,
    attachmentPathIds: r.attachmentPathIds,
    alertWordUserIds: new Set(r.alertWordUserIds),
    linkifiers: ctx.linkifiers ?? [],
  };
}

// ---------------------------------------------------------------------------------------------
// Sending.

export interface SendMessageInput {
  /** 'stream' (also for `channel`) or 'private' (also for `direct`). */
  type: 'stream' | 'private';
  /** The raw `to` parameter, or undefined when absent. */
  to: string | undefined;
  topic: string | undefined;
  content: string;
  client: string;
  queueId?: string;
  localId?: string;
  readBySender?: boolean;
  /**
   * Check channel access as this user instead of the sender: the Email Gateway bot posts where
   * the creator of the channel address may (Zulip's cross-realm bots skip the access check; the
   * gateway checks the address's creator instead).
   */
  accessAs?: User;
}

interface ChannelTarget {
  kind: 'stream';
  stream: Stream;
  topic: string;
  /** The sender's subscription is muted (null: not subscribed). */
  senderMutedStream: boolean | null;
}

interface DirectTarget {
  kind: 'private';
  participants: User[];
  dmKey: string;
}

/** Everything checkSendMessage established; doSendMessage only writes it and notifies. */
export interface PreparedMessage {
  realm: Realm;
  sender: User;
  client: string;
  content: string;
  rendered: RenderResult;
  target: ChannelTarget | DirectTarget;
  /** user_messages rows to create: recipient -> flag bits. */
  flags: Map<number, number>;
  /** Recipient roles, for whether each may see the sender's real email. */
  roles: ReadonlyMap<number, number>;
  automaticPolicy: number | null;
  /** Mentioned users who follow topics where they are mentioned. */
  followOnMention: number[];
  /** The realm's linkifiers (for the event's topic_links). */
  linkifiers: readonly Linkifier[];
  queueId?: string;
  localId?: string;
  /**
   * Runs inside the transaction that writes the message, before its events are queued; a throw
   * rolls the message back. A scheduled message marks its row delivered here, so that it is
   * sent exactly once (actions/scheduled_messages.ts). Unset for ordinary sends.
   */
  inTransaction?: (tx: Tx, message: Message) => Promise<void>;
  /** Outgoing-webhook bots this message triggers (Zulip's get_service_bot_events); usually empty. */
  serviceBotTriggers: ServiceBotTrigger[];
}

export interface ServiceBotTrigger {
  botId: number;
  trigger: 'mention' | 'direct_message';
}

/**
 * Zulip's get_service_bot_events for outgoing-webhook bots: a channel message triggers the bots
 * it mentions (by name or through a mentioned group, not silently), a direct message the bots
 * among its recipients; nothing a bot sends triggers
 * one (no loops). Costs no query unless the message mentions someone or is a direct message,
 * and then only the read cache's list of such bots.
 */
async function serviceBotTriggers(db: Tx, realm: Realm, sender: User, target: ChannelTarget | DirectTarget, mentioned: ReadonlySet<number>): Promise<ServiceBotTrigger[]> {
  if (sender.is_bot) return [];
  if (target.kind === 'private') {
    return target.participants
      .filter((u) => u.id !== sender.id && u.is_bot && u.bot_type === BOT_OUTGOING_WEBHOOK)
      .map((u) => ({ botId: u.id, trigger: 'direct_message' as const }));
  }
  if (mentioned.size === 0) return [];
  const bots = await fetchOutgoingWebhookBotIdsCached(db, realm.id);
  return bots.filter((id) => mentioned.has(id)).map((botId) => ({ botId, trigger: 'mention' as const }));
}

export interface SentMessage {
  id: number;
  message: Message;
  automaticNewVisibilityPolicy?: number;
}

/** Zulip's visibility_policy_for_send_message, minus the initiation check the caller does. */
function policyForSend(followPolicy: number, unmutePolicy: number, streamMuted: boolean | null): number | null {
  const participationOrSend = (p: number) => p === AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_PARTICIPATION || p === AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_SEND;
  if (participationOrSend(followPolicy)) return VISIBILITY_FOLLOWED;
  if (streamMuted && participationOrSend(unmutePolicy)) return VISIBILITY_UNMUTED;
  return null;
}

async function automaticVisibilityPolicy(db: Tx, caller: ChannelCaller, target: ChannelTarget): Promise<number | null> {
  const sender = caller.user;
  if (sender.is_bot) return null;
  const settings = userSettings(sender);
  const follow = settings.automatically_follow_topics_policy;
  const unmute = settings.automatically_unmute_topics_in_muted_streams_policy;
  if (follow === AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_NEVER && unmute === AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_NEVER) return null;
  const key = topicKey(target.topic);
  const current = (await fetchUserTopicCached(db, sender.id, target.stream.id, key))?.visibility_policy ?? VISIBILITY_INHERIT;
  if (current === VISIBILITY_FOLLOWED) return null;
  let policy = policyForSend(follow, unmute, target.senderMutedStream);
  if (policy === VISIBILITY_FOLLOWED) return policy;
  if (current !== VISIBILITY_INHERIT) return policy !== null && policy === current ? null : policy;
  const initiation =
    follow === AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_INITIATION ||
    (target.senderMutedStream === true && unmute === AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_INITIATION);
  if (!initiation) return policy;
  // Only messages the sender could read count: a channel with protected history must not
  // reveal that a topic already exists.
  const historyAccess = await canAccessStreamHistory(caller, { stream: target.stream, subscribed: target.senderMutedStream !== null });
  const exists = historyAccess
    ? await topicHasMessagesCached(db, target.stream.id, key)
    : await topicHasMessagesReceivedBy(db, sender.id, target.stream.id, key);
  if (exists) return policy;
  if (follow === AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_ON_INITIATION) return VISIBILITY_FOLLOWED;
  policy = VISIBILITY_UNMUTED;
  return policy;
}

async function resolveDirectRecipients(db: Tx, realm: Realm, sender: User, to: { ids: number[] } | { emails: string[] }): Promise<User[]> {
  if ('emails' in to) {
    if (to.emails.length === 0) throw badRequest('Message must have recipients');
    const users = await fetchUsersByEmails(db, realm.id, to.emails);
    const byEmail = new Map<string, User>();
    for (const u of users) {
      byEmail.set(u.email.toLowerCase(), u);
      byEmail.set(u.delivery_email.toLowerCase(), u);
    }
    const out: User[] = [];
    for (const e of to.emails) {
      const u = byEmail.get(e.toLowerCase());
      if (!u) throw badRequest(`Invalid email '${e}'`);
      out.push(u);
    }
    return out;
  }
  if (to.ids.length === 0) throw badRequest('Message must have recipients');
  const users = new Map((await fetchUsersByIds(db, realm.id, to.ids)).map((u) => [u.id, u]));
  return to.ids.map((id) => {
    const u = users.get(id);
    if (!u) throw badRequest(`Invalid user ID ${id}`);
    return u;
  });
}

/**
 * Zulip's check_can_send_direct_message: someone in the conversation must be in
 * direct_message_permission_group, and starting a new conversation needs
 * direct_message_initiator_group. Bots, and conversations with only bots, are exempt.
 */
async function checkCanSendDirectMessage(db: Tx, realm: Realm, sender: User, recipients: readonly User[], dmKey: string): Promise<void> {
  if (sender.is_bot) return;
  if (recipients.every((u) => u.is_bot || u.id === sender.id)) return;
  const settings = realmSettings(realm);
  // Each participant's own groups (one small query each, usually only the sender's).
  const holds = async (u: User, value: GroupSettingValue, config: GroupPermissionConfig): Promise<boolean> =>
    userHasGroupPermission(await loadUserGroupMembership(db, u), value, u, config);
  const permission = settings.direct_message_permission_group;
  let authorized = false;
  for (const u of [sender, ...recipients]) {
    if (await holds(u, permission, REALM_GROUP_SETTING_CONFIG.direct_message_permission_group)) {
      authorized = true;
      break;
    }
  }
  if (!authorized) {
    const nobody = (await fetchSystemGroups(db, realm.id)).find((g) => g.name === 'role:nobody')?.id;
    if (permission === nobody) throw badRequest('Direct messages are disabled in this organization.');
    throw badRequest('This conversation does not include any users who can authorize it.');
  }
  if (await holds(sender, settings.direct_message_initiator_group, REALM_GROUP_SETTING_CONFIG.direct_message_initiator_group)) return;
  if (!(await dmConversationExists(db, realm.id, dmKey))) {
    throw badRequest('You do not have permission to initiate direct message conversations.');
  }
}

function checkGroupMentions(m: GroupMembership, sender: User, groups: readonly { id: number; name: string; permissions: string }[]): void {
  for (const g of groups) {
    const value = groupPermissions(g).can_mention_group;
    if (value === undefined) continue;
    if (!userHasGroupPermission(m, value, sender, USER_GROUP_PERMISSION_CONFIG.can_mention_group!)) {
      throw badRequest(`You are not allowed to mention user group '${g.name}'.`);
    }
  }
}

/**
 * The mention rules of Zulip's check_message, for sending and editing: wildcard mentions
 * reaching more than WILDCARD_MENTION_THRESHOLD people need can_mention_many_users_group,
 * group mentions need the group's can_mention_group. Returns everyone mentioned (group
 * members included) and, for topic wildcards, the topic's participants.
 */
async function checkMentions(
  db: Tx,
  realm: Realm,
  sender: User,
  rendered: RenderResult,
  channel: { streamId: number; topic: string; subscriberCount: number } | null,
): Promise<{ mentioned: Set<number>; topicParticipants: Set<number> }> {
  let topicParticipants = new Set<number>();
  if (channel) {
    if (rendered.topicWildcard) {
      topicParticipants = await fetchTopicParticipants(db, channel.streamId, topicKey(channel.topic));
      topicParticipants.add(sender.id);
    }
    const settings = realmSettings(realm);
    const canMentionMany = async (): Promise<boolean> =>
      userHasGroupPermission(
        await loadUserGroupMembership(db, sender),
        settings.can_mention_many_users_group,
        sender,
        REALM_GROUP_SETTING_CONFIG.can_mention_many_users_group,
      );
    if (rendered.streamWildcard && channel.subscriberCount > WILDCARD_MENTION_THRESHOLD && !(await canMentionMany())) {
      throw new JsonableError('You do not have permission to use channel wildcard mentions in this channel.', 'STREAM_WILDCARD_MENTION_NOT_ALLOWED', 400);
    }
    if (rendered.topicWildcard && topicParticipants.size > WILDCARD_MENTION_THRESHOLD && !(await canMentionMany())) {
      throw new JsonableError('You do not have permission to use topic wildcard mentions in this topic.', 'TOPIC_WILDCARD_MENTION_NOT_ALLOWED', 400);
    }
  }
  const mentioned = new Set(rendered.mentionedUserIds);
  if (rendered.mentionedGroupIds.size) {
    const m = await loadGroupMembership(db, realm.id);
    const groups = await fetchGroupsByNames(db, realm.id, [...rendered.mentionedGroupIds].map((id) => m.byId.get(id)?.name ?? ''));
    checkGroupMentions(m, sender, groups);
    for (const id of rendered.mentionedGroupIds) for (const u of m.members(id)) mentioned.add(u);
  }
  return { mentioned, topicParticipants };
}

/** Each cached subscriber list's roles by user, built once per list (cached lists are frozen). */
const rolesBySubscribers = new WeakMap<readonly ChannelRecipientRow[], ReadonlyMap<number, number>>();

function subscriberRoles(subs: readonly ChannelRecipientRow[]): ReadonlyMap<number, number> {
  let roles = rolesBySubscribers.get(subs);
  if (!roles) rolesBySubscribers.set(subs, (roles = new Map(subs.map((s) => [s.user_id, s.role]))));
  return roles;
}

/**
 * Validates a message the way Zulip's check_message does and computes everything sending it
 * writes: recipients and their flags, mention and alert-word flags, the sender's automatic
 * topic visibility change. Every 4xx is raised here, never in doSendMessage.
 */
export async function checkSendMessage(services: ActionServices, realm: Realm, sender: User, input: SendMessageInput): Promise<PreparedMessage> {
  const db = services.db.kysely;
  const content = normalizeMessageContent(input.content);
  const settings = realmSettings(realm);
  let target: ChannelTarget | DirectTarget;
  let roles: ReadonlyMap<number, number> = new Map();
  const recipientIds: number[] = [];
  const mutedStreamRecipients = new Set<number>();
  let caller: ChannelCaller | null = null;
  let subscriberCount = 0;

  if (input.type === 'stream') {
    if (input.to === undefined) throw badRequest('Missing channel');
    const indicator = parseStreamIndicator(input.to);
    if (input.topic === undefined) throw badRequest('Missing topic');
    const topic = normalizeSendTopic(input.topic, settings.empty_topic_display_name);
    if (typeof indicator === 'string') checkChannelName(indicator.trim());
    caller = new ChannelCaller(db, realm, sender);
    const accessCaller = input.accessAs ? new ChannelCaller(db, realm, input.accessAs) : caller;
    const accessed = await accessStreamForSend(accessCaller, typeof indicator === 'number' ? { id: indicator } : { name: indicator.trim() });
    const { stream } = accessed;
    const subscribed = accessCaller === caller ? accessed.subscribed : (await fetchStreamWithSubscriptionCached(db, realm.id, { id: stream.id }, sender.id))?.subscribed === true;
    if (
      !sender.is_system_bot &&
      !(await accessCaller.channelPermission(stream, 'can_create_topic_group')) &&
      !(await topicHasMessagesCached(db, stream.id, topicKey(topic)))
    ) {
      throw badRequest('You do not have permission to create new topics in this channel.');
    }
    const policy = stream.topics_policy === 'inherit' ? settings.topics_policy : stream.topics_policy;
    if (policy === 'disable_empty_topic' && topic === '') {
      throw badRequest(`Sending messages to the ${settings.empty_topic_display_name} topic is not allowed in this channel.`);
    }
    if (policy === 'empty_topic_only' && topic !== '') {
      throw new JsonableError(`Only the ${settings.empty_topic_display_name} topic is allowed in this channel.`, 'TOPICS_NOT_ALLOWED', 400);
    }
    const subs = await fetchChannelRecipientsCached(db, stream.id);
    subscriberCount = subs.length;
    let senderMuted: boolean | null = subscribed ? false : null;
    roles = subscriberRoles(subs);
    for (const s of subs) {
      recipientIds.push(s.user_id);
      if (s.is_muted) mutedStreamRecipients.add(s.user_id);
      if (s.user_id === sender.id) senderMuted = !!s.is_muted;
    }
    target = { kind: 'stream', stream, topic, senderMutedStream: senderMuted };
  } else {
    const to = input.to === undefined ? { ids: [] } : parsePrivateRecipients(input.to);
    const listed = await resolveDirectRecipients(db, realm, sender, to);
    const others = listed.filter((u) => u.id !== sender.id);
    const recipients = others.length ? others : [sender];
    for (const u of recipients) {
      if (!u.is_active) throw badRequest(`'${u.email}' is no longer using Zulip.`);
    }
    const access = await loadUserAccess(db, realm, sender);
    if (access.restricted && recipients.some((u) => !access.canAccess(u))) {
      throw badRequest('You do not have permission to access some of the recipients.');
    }
    const participants = [sender, ...recipients.filter((u) => u.id !== sender.id)].sort((a, b) => a.id - b.id);
    const dmKey = dmKeyFor(participants.map((u) => u.id));
    await checkCanSendDirectMessage(db, realm, sender, recipients, dmKey);
    for (const u of participants) recipientIds.push(u.id);
    roles = new Map(participants.map((u) => [u.id, u.role]));
    target = { kind: 'private', participants, dmKey };
  }

  const rendered = await renderContent(services, realm, sender, content);
  const { mentioned, topicParticipants } = await checkMentions(
    db,
    realm,
    sender,
    rendered,
    target.kind === 'stream' ? { streamId: target.stream.id, topic: target.topic, subscriberCount } : null,
  );
  const mutingUsers = await fetchMutingUserIdsCached(db, sender.id);
  const readBySender = input.readBySender ?? defaultReadBySender(input.client);
  const base =
    (rendered.streamWildcard ? FLAG_BITS.stream_wildcard_mentioned : 0) | (target.kind === 'private' ? FLAG_BITS.is_private : 0);
  const flags = new Map<number, number>();
  for (const id of recipientIds) {
    let f = base;
    if ((id === sender.id && readBySender) || mutingUsers.has(id)) f |= FLAG_BITS.read;
    if (mentioned.has(id)) f |= FLAG_BITS.mentioned;
    if (rendered.topicWildcard && topicParticipants.has(id)) f |= FLAG_BITS.topic_wildcard_mentioned;
    if (rendered.alertWordUserIds.has(id)) f |= FLAG_BITS.has_alert_word;
    flags.set(id, f);
  }

  let automaticPolicy: number | null = null;
  const followOnMention: number[] = [];
  if (target.kind === 'stream') {
    automaticPolicy = await automaticVisibilityPolicy(db, caller!, target);
    const mentionedRecipients = [...rendered.mentionedUserIds].filter((id) => flags.has(id));
    if (mentionedRecipients.length) {
      const rows = await fetchUserSettingsRows(db, mentionedRecipients);
      const wanting = rows.filter((r) => !r.is_bot && userSettings(r).automatically_follow_topics_where_mentioned).map((r) => r.id);
      const existing = await fetchUserTopicsForTopic(db, wanting, target.stream.id, topicKey(target.topic));
      const skip = new Set(existing.filter((r) => r.visibility_policy === VISIBILITY_MUTED || r.visibility_policy === VISIBILITY_FOLLOWED).map((r) => r.user_id));
      for (const id of wanting) if (!skip.has(id) && !(id === sender.id && automaticPolicy !== null)) followOnMention.push(id);
    }
  }

  return {
    realm,
    sender,
    client: input.client,
    content,
    rendered,
    target,
    flags,
    roles,
    automaticPolicy,
    followOnMention,
    linkifiers: rendered.linkifiers,
    queueId: input.queueId,
    localId: input.localId,
    serviceBotTriggers: await serviceBotTriggers(db, realm, sender, target, mentioned),
  };
}

/** The message dict events carry: rendered HTML, real avatar URLs, the empty topic as "". */
function eventMessageDict(services: ActionServices, p: PreparedMessage, row: Message, submessages: readonly SubmessageRow[]): MessageDict {
  const users = new Map<number, MessageUserRow>();
  const toRow = (u: User): MessageUserRow => ({
    id: u.id,
    realm_id: u.realm_id,
    email: u.email,
    delivery_email: u.delivery_email,
    full_name: u.full_name,
    avatar_source: u.avatar_source,
    avatar_version: u.avatar_version,
  });
  users.set(p.sender.id, toRow(p.sender));
  if (p.target.kind === 'private') for (const u of p.target.participants) users.set(u.id, toRow(u));
  const rel: MessageRelations = {
    realm: p.realm,
    realmUrl: realmUrl(services.config, p.realm),
    users,
    streamNames: new Map(p.target.kind === 'stream' ? [[p.target.stream.id, p.target.stream.name]] : []),
    reactions: new Map(),
    submessages: new Map([[row.id, submessages]]),
    linkifiers: p.linkifiers,
  };
  return formatMessage(row, rel, {
    applyMarkdown: true,
    clientGravatar: false,
    allowEmptyTopicName: true,
    emptyTopicDisplayName: realmSettings(p.realm).empty_topic_display_name,
  });
}

/**
 * Writes a batch of checked messages inside `tx`: the messages, in one statement, then for each
 * in order its attachments, the channel's first_message_id when unset, automatic topic follows;
 * adds each message's recipients and their flags to `received` (the caller writes their
 * user_messages rows for the whole batch); and queues, for after the commit, the `message` event to every recipient with their
 * flags (sender first) and the `user_topic` events.
 */
async function writeMessages(
  services: ActionServices,
  tx: Tx,
  afterCommit: (cb: () => void) => void,
  batch: readonly PreparedMessage[],
  received: MessageReceipts[],
): Promise<SentMessage[]> {
  const dateSent = now();
  const attachments: AttachmentRow[][] = [];
  for (const p of batch) attachments.push(await claimableMessageAttachments(tx, p.realm, p.sender, p.rendered.attachmentPathIds));
  const messages = await insertMessages(
    tx,
    batch.map((p, i) => {
      const t = p.target;
      return {
        realm_id: p.realm.id,
        sender_id: p.sender.id,
        type: t.kind,
        stream_id: t.kind === 'stream' ? t.stream.id : null,
        topic: t.kind === 'stream' ? t.topic : '',
        topic_lc: t.kind === 'stream' ? topicKey(t.topic) : '',
        dm_key: t.kind === 'private' ? t.dmKey : null,
        content: p.content,
        rendered_content: p.rendered.html,
        date_sent: dateSent,
        sending_client: p.client,
        has_link: p.rendered.hasLink ? 1 : 0,
        has_image: p.rendered.hasImage ? 1 : 0,
        has_attachment: attachments[i]!.length > 0 ? 1 : 0,
      };
    }),
  );
  const out: SentMessage[] = [];
  for (let i = 0; i < batch.length; i++) out.push(await finishMessage(services, tx, afterCommit, batch[i]!, messages[i]!, attachments[i]!, received, dateSent));
  return out;
}

async function finishMessage(
  services: ActionServices,
  tx: Tx,
  afterCommit: (cb: () => void) => void,
  p: PreparedMessage,
  message: Message,
  attachments: readonly AttachmentRow[],
  received: MessageReceipts[],
  dateSent: number,
): Promise<SentMessage> {
  const t = p.target;
  if (p.inTransaction) await p.inTransaction(tx, message);
  // Zulip's do_widget_post_save_actions: a poll or to-do list starts with its `widget` submessage.
  const widget = getWidgetData(p.content);
  const submessages = widget ? [await insertSubmessage(tx, { message_id: message.id, sender_id: p.sender.id, msg_type: 'widget', content: pythonJsonDumps(widget, null) })] : [];
  await setMessageAttachments(services, tx, afterCommit, p.realm, message.id, attachments, true);
  received.push({ messageId: message.id, flags: p.flags });
  let changedPolicy = false;
  if (t.kind === 'stream') {
    if (t.stream.first_message_id === null) await setStreamFirstMessageIdIfNull(tx, t.stream.id, message.id);
    const target = { realmId: p.realm.id, streamId: t.stream.id, topic: t.topic };
    if (p.automaticPolicy !== null) {
      changedPolicy = (await setUserTopicPolicies(services, tx, afterCommit, target, [p.sender.id], p.automaticPolicy, dateSent)).length > 0;
    }
    if (p.followOnMention.length) await setUserTopicPolicies(services, tx, afterCommit, target, p.followOnMention, VISIBILITY_FOLLOWED, dateSent);
  }
  const dict = eventMessageDict(services, p, message, submessages);
  const recipients: EventRecipient[] = [];
  if (p.flags.has(p.sender.id)) recipients.push({ id: p.sender.id, flags: sharedFlagsList(p.flags.get(p.sender.id)!) });
  // forEach: iterating entries would allocate a pair per recipient (10,000 for a large channel).
  p.flags.forEach((f, id) => {
    if (id !== p.sender.id) recipients.push({ id, flags: sharedFlagsList(f) });
  });
  const extra: MessageEventExtra = {
    rawContent: p.content,
    senderAvatarIsGravatar: p.sender.avatar_source === AVATAR_FROM_GRAVATAR,
    senderEmailVisibleTo: (userId) => canAccessDeliveryEmail({ id: userId, role: p.roles.get(userId) ?? 400 }, p.sender),
    ...(p.queueId !== undefined ? { senderQueueId: p.queueId } : {}),
    ...(p.localId !== undefined ? { localId: p.localId } : {}),
    ...(t.kind === 'stream' && !t.stream.invite_only ? { publicStream: true } : {}),
  };
  afterCommit(() => services.events.send(p.realm.id, { type: 'message', message: dict }, recipients, extra));
  if (p.serviceBotTriggers.length) {
    // The durable queue (workers/outgoing_webhooks.ts): committed with the message, so a crash loses no delivery.
    const messageUrl = messageLinks(services, p, message.id).message_url;
    await insertOutgoingWebhookJobs(
      tx,
      p.serviceBotTriggers.map((t) => ({ realm_id: p.realm.id, message_id: message.id, bot_id: t.botId, trigger: t.trigger, message_url: messageUrl })),
    );
    const webhooks = services.outgoingWebhooks;
    if (webhooks) afterCommit(() => webhooks.wake());
  }
  const out: SentMessage = { id: message.id, message };
  if (changedPolicy && p.automaticPolicy !== null) out.automaticNewVisibilityPolicy = p.automaticPolicy;
  return out;
}

/** At most this many messages share one transaction. */
const MAX_SEND_BATCH = 200;
/** user_messages rows inserted without yielding to the event loop (about 5 ms of work). */
const INSERT_SLICE = 2000;

interface PendingSend {
  p: PreparedMessage;
  resolve: (sent: SentMessage) => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit: messages sent while a send transaction is running (or within the same turn
 * of the event loop) are written together in one transaction, so a burst of N sends costs one
 * commit instead of N (a commit is most of a send's database time). A lone message waits for
 * nothing but the end of the current event-loop turn. Events follow each commit in message order.
 */
class SendQueue {
  private readonly pending: PendingSend[] = [];
  private writing = false;

  constructor(private readonly services: ActionServices) {}

  send(p: PreparedMessage): Promise<SentMessage> {
    return new Promise((resolve, reject) => {
      this.pending.push({ p, resolve, reject });
      if (!this.writing) {
        this.writing = true;
        // SQLite runs a transaction without yielding to the event loop: start it after the
        // requests that have already arrived were read, so that they join this batch.
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) await this.write(this.pending.splice(0, MAX_SEND_BATCH));
    } finally {
      this.writing = false;
    }
  }

  private async write(batch: PendingSend[]): Promise<void> {
    let sent: SentMessage[];
    try {
      sent = await transaction(this.services.db, async (tx, afterCommit) => {
        const received: MessageReceipts[] = [];
        const out = await writeMessages(this.services, tx, afterCommit, batch.map((s) => s.p), received);
        // The notification queue (workers/notifications.ts): one row per message someone besides
        // its sender receives, in the batch's one INSERT.
        await insertNotificationJobs(
          tx,
          out.filter((_, i) => batch[i]!.p.flags.size > (batch[i]!.p.flags.has(batch[i]!.p.sender.id) ? 1 : 0)).map((m) => ({ message_id: m.id, due_at: m.message.date_sent })),
        );
        if (this.services.notifications) afterCommit(() => this.services.notifications!.wake());
        const receipts = this.services.db.receipts;
        if (receipts) {
          // SQLite: the rows follow in large sorted batches (db/receipts.ts).
          receipts.stage(received);
          afterCommit(() => receipts.schedule());
          return out;
        }
        const rows: UserMessageRow[] = [];
        for (const { messageId, flags } of received) flags.forEach((f, user_id) => rows.push({ user_id, message_id: messageId, flags: f }));
        // One insert for the whole batch (several times cheaper than one per message), in slices
        // with the event loop free between them: a message to 10,000 people takes ~25 ms to insert.
        for (let i = 0; i < rows.length; i += INSERT_SLICE) {
          if (i > 0) await new Promise((resolve) => setImmediate(resolve));
          await bulkInsertUserMessages(tx, rows.slice(i, i + INSERT_SLICE));
        }
        return out;
      });
    } catch (e) {
      if (batch.length === 1) {
        batch[0]!.reject(e);
        return;
      }
      // One message failing must not fail the others it was batched with.
      for (const s of batch) await this.write([s]);
      return;
    }
    batch.forEach((s, i) => s.resolve(sent[i]!));
  }
}

const sendQueues = new WeakMap<Database, SendQueue>();

/** Writes a message checked by checkSendMessage (see writeMessages), in a group commit with concurrent sends. */
export function doSendMessage(services: ActionServices, p: PreparedMessage): Promise<SentMessage> {
  runtimeCounters.messagesSent++;
  let queue = sendQueues.get(services.db);
  if (!queue) {
    queue = new SendQueue(services);
    sendQueues.set(services.db, queue);
  }
  const sent = queue.send(p);
  // Rare: a new image whose thumbnail was not made when the message was rendered.
  if (!p.rendered.html.includes('image-loading-placeholder')) return sent;
  return sent.then(async (m) => {
    await settlePendingPreviews(services, p.realm.id, p.rendered.html);
    return m;
  });
}

/** The sender's view of where the message went: Zulip's message_url / message_link (feature level 508). */
export function messageLinks(services: ActionServices, p: PreparedMessage, id: number): { message_url: string; message_link: string } {
  const base = realmUrl(services.config, p.realm);
  const t = p.target;
  if (t.kind === 'private') {
    const others = t.participants.filter((u) => u.id !== p.sender.id);
    const ids = (others.length ? others : t.participants).map((u) => u.id).join(',');
    const suffix = others.length > 1 ? 'group' : 'dm';
    const url = `${base}/#narrow/dm/${ids}-${suffix}/near/${id}`;
    return { message_url: url, message_link: url };
  }
  const slug = `${t.stream.id}-${encodeHashComponent(t.stream.name.replace(/ /g, '-'))}`;
  const url = `${base}/#narrow/channel/${slug}/topic/${encodeHashComponent(t.topic)}/near/${id}`;
  return { message_url: url, message_link: `[#${t.stream.name} > ${t.topic} @ 💬](${url})` };
}

/** Zulip's hash_util_encode: percent-encoding of everything but [A-Za-z0-9_.~-], then "." for "%". */
function encodeHashComponent(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*.]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%/g, '.');
}

// ---------------------------------------------------------------------------------------------
// Personal message flags.

/** Zulip's DEFAULT_HISTORICAL_FLAGS: what a readable message the user never received counts as. */
export const DEFAULT_HISTORICAL_FLAGS = FLAG_BITS.read | FLAG_BITS.historical;

export interface FlagChange {
  op: 'add' | 'remove';
  flag: FlagName;
  /** The IDs whose flag changes, in request order. */
  messages: number[];
  /** Rows to create for readable messages the user never received. */
  historical: number[];
  /** Channels whose messages were left read because the user is not subscribed (read/remove only). */
  ignoredChannels: number[] | null;
}

/** Zulip's validation order: the flag's name, then its editability, then the operation. */
export function checkFlagName(flag: string, op: string): { flag: FlagName; op: 'add' | 'remove' } {
  if (!isFlagName(flag) || !API_FLAGS.has(flag)) throw badRequest(`Invalid flag: '${flag}'`);
  if (NON_EDITABLE_FLAGS.has(flag)) throw badRequest(`Flag not editable: '${flag}'`);
  if (op !== 'add' && op !== 'remove') throw badRequest(`Invalid message flag operation: '${op}'`);
  return { flag, op };
}

/**
 * Zulip's do_update_message_flags, checking half: which messages change. Messages the user
 * has no row for count as read+historical; changing another flag on them needs access to
 * the message (else "Invalid message(s)"), and creates a historical row. Marking channel
 * messages unread is ignored for channels the user is not subscribed to.
 */
export async function checkUpdateMessageFlags(
  services: ActionServices,
  realm: Realm,
  user: User,
  op: 'add' | 'remove',
  flag: FlagName,
  ids: readonly number[],
): Promise<FlagChange> {
  const db = services.db.kysely;
  const bit = FLAG_BITS[flag];
  const target = op === 'add' ? bit : 0;
  let wanted = [...new Set(ids)];
  let ignoredChannels: number[] | null = null;
  if (flag === 'read' && op === 'remove') {
    const rows = await fetchMessagesByIds(db, realm.id, wanted);
    const streamIds = [...new Set(rows.filter((r) => r.type === 'stream').map((r) => r.stream_id ?? 0))];
    const subscribed = await fetchSubscribedStreamIds(db, user.id, streamIds);
    const skip = new Set(rows.filter((r) => r.type === 'stream' && !subscribed.has(r.stream_id ?? 0)).map((r) => r.id));
    ignoredChannels = streamIds.filter((id) => !subscribed.has(id)).sort((a, b) => a - b);
    wanted = wanted.filter((id) => !skip.has(id));
  }
  const current = await fetchUserMessageFlags(db, user.id, wanted);
  const messages = wanted.filter((id) => ((current.get(id) ?? DEFAULT_HISTORICAL_FLAGS) & bit) !== target);
  const historical = messages.filter((id) => !current.has(id));
  if (historical.length) {
    const accessible = await accessMessages(db, realm, user, historical);
    if (accessible.length !== historical.length) throw badRequest('Invalid message(s)');
  }
  return { op, flag, messages, historical, ignoredChannels };
}

/** The details `update_message_flags` (read, remove) carries so clients can rebuild unread_msgs. */
async function unreadMessageDetails(db: Tx, userId: number, ids: readonly number[]): Promise<Record<string, Record<string, unknown>>> {
  const out: Record<string, Record<string, unknown>> = {};
  if (ids.length === 0) return out;
  const rows = await fetchUnreadMessages(db, userId, ids.length, ids);
  const mutedStreams = await fetchMutedStreamIds(db, userId, [...new Set(rows.filter((r) => r.type === 'stream').map((r) => r.stream_id ?? 0))]);
  for (const r of rows) {
    const d: Record<string, unknown> = { type: r.type };
    if (r.flags & FLAG_BITS.mentioned || r.flags & (FLAG_BITS.stream_wildcard_mentioned | FLAG_BITS.topic_wildcard_mentioned)) d.mentioned = true;
    if (r.type === 'stream') {
      d.stream_id = r.stream_id;
      d.topic = r.topic;
      d.unmuted_stream_msg = !mutedStreams.has(r.stream_id ?? 0);
    } else {
      d.user_ids = dmParticipantIds(r.dm_key).filter((id) => id !== userId);
    }
    out[String(r.message_id)] = d;
  }
  return out;
}

/** Applies a checked flag change in one transaction and sends `update_message_flags` to the user. */
export async function doUpdateMessageFlags(services: ActionServices, realm: Realm, user: User, change: FlagChange): Promise<void> {
  const bit = FLAG_BITS[change.flag];
  await transaction(services.db, async (tx, afterCommit) => {
    const existing = change.messages.filter((id) => !change.historical.includes(id));
    const { pushShowing } = await updateUserMessageFlag(tx, user.id, existing, bit, change.op);
    if (change.historical.length) {
      const flags = change.op === 'add' ? DEFAULT_HISTORICAL_FLAGS | bit : DEFAULT_HISTORICAL_FLAGS & ~bit;
      await insertHistoricalUserMessages(tx, user.id, change.historical, flags);
    }
    const event: ZulipEvent = {
      type: 'update_message_flags',
      op: change.op,
      operation: change.op,
      flag: change.flag,
      messages: change.messages,
      all: false,
    };
    if (change.flag === 'read' && change.op === 'remove') event.message_details = await unreadMessageDetails(tx, user.id, change.messages);
    if (change.flag === 'read' && change.op === 'add') await queueRemovePushes(services, tx, afterCommit, user.id, pushShowing);
    afterCommit(() => services.events.send(realm.id, event, [user.id]));
  });
}

/**
 * Zulip's do_clear_mobile_push_notifications_for_ids: messages read here whose push
 * notification still shows are taken back from the phone (a `remove` push, queued in the
 * transaction that marks them read).
 */
async function queueRemovePushes(services: ActionServices, tx: Tx, afterCommit: (fn: () => void) => void, userId: number, showing: readonly number[]): Promise<void> {
  if (showing.length === 0) return;
  const at = now();
  await insertNotificationOutboxRows(tx, showing.map((message_id) => ({ user_id: userId, message_id, kind: 'remove', trigger: 'read', due_at: at })));
  if (services.notifications) afterCommit(() => services.notifications!.wake());
}

/** Zulip marks everything read in batches of this many, newest first. */
const MARK_ALL_READ_BATCH = 2000;

/**
 * Marks all the user's messages read in batches, each its own transaction, within a time
 * budget. Returns false when the budget ran out first (the client repeats the request); the
 * `all: true` event goes out only once everything is read, as in Zulip.
 */
export async function doMarkAllAsRead(services: ActionServices, realm: Realm, user: User, timeBudgetMs: number): Promise<boolean> {
  const start = Date.now();
  // Zulip takes the phone's notifications back first, in case the marking below runs out of time.
  await transaction(services.db, async (tx, afterCommit) => queueRemovePushes(services, tx, afterCommit, user.id, await fetchAllActivePushMessageIds(tx, user.id)));
  for (;;) {
    if (Date.now() - start >= timeBudgetMs) return false;
    const n = await transaction(services.db, (tx) => markUnreadBatchRead(tx, user.id, MARK_ALL_READ_BATCH));
    if (n < MARK_ALL_READ_BATCH) break;
  }
  services.events.send(realm.id, { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: [], all: true }, [user.id]);
  return true;
}

/** Marks the user's unread messages in a channel, or one topic of it, read (legacy endpoints). */
export async function doMarkStreamMessagesAsRead(services: ActionServices, realm: Realm, user: User, streamId: number, topic?: string): Promise<number> {
  return transaction(services.db, async (tx, afterCommit) => {
    const ids = await fetchUnreadIdsInStream(tx, user.id, streamId, topic === undefined ? undefined : topicKey(topic));
    if (ids.length === 0) return 0;
    const { pushShowing } = await updateUserMessageFlag(tx, user.id, ids, FLAG_BITS.read, 'add');
    await queueRemovePushes(services, tx, afterCommit, user.id, pushShowing);
    afterCommit(() =>
      services.events.send(realm.id, { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: ids, all: false }, [user.id]),
    );
    return ids.length;
  });
}

// ---------------------------------------------------------------------------------------------
// Reading: topics of a channel, one message, read receipts.

/**
 * Zulip's get_topic_history_for_stream: each topic once (case-insensitively, spelled as in its
 * newest message) with its newest message ID, newest first. Channels with protected history
 * show only topics of messages the caller received.
 */
export async function fetchTopicHistory(
  db: Tx,
  user: User,
  stream: Stream,
  allowEmptyTopicName: boolean,
  emptyTopicDisplayName: string,
): Promise<{ name: string; max_id: number }[]> {
  const rows = await fetchTopicHistoryRows(db, stream.id, stream.history_public_to_subscribers ? null : user.id);
  rows.sort((a, b) => a.max_id - b.max_id);
  const canonical = new Map<string, { name: string; max_id: number }>();
  for (const r of rows) canonical.set(topicKey(r.topic), { name: r.topic, max_id: r.max_id });
  return [...canonical.values()]
    .map((t) => ({ name: displayTopic(t.name, allowEmptyTopicName, emptyTopicDisplayName), max_id: t.max_id }))
    .sort((a, b) => b.max_id - a.max_id);
}

/**
 * Zulip's read receipts: who has read the message, excluding its sender, deactivated users,
 * users who turned off send_read_receipts and users who muted the sender (their copies start read).
 */
export async function fetchReadReceipts(db: Tx, message: Message): Promise<number[]> {
  const [readers, muting] = await Promise.all([fetchReaderIds(db, message.id), fetchMutingUserIds(db, message.sender_id)]);
  return readers
    .filter((r) => r.user_id !== message.sender_id && !muting.has(r.user_id) && userSettings(r).send_read_receipts)
    .map((r) => r.user_id);
}

// ---------------------------------------------------------------------------------------------
// Deleting.

/**
 * Deletes messages of one conversation in the caller's transaction and queues the
 * `delete_message` event (bulk form: `message_ids`; the event system splits it into one event
 * per message, with `message_id`, for clients without the bulk_message_deletion capability),
 * plus a channel `update` of `first_message_id` when the channel's oldest message went away.
 * Preconditions: every message is in `stream` (or, for a direct message, `messages` has one).
 */
export async function deleteMessagesInTransaction(
  services: ActionServices,
  tx: Tx,
  afterCommit: (cb: () => void) => void,
  realm: Realm,
  messages: readonly Pick<Message, 'id' | 'type' | 'stream_id' | 'topic'>[],
  stream: Stream | null,
): Promise<void> {
  if (messages.length === 0) return;
  const ids = messages.map((m) => m.id).sort((a, b) => a - b);
  const sample = messages[0]!;
  const withRows = await fetchUserIdsWithRows(tx, ids);
  const event: ZulipEvent = { type: 'delete_message', message_ids: ids, message_type: sample.type };
  const notify = new Set(withRows);
  if (stream) {
    event.stream_id = stream.id;
    event.topic = sample.topic;
    for (const r of await fetchChannelRecipients(tx, stream.id)) notify.add(r.user_id);
  }
  await deleteMessagesByIds(tx, ids);
  afterCommit(() => services.events.send(realm.id, event, [...notify].sort((a, b) => a - b)));
  if (stream) {
    const current = (await fetchStreamAccessRows(tx, [stream.id])).get(stream.id)?.first_message_id ?? null;
    if (current !== null && ids.includes(current)) await refreshFirstMessageId(services, tx, afterCommit, realm, stream);
  }
}

export interface DeleteTopicOptions {
  batchSize: number;
  timeBudgetMs: number;
}

/** Zulip's RETENTION_STREAM_MESSAGE_BATCH_SIZE and its 50-second request budget. */
export const DELETE_TOPIC_DEFAULTS: DeleteTopicOptions = { batchSize: 100, timeBudgetMs: 50_000 };

/**
 * Zulip's delete_in_topic: deletes the topic's messages the administrator may see, newest
 * first, one transaction per batch, until none are left or the time budget is spent (then
 * returns false and a repeated request continues). Once the topic is empty, everyone's
 * visibility policy for it is cleared (in channels with protected history, only for users who
 * no longer have any message of it). Preconditions: the caller is an administrator with
 * access to the channel, or null for the server's administrator (`parley delete-topic`), who
 * deletes every message of the topic; `topic` is already read ("" for the empty topic).
 */
export async function doDeleteTopic(
  services: ActionServices,
  realm: Realm,
  user: User | null,
  stream: Stream,
  topic: string,
  opts: DeleteTopicOptions = DELETE_TOPIC_DEFAULTS,
): Promise<boolean> {
  const key = topicKey(topic);
  const onlyUser = stream.history_public_to_subscribers || user === null ? null : user.id;
  const start = Date.now();
  for (;;) {
    const n = await transaction(services.db, async (tx, afterCommit) => {
      const rows = await fetchTopicMessagesNewestFirst(tx, stream.id, key, opts.batchSize, onlyUser);
      const messages = rows.map((r) => ({ id: r.id, type: 'stream', stream_id: stream.id, topic: r.topic }));
      await deleteMessagesInTransaction(services, tx, afterCommit, realm, messages, stream);
      return rows.length;
    });
    if (n < opts.batchSize) break;
    if (Date.now() - start >= opts.timeBudgetMs) return false;
  }
  await transaction(services.db, async (tx, afterCommit) => {
    let users = await fetchUserIdsWithTopicPolicy(tx, stream.id, key);
    if (!stream.history_public_to_subscribers) {
      const still = await fetchUsersWithMessagesInTopic(tx, users, stream.id, key);
      users = users.filter((id) => !still.has(id));
    }
    await setUserTopicPolicies(services, tx, afterCommit, { realmId: realm.id, streamId: stream.id, topic }, users, VISIBILITY_INHERIT);
  });
  return true;
}

// ---------------------------------------------------------------------------------------------
// Editing and deleting single messages.

/** Zulip allows content edits this many seconds past the limit, for clients' countdown slack. */
const EDIT_LIMIT_BUFFER_SECONDS = 20;

export type PropagateMode = 'change_one' | 'change_later' | 'change_all';

export interface EditRequest {
  content?: string;
  topic?: string;
  propagateMode: PropagateMode;
  streamId?: number;
  prevContentSha256?: string;
  sendNotificationToOldThread: boolean;
  sendNotificationToNewThread: boolean;
}

export interface PreparedEdit {
  realm: Realm;
  editor: User;
  message: Message;
  stream: Stream | null;
  content: { raw: string; rendered: RenderResult; mentioned: Set<number>; topicParticipants: Set<number> } | null;
  /**
   * The move: the (possibly unchanged) topic, the messages it applies to (ascending), and the
   * channel they go to when it changes; null when nothing moves.
   */
  topic: {
    name: string;
    moved: Message[];
    resolveOnly: boolean;
    /** Whether the new name adds or drops the "✔ " prefix, as Zulip judges it (even with a channel change). */
    toggle: 'resolved' | 'unresolved' | null;
    newStream: Stream | null;
  } | null;
  propagateMode: PropagateMode;
  notifyOldThread: boolean;
  notifyNewThread: boolean;
}

/**
 * Zulip's validate_user_can_edit_message: the realm allows editing, the editor sent the
 * message, and message_content_edit_limit_seconds (plus `bufferSeconds`) has not passed.
 */
export function checkCanEditContent(realm: Realm, editor: Pick<User, 'id'>, message: Pick<Message, 'sender_id' | 'date_sent'>, bufferSeconds: number): void {
  const settings = realmSettings(realm);
  if (!settings.allow_message_editing) throw badRequest('Your organization has turned off message editing');
  if (message.sender_id !== editor.id) throw badRequest("You don't have permission to edit this message");
  const limit = settings.message_content_edit_limit_seconds;
  if (limit !== null && now() - message.date_sent > limit + bufferSeconds) throw badRequest('The time limit for editing this message has passed');
}

/**
 * Zulip's check_update_message for content edits and topic moves within a channel: only the
 * sender edits content, within message_content_edit_limit_seconds (+20 s) and while the realm
 * allows editing; topics move for members of can_move_messages_between_topics_group (or the
 * channel's can_move_messages_within_channel_group), resolving needs can_resolve_topics_group,
 * and below moderators within move_messages_within_stream_limit_seconds.
 */
export async function checkUpdateMessage(services: ActionServices, realm: Realm, editor: User, messageId: number, req: EditRequest): Promise<PreparedEdit> {
  const db = services.db.kysely;
  const settings = realmSettings(realm);
  const { message } = await accessMessage(db, realm, editor, messageId);
  const stream = message.type === 'stream' ? ((await fetchStreamById(db, realm.id, message.stream_id ?? 0)) ?? null) : null;
  const elapsed = now() - message.date_sent;
  let content: PreparedEdit['content'] = null;
  if (req.content !== undefined) {
    checkCanEditContent(realm, editor, message, EDIT_LIMIT_BUFFER_SECONDS);
    if (req.prevContentSha256 !== undefined && req.prevContentSha256 !== createHash('sha256').update(message.content).digest('hex')) {
      throw badRequest("'prev_content_sha256' value does not match the expected value.");
    }
  }
  if (req.propagateMode !== 'change_one' && req.topic === undefined && req.streamId === undefined) {
    throw badRequest('Invalid propagate_mode without topic edit');
  }
  let newStream: Stream | null = null;
  if (req.streamId !== undefined && req.streamId !== message.stream_id) {
    if (!stream) throw badRequest('Direct messages cannot be moved to channels.');
    if (req.content !== undefined) throw badRequest('Cannot change message content while changing channel');
    const caller = new ChannelCaller(db, realm, editor);
    newStream = (await accessStreamById(caller, req.streamId)).stream;
    await checkCanSendMessageGroup(caller, newStream);
    const m = await loadUserGroupMembership(db, editor);
    const may =
      isAdmin(editor) ||
      userHasGroupPermission(m, settings.can_move_messages_between_channels_group, editor, REALM_GROUP_SETTING_CONFIG.can_move_messages_between_channels_group) ||
      canAdministerChannel(m, editor, stream) ||
      hasChannelPermission(m, editor, stream, 'can_move_messages_out_of_channel_group');
    if (!may) throw badRequest("You don't have permission to move this message");
    const limit = settings.move_messages_between_streams_limit_seconds;
    if (!isModerator(editor) && limit !== null && elapsed > limit + EDIT_LIMIT_BUFFER_SECONDS) {
      throw badRequest("The time limit for editing this message's channel has passed");
    }
  }
  let topic: PreparedEdit['topic'] = null;
  if (req.topic !== undefined && !stream) throw badRequest('Direct messages cannot have topics.');
  if (stream && (req.topic !== undefined || newStream)) {
    const name = req.topic !== undefined ? normalizeSendTopic(req.topic, settings.empty_topic_display_name) : message.topic;
    const target = newStream ?? stream;
    if (name !== message.topic || newStream) {
      const policy = target.topics_policy === 'inherit' ? settings.topics_policy : target.topics_policy;
      if (name === '' && policy === 'disable_empty_topic') {
        throw badRequest(`Sending messages to the ${settings.empty_topic_display_name} topic is not allowed in this channel.`);
      }
      const toggle = name === message.topic ? null : resolveToggle(message.topic, name, req.topic?.trim() ?? name);
      const resolveOnly = !newStream && toggle !== null;
      if (name !== message.topic) {
        const m = await loadUserGroupMembership(db, editor);
        const may = resolveOnly
          ? userHasGroupPermission(m, settings.can_resolve_topics_group, editor, REALM_GROUP_SETTING_CONFIG.can_resolve_topics_group) ||
            hasChannelPermission(m, editor, stream, 'can_resolve_topics_group')
          : isAdmin(editor) ||
            userHasGroupPermission(m, settings.can_move_messages_between_topics_group, editor, REALM_GROUP_SETTING_CONFIG.can_move_messages_between_topics_group) ||
            hasChannelPermission(m, editor, stream, 'can_move_messages_within_channel_group');
        if (!may) throw badRequest("You don't have permission to edit this message");
        const moveLimit = settings.move_messages_within_stream_limit_seconds;
        if (!resolveOnly && !isModerator(editor) && moveLimit !== null && elapsed > moveLimit + EDIT_LIMIT_BUFFER_SECONDS) {
          throw badRequest("The time limit for editing this message's topic has passed.");
        }
      }
      const onlyUser = stream.history_public_to_subscribers ? null : editor.id;
      const moved =
        req.propagateMode === 'change_one'
          ? [message]
          : await fetchTopicMessagesForMove(db, stream.id, message.topic_lc, req.propagateMode === 'change_all' ? 0 : message.id, onlyUser);
      topic = { name, moved, resolveOnly, toggle, newStream };
    }
  }
  if (req.content !== undefined) {
    // Emptying a message is how some clients (zulip-mobile) delete it: Zulip keeps "(deleted)".
    const raw = normalizeMessageContent(req.content.trimEnd() === '' ? '(deleted)' : req.content);
    const rendered = await renderContent(services, realm, editor, raw);
    const subscribers = stream ? await fetchChannelRecipients(db, stream.id) : [];
    const { mentioned, topicParticipants } = await checkMentions(
      db,
      realm,
      editor,
      rendered,
      stream ? { streamId: stream.id, topic: topic?.name ?? message.topic, subscriberCount: subscribers.length } : null,
    );
    content = { raw, rendered, mentioned, topicParticipants };
  }
  if (!content && !topic) throw badRequest('Nothing to change');
  return {
    realm,
    editor,
    message,
    stream,
    content,
    topic,
    propagateMode: req.propagateMode,
    notifyOldThread: req.sendNotificationToOldThread,
    notifyNewThread: req.sendNotificationToNewThread,
  };
}

const MENTION_FLAGS = FLAG_BITS.mentioned | FLAG_BITS.stream_wildcard_mentioned | FLAG_BITS.topic_wildcard_mentioned | FLAG_BITS.has_alert_word;

function prependHistory(text: string | null, entry: EditHistoryEntry): string {
  let list: EditHistoryEntry[] = [];
  try {
    list = text ? (JSON.parse(text) as EditHistoryEntry[]) : [];
  } catch {
    list = [];
  }
  return JSON.stringify([entry, ...list]);
}

/**
 * Applies a checked edit in one transaction: the new content (with recomputed mention and
 * alert-word flags for every recipient) and/or the move of every affected message to the new
 * topic and channel, each with an edit_history entry. A channel move follows Zulip: the old
 * channel's subscribers who are not in the new one lose their copies (and get
 * `delete_message` when they can no longer read the new channel), the new channel's other
 * subscribers get read copies, and both channels' first_message_id are kept right. Then one
 * `update_message` event goes to everyone with a copy, carrying their flags for the edited
 * message. Once that is committed, the Notification Bot posts the move's notices
 * (sendMoveNotifications).
 */
export async function doUpdateMessage(services: ActionServices, e: PreparedEdit): Promise<void> {
  const ts = now();
  const m = e.message;
  const newStream = e.topic?.newStream ?? null;
  const aftermath = await transaction(services.db, async (tx, afterCommit) => {
    const affected = e.topic ? e.topic.moved : [m];
    const ids = affected.map((x) => x.id).sort((a, b) => a - b);
    for (const msg of affected) {
      const entry: EditHistoryEntry = { user_id: e.editor.id, timestamp: ts };
      const changes: MessageChanges = {};
      if (msg.id === m.id && e.content) {
        entry.prev_content = m.content;
        entry.prev_rendered_content = m.rendered_content;
        changes.content = e.content.raw;
        changes.rendered_content = e.content.rendered.html;
        changes.has_link = e.content.rendered.hasLink ? 1 : 0;
        changes.has_image = e.content.rendered.hasImage ? 1 : 0;
        const attachments = await claimableMessageAttachments(tx, e.realm, e.editor, e.content.rendered.attachmentPathIds);
        changes.has_attachment = attachments.length > 0 ? 1 : 0;
        await setMessageAttachments(services, tx, afterCommit, e.realm, m.id, attachments);
        changes.last_edit_time = ts;
      }
      if (e.topic) {
        if (e.topic.name !== msg.topic) {
          entry.prev_topic = msg.topic;
          entry.topic = e.topic.name;
          changes.topic = e.topic.name;
          changes.topic_lc = topicKey(e.topic.name);
        }
        if (newStream) {
          entry.prev_stream = msg.stream_id ?? 0;
          entry.stream = newStream.id;
          changes.stream_id = newStream.id;
        }
        // Resolving or unresolving a topic is not a move (Zulip's last_moved_timestamp).
        if (!e.topic.resolveOnly) changes.last_moved_time = ts;
      }
      changes.edit_history = prependHistory(msg.edit_history, entry);
      await updateMessageRow(tx, msg.id, changes);
    }

    let rows = await fetchRecipientRows(tx, ids);
    const gaining: number[] = [];
    if (newStream && e.stream) {
      const [oldSubs, newSubs] = await Promise.all([fetchChannelRecipients(tx, e.stream.id), fetchChannelRecipients(tx, newStream.id)]);
      const newIds = new Set(newSubs.map((r) => r.user_id));
      const oldIds = new Set(oldSubs.map((r) => r.user_id));
      const losing = oldSubs.filter((r) => !newIds.has(r.user_id));
      if (losing.length) {
        await deleteUserMessagesFor(tx, losing.map((r) => r.user_id), ids);
        const lostIds = new Set(losing.map((r) => r.user_id));
        rows = rows.filter((r) => !lostIds.has(r.user_id));
        // Guests, and everyone when the new channel is private, can no longer read the messages.
        const noAccess = losing.filter((r) => isGuest(r) || newStream.invite_only).map((r) => r.user_id);
        const deletion: ZulipEvent = { type: 'delete_message', message_ids: ids, message_type: 'stream', stream_id: e.stream.id, topic: m.topic };
        if (noAccess.length) afterCommit(() => services.events.send(e.realm.id, deletion, noAccess));
      }
      const have = new Set(rows.map((r) => `${r.user_id}:${r.message_id}`));
      const inserts: UserMessageRow[] = [];
      for (const sub of newSubs) {
        if (oldIds.has(sub.user_id)) continue;
        gaining.push(sub.user_id);
        for (const id of ids) if (!have.has(`${sub.user_id}:${id}`)) inserts.push({ user_id: sub.user_id, message_id: id, flags: FLAG_BITS.read });
      }
      await bulkInsertUserMessages(tx, inserts);
      for (const row of inserts) rows.push(row);
      await refreshFirstMessageId(services, tx, afterCommit, e.realm, e.stream);
      await refreshFirstMessageId(services, tx, afterCommit, e.realm, newStream);
    }

    const moved = e.topic && e.stream && (e.notifyOldThread || e.notifyNewThread || e.topic.toggle) ? await fetchMoveAftermath(tx, e, ids) : null;

    if (e.topic && e.stream && e.propagateMode !== 'change_one') {
      await moveTopicPolicies(services, tx, afterCommit, e.realm, e.stream, m.topic, newStream ?? e.stream, e.topic.name);
    }

    const flagsOfEdited = new Map<number, number>();
    for (const r of rows) {
      if (r.message_id !== m.id) continue;
      let f = r.flags;
      if (e.content) {
        const c = e.content;
        f &= ~MENTION_FLAGS;
        if (c.mentioned.has(r.user_id)) f |= FLAG_BITS.mentioned;
        if (c.rendered.streamWildcard) f |= FLAG_BITS.stream_wildcard_mentioned;
        if (c.rendered.topicWildcard && c.topicParticipants.has(r.user_id)) f |= FLAG_BITS.topic_wildcard_mentioned;
        if (c.rendered.alertWordUserIds.has(r.user_id)) f |= FLAG_BITS.has_alert_word;
        if (f !== r.flags) await setUserMessageFlagsRow(tx, r.user_id, m.id, f);
      }
      flagsOfEdited.set(r.user_id, f);
    }

    const event: ZulipEvent = {
      type: 'update_message',
      user_id: e.editor.id,
      edit_timestamp: ts,
      message_id: m.id,
      message_ids: ids,
      rendering_only: false,
    };
    if (e.stream) {
      event.stream_id = e.stream.id;
      event.stream_name = e.stream.name;
    }
    if (e.content) {
      event.orig_content = m.content;
      event.orig_rendered_content = m.rendered_content;
      event.content = e.content.raw;
      event.rendered_content = e.content.rendered.html;
      event.is_me_message = isMeMessage(e.content.raw);
    }
    if (e.topic) {
      event.propagate_mode = e.propagateMode;
      if (newStream) event.new_stream_id = newStream.id;
      if (e.topic.name !== m.topic) {
        event.orig_subject = m.topic;
        event.subject = e.topic.name;
        event.topic_links = topicLinks(e.topic.name, await fetchLinkifiers(tx, e.realm.id));
      }
    }
    const recipients: EventRecipient[] = [];
    const seen = new Set<number>();
    for (const [id, f] of flagsOfEdited) {
      recipients.push({ id, flags: sharedFlagsList(f) });
      seen.add(id);
    }
    for (const r of rows) {
      if (seen.has(r.user_id)) continue;
      seen.add(r.user_id);
      recipients.push({ id: r.user_id, flags: gaining.includes(r.user_id) ? ['read'] : [] });
    }
    afterCommit(() => services.events.send(e.realm.id, event, recipients));
    return moved;
  });
  if (aftermath) await sendMoveNotifications(services, e, aftermath);
}

interface MoveAftermath {
  /** Zulip's moved_all_visible_messages: change_all, or nothing the mover can read is left behind. */
  movedAll: boolean;
  /** The new topic already had messages the mover can read. */
  preexisting: boolean;
  /** Who followed the old topic, when all of it moved (their follows move with it). */
  oldTopicFollowers: number[] | null;
}

/**
 * What the notifications of a move depend on, read after the messages moved and before the
 * topic's visibility policies do. Readable means what Zulip's bulk_access_stream_messages_query
 * allows: everything in a channel with shared history, else the mover's own copies.
 */
async function fetchMoveAftermath(tx: Tx, e: PreparedEdit, ids: readonly number[]): Promise<MoveAftermath> {
  const from = e.stream!;
  const to = e.topic!.newStream ?? from;
  const readable = (s: Stream) => (s.history_public_to_subscribers ? null : e.editor.id);
  const movedAll = e.propagateMode === 'change_all' || (await fetchTopicMessagesNewestFirst(tx, from.id, e.message.topic_lc, 1, readable(from))).length === 0;
  const moved = new Set(ids);
  // At most ids.length of these are moved messages, so one more tells whether any other exists.
  const inNewTopic = await fetchTopicMessagesNewestFirst(tx, to.id, topicKey(e.topic!.name), ids.length + 1, readable(to));
  return {
    movedAll,
    preexisting: inNewTopic.some((r) => !moved.has(r.id)),
    oldTopicFollowers: movedAll ? await fetchTopicFollowers(tx, from.id, e.message.topic_lc) : null,
  };
}

async function fetchTopicFollowers(db: Tx, streamId: number, topicLc: string): Promise<number[]> {
  const holders = await fetchUserIdsWithTopicPolicy(db, streamId, topicLc);
  return (await fetchUserTopicsForTopic(db, holders, streamId, topicLc)).filter((r) => r.visibility_policy === VISIBILITY_FOLLOWED).map((r) => r.user_id);
}

/**
 * The Notification Bot's messages after a move, as Zulip's do_update_message sends them: a
 * resolve/unresolve notice for a rename that only toggles "✔ " (no content or channel change);
 * "moved here" in the new topic unless send_notification_to_new_thread is false or the move is
 * only such a toggle; "moved to" in the old topic when send_notification_to_old_thread is true.
 * Each starts read for the mover.
 */
async function sendMoveNotifications(services: ActionServices, e: PreparedEdit, a: MoveAftermath): Promise<void> {
  const t = e.topic!;
  const from = e.stream!;
  const to = t.newStream ?? from;
  const db = services.db.kysely;
  const bot = await fetchSystemBot(db, services.config, e.realm, 'notification');
  const topicEdited = t.name !== e.message.topic;
  const byMover = (id: number) => id === e.editor.id;
  if (topicEdited && !e.content && !t.newStream && t.toggle) await sendResolveNotification(services, e, bot, t.toggle, a);
  const summary: MoveSummary = {
    user: e.editor,
    from: { channel: from, topic: e.message.topic },
    to: { channel: to, topic: t.name },
    messageId: e.message.id,
    count: t.moved.length,
    movedAll: a.movedAll,
    preexisting: a.preexisting,
    realmUrl: realmUrl(services.config, e.realm),
  };
  if (e.notifyNewThread && (t.newStream || (topicEdited && !t.toggle))) {
    await sendNotificationBotMessage(services, e.realm, bot, to, t.name, newThreadNotificationContent(summary), byMover);
  }
  if (e.notifyOldThread) await sendNotificationBotMessage(services, e.realm, bot, from, e.message.topic, oldThreadNotificationContent(summary), byMover);
}

/**
 * Zulip's maybe_send_resolve_topic_notifications: undoing a resolve (or unresolve) within
 * RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS deletes the notice it sent, when that is still the
 * topic's last message, instead of adding another. The notice starts unread only for
 * subscribers whose resolved_topic_notice_auto_read_policy is "never", or "except_followed"
 * while they follow the topic.
 */
async function sendResolveNotification(services: ActionServices, e: PreparedEdit, bot: User, toggle: 'resolved' | 'unresolved', a: MoveAftermath): Promise<void> {
  const db = services.db.kysely;
  const stream = e.stream!;
  const key = topicKey(e.topic!.name);
  const [last] = await fetchTopicMessagesNewestFirst(db, stream.id, key, 1, null);
  const previous = last ? (await fetchMessagesByIds(db, e.realm.id, [last.id]))[0] : undefined;
  if (previous && previous.sender_id === bot.id && isResolveNotificationContent(previous.content) && now() - previous.date_sent <= RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS) {
    await doDeleteMessage(services, e.realm, previous, stream);
    return;
  }
  const subscribers = (await fetchChannelRecipients(db, stream.id)).filter((r) => !r.is_bot);
  const followers = new Set(a.oldTopicFollowers ?? (await fetchTopicFollowers(db, stream.id, key)));
  const unread = new Set<number>();
  for (const r of await fetchUserSettingsRows(db, subscribers.map((s) => s.user_id))) {
    const policy = userSettings(r).resolved_topic_notice_auto_read_policy;
    if (policy === 'never' || (policy === 'except_followed' && followers.has(r.id))) unread.add(r.id);
  }
  const content = resolveNotificationContent(e.editor, toggle);
  await sendNotificationBotMessage(services, e.realm, bot, stream, e.topic!.name, content, (id) => id === e.editor.id || !unread.has(id));
}

/**
 * Zulip's internal_send_stream_message from the Notification Bot: the ordinary send path, with
 * the recipients `startsRead` picks marked read. A message the channel refuses (say, a topic its
 * topics policy no longer allows) is logged and skipped, as Zulip's internal_prep_stream_message does.
 */
async function sendNotificationBotMessage(
  services: ActionServices,
  realm: Realm,
  bot: User,
  stream: Stream,
  topic: string,
  content: string,
  startsRead: (userId: number) => boolean,
): Promise<void> {
  let p: PreparedMessage;
  try {
    p = await checkSendMessage(services, realm, bot, { type: 'stream', to: String(stream.id), topic, content, client: 'Internal' });
  } catch (err) {
    if (!(err instanceof JsonableError)) throw err;
    services.log.warn({ err, streamId: stream.id, topic }, 'Notification Bot message not sent');
    return;
  }
  p.flags.forEach((f, id) => {
    if (startsRead(id)) p.flags.set(id, f | FLAG_BITS.read);
  });
  await doSendMessage(services, p);
}

/**
 * When a whole topic moves, its visibility policies move with it (Zulip 8.0): each user's
 * policy for the old topic is set on the new one unless they already have one there, then
 * cleared. Users who cannot read a new private channel just lose the old policy.
 */
async function moveTopicPolicies(
  services: ActionServices,
  tx: Tx,
  afterCommit: (cb: () => void) => void,
  realm: Realm,
  from: Stream,
  fromTopic: string,
  to: Stream,
  toTopic: string,
): Promise<void> {
  if (from.id === to.id && topicKey(fromTopic) === topicKey(toTopic)) return;
  if (await topicHasMessages(tx, from.id, topicKey(fromTopic))) return;
  const holders = await fetchUserIdsWithTopicPolicy(tx, from.id, topicKey(fromTopic));
  if (holders.length === 0) return;
  const old = await fetchUserTopicsForTopic(tx, holders, from.id, topicKey(fromTopic));
  const already = new Set((await fetchUserTopicsForTopic(tx, holders, to.id, topicKey(toTopic))).map((r) => r.user_id));
  const readers = to.invite_only ? new Set((await fetchChannelRecipients(tx, to.id)).map((r) => r.user_id)) : null;
  const byPolicy = new Map<number, number[]>();
  for (const r of old) {
    if (already.has(r.user_id) || (readers && !readers.has(r.user_id))) continue;
    const list = byPolicy.get(r.visibility_policy) ?? [];
    list.push(r.user_id);
    byPolicy.set(r.visibility_policy, list);
  }
  for (const [policy, users] of byPolicy) {
    await setUserTopicPolicies(services, tx, afterCommit, { realmId: realm.id, streamId: to.id, topic: toTopic }, users, policy);
  }
  await setUserTopicPolicies(services, tx, afterCommit, { realmId: realm.id, streamId: from.id, topic: fromTopic }, holders, VISIBILITY_INHERIT);
}

/** Sets a channel's first_message_id to its oldest message when that changed, announcing it. */
async function refreshFirstMessageId(services: ActionServices, tx: Tx, afterCommit: (cb: () => void) => void, realm: Realm, stream: Stream): Promise<void> {
  const current = (await fetchStreamAccessRows(tx, [stream.id])).get(stream.id)?.first_message_id ?? null;
  const next = await fetchFirstMessageId(tx, stream.id);
  if (next === current) return;
  await updateStreamFirstMessageId(tx, stream.id, next);
  const [users, subscribers, m] = await Promise.all([fetchActiveUserRoles(tx, realm.id), fetchChannelRecipients(tx, stream.id), loadGroupMembership(tx, realm.id)]);
  const audience = metadataAccessUserIds(stream, users, new Set(subscribers.map((s) => s.user_id)), m);
  const update: ZulipEvent = { type: 'stream', op: 'update', stream_id: stream.id, name: stream.name, property: 'first_message_id', value: next };
  afterCommit(() => services.events.send(realm.id, update, [...audience].sort((a, b) => a - b)));
}

/**
 * Zulip's validate_can_delete_message: can_delete_any_message_group (realm or channel, or a
 * channel administrator) may delete anything; otherwise only one's own messages (or one's
 * bots'), with can_delete_own_message_group, within message_content_delete_limit_seconds.
 */
export async function checkDeleteMessage(services: ActionServices, realm: Realm, user: User, messageId: number): Promise<{ message: Message; stream: Stream | null }> {
  const db = services.db.kysely;
  const settings = realmSettings(realm);
  const { message } = await accessMessage(db, realm, user, messageId);
  const stream = message.type === 'stream' ? ((await fetchStreamById(db, realm.id, message.stream_id ?? 0)) ?? null) : null;
  const m = await loadUserGroupMembership(db, user);
  const anyMessage =
    userHasGroupPermission(m, settings.can_delete_any_message_group, user, REALM_GROUP_SETTING_CONFIG.can_delete_any_message_group) ||
    (stream !== null && (canAdministerChannel(m, user, stream) || hasChannelPermission(m, user, stream, 'can_delete_any_message_group')));
  if (anyMessage) return { message, stream };
  const denied = () => badRequest("You don't have permission to delete this message");
  if (message.sender_id !== user.id) {
    const sender = await fetchUserById(db, realm.id, message.sender_id);
    if (sender?.bot_owner_id !== user.id) throw denied();
  }
  const own =
    userHasGroupPermission(m, settings.can_delete_own_message_group, user, REALM_GROUP_SETTING_CONFIG.can_delete_own_message_group) ||
    (stream !== null && hasChannelPermission(m, user, stream, 'can_delete_own_message_group'));
  if (!own) throw denied();
  const limit = settings.message_content_delete_limit_seconds;
  if (limit !== null && now() - message.date_sent > limit) throw badRequest('The time limit for deleting this message has passed');
  return { message, stream };
}

/** DELETE /messages/{id}: removes the message and announces it (see deleteMessagesInTransaction). */
export async function doDeleteMessage(services: ActionServices, realm: Realm, message: Message, stream: Stream | null): Promise<void> {
  await transaction(services.db, (tx, afterCommit) => deleteMessagesInTransaction(services, tx, afterCommit, realm, [message], stream));
}
