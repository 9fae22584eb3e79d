import type { Tx } from '../../db/index.js';
import type { Realm, Stream, User } from '../../db/tables.js';
import type { StreamWithSubscription } from '../../db/repos/streams.js';
import { fetchStreamWithSubscriptionCached } from '../../db/cached.js';
import { fetchSubscriptionRow } from '../../db/repos/subscriptions.js';
import { fetchUserById } from '../../db/repos/users.js';
import { JsonableError, badRequest, streamDoesNotExist } from '../../errors.js';
import {
  loadUserGroupMembership,
  userHasGroupPermission,
  type GroupMembership,
  type GroupPermissionConfig,
  type GroupSettingValue,
} from '../group_settings.js';
import { REALM_GROUP_SETTING_CONFIG, realmSettings, type RealmGroupSettingName } from '../realm_settings.js';
import { ROLE_GUEST, isAdmin } from '../roles.js';

/**
 * The only way code gets a channel for a caller (design rule 4). Channel permissions follow
 * Zulip's channel security model (zerver/lib/streams.py):
 *
 * - metadata access (seeing that the channel exists, its settings and subscribers): web-public
 *   channels for everyone; subscribers; non-guests for public channels; organization
 *   administrators; members of can_administer_channel_group, can_add_subscribers_group or
 *   can_subscribe_group.
 *   Exactly these users see the channel's subscriber list.
 * - content access (reading history, subscribing oneself): web-public channels for everyone;
 *   subscribers; non-guests for public channels; members of can_subscribe_group or
 *   can_add_subscribers_group.
 *
 * Guests never hold a setting that may not be `role:everyone`. Unknown channels and channels
 * the caller may not see fail identically, so an answer never reveals that a channel exists.
 */

const setting = (defaultGroupName: string, allowEveryoneGroup: boolean): GroupPermissionConfig => ({
  requireSystemGroup: false,
  allowInternetGroup: false,
  allowNobodyGroup: true,
  allowEveryoneGroup,
  defaultGroupName,
});

/** Zulip's Stream.stream_permission_group_settings; 'channel_creator' means the creator alone. */
export const CHANNEL_PERMISSION_CONFIG = {
  can_add_subscribers_group: setting('role:nobody', false),
  can_administer_channel_group: setting('channel_creator', false),
  can_create_topic_group: setting('role:everyone', true),
  can_delete_any_message_group: setting('role:nobody', true),
  can_delete_own_message_group: setting('role:nobody', true),
  can_move_messages_out_of_channel_group: setting('role:nobody', true),
  can_move_messages_within_channel_group: setting('role:nobody', true),
  can_remove_subscribers_group: setting('role:administrators', true),
  can_resolve_topics_group: setting('role:nobody', true),
  can_send_message_group: setting('role:everyone', true),
  can_subscribe_group: setting('role:nobody', false),
} satisfies Record<string, GroupPermissionConfig>;

export type ChannelPermission = keyof typeof CHANNEL_PERMISSION_CONFIG;
export const CHANNEL_PERMISSIONS = Object.keys(CHANNEL_PERMISSION_CONFIG).sort() as ChannelPermission[];
export type ChannelPermissions = Readonly<Record<ChannelPermission, GroupSettingValue>>;

/** Settings whose members see the channel exists (and its subscribers) without subscribing. */
export const METADATA_ACCESS_PERMISSIONS: readonly ChannelPermission[] = [
  'can_administer_channel_group',
  'can_add_subscribers_group',
  'can_subscribe_group',
];
/** Settings whose members may read a private channel's shared history without subscribing. */
export const CONTENT_ACCESS_PERMISSIONS: readonly ChannelPermission[] = ['can_add_subscribers_group', 'can_subscribe_group'];

const NOBODY: GroupSettingValue = Object.freeze({ direct_members: [], direct_subgroups: [] }) as GroupSettingValue;

/**
 * A channel's group-valued settings, from its `permissions` JSON. doCreateStreams writes every
 * one; a missing or malformed value grants nothing rather than everything.
 */
export function channelPermissions(stream: Pick<Stream, 'permissions'>): ChannelPermissions {
  // Parsed once per distinct JSON: every access check and every formatted channel asks.
  let parsed = parsedPermissions.get(stream.permissions);
  if (!parsed) {
    parsed = parseChannelPermissions(stream.permissions);
    if (parsedPermissions.size >= 10_000) parsedPermissions.delete(parsedPermissions.keys().next().value as string);
    parsedPermissions.set(stream.permissions, parsed);
  }
  return parsed;
}

const parsedPermissions = new Map<string, ChannelPermissions>();

function parseChannelPermissions(json: string): ChannelPermissions {
  let raw: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(json);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) raw = parsed as Record<string, unknown>;
  } catch {
    raw = {};
  }
  const out = {} as Record<ChannelPermission, GroupSettingValue>;
  for (const name of CHANNEL_PERMISSIONS) {
    const v = raw[name];
    out[name] = typeof v === 'number' || (v && typeof v === 'object' && 'direct_members' in v) ? (v as GroupSettingValue) : NOBODY;
    // Shared by every caller: frozen so that none can change it for the others.
    if (typeof out[name] === 'object') Object.freeze(out[name]);
  }
  return Object.freeze(out);
}

type Caller = Pick<User, 'id' | 'role'>;

/** Whether the caller holds one of the channel's permission settings. */
export function hasChannelPermission(m: GroupMembership, user: Caller, stream: Pick<Stream, 'permissions'>, name: ChannelPermission): boolean {
  return userHasGroupPermission(m, channelPermissions(stream)[name], user, CHANNEL_PERMISSION_CONFIG[name]);
}

/** Whether the caller holds one of the realm's group-valued settings. */
export function hasRealmPermission(m: GroupMembership, realm: Pick<Realm, 'id' | 'settings'>, user: Caller, name: RealmGroupSettingName): boolean {
  return userHasGroupPermission(m, realmSettings(realm)[name], user, REALM_GROUP_SETTING_CONFIG[name]);
}

type StreamFlags = Pick<Stream, 'invite_only' | 'is_web_public' | 'permissions'>;

/** Whether answering needs the caller's groups (the only part that costs a query). */
function needsGroups(user: Caller, stream: StreamFlags, subscribed: boolean): boolean {
  return !stream.is_web_public && !subscribed && user.role !== ROLE_GUEST && !!stream.invite_only;
}

export function hasContentAccess(user: Caller, stream: StreamFlags, subscribed: boolean, m: GroupMembership | null): boolean {
  if (stream.is_web_public || subscribed) return true;
  if (user.role === ROLE_GUEST) return false;
  if (!stream.invite_only) return true;
  return !!m && CONTENT_ACCESS_PERMISSIONS.some((p) => hasChannelPermission(m, user, stream, p));
}

export function hasMetadataAccess(user: Caller, stream: StreamFlags, subscribed: boolean, m: GroupMembership | null): boolean {
  if (stream.is_web_public || subscribed) return true;
  if (user.role === ROLE_GUEST) return false;
  if (!stream.invite_only || isAdmin(user)) return true;
  return !!m && METADATA_ACCESS_PERMISSIONS.some((p) => hasChannelPermission(m, user, stream, p));
}

/** Zulip's can_administer_accessible_channel: administrators, and members of can_administer_channel_group. */
export function canAdministerChannel(m: GroupMembership, user: Caller, stream: Pick<Stream, 'permissions'>): boolean {
  return isAdmin(user) || hasChannelPermission(m, user, stream, 'can_administer_channel_group');
}

/**
 * The caller, with their group memberships loaded on first use: one small query, and only
 * when a private channel's group settings must be consulted.
 */
export class ChannelCaller {
  private groups: Promise<GroupMembership> | undefined;

  constructor(
    readonly db: Tx,
    readonly realm: Realm,
    readonly user: User,
    preloaded?: GroupMembership,
  ) {
    if (preloaded) this.groups = Promise.resolve(preloaded);
  }

  membership(): Promise<GroupMembership> {
    this.groups ??= loadUserGroupMembership(this.db, this.user);
    return this.groups;
  }

  async contentAccess(stream: StreamFlags, subscribed: boolean): Promise<boolean> {
    const m = needsGroups(this.user, stream, subscribed) ? await this.membership() : null;
    return hasContentAccess(this.user, stream, subscribed, m);
  }

  async metadataAccess(stream: StreamFlags, subscribed: boolean): Promise<boolean> {
    const m = needsGroups(this.user, stream, subscribed) && !isAdmin(this.user) ? await this.membership() : null;
    return hasMetadataAccess(this.user, stream, subscribed, m);
  }

  async channelPermission(stream: Pick<Stream, 'permissions'>, name: ChannelPermission): Promise<boolean> {
    return hasChannelPermission(await this.membership(), this.user, stream, name);
  }

  async realmPermission(name: RealmGroupSettingName): Promise<boolean> {
    return hasRealmPermission(await this.membership(), this.realm, this.user, name);
  }

  async canAdminister(stream: Pick<Stream, 'permissions'>): Promise<boolean> {
    return isAdmin(this.user) || canAdministerChannel(await this.membership(), this.user, stream);
  }
}

export interface StreamAccessOptions {
  /** Refuse archived channels (default true). */
  requireActive?: boolean;
  /** Require content access; false accepts metadata access (default true). */
  requireContentAccess?: boolean;
}

async function checkAccess(
  caller: ChannelCaller,
  found: StreamWithSubscription | undefined,
  error: () => JsonableError,
  opts: StreamAccessOptions,
): Promise<StreamWithSubscription> {
  if (!found) throw error();
  const { stream, subscribed } = found;
  if ((opts.requireActive ?? true) && stream.deactivated) throw error();
  const ok = (opts.requireContentAccess ?? true)
    ? await caller.contentAccess(stream, subscribed)
    : await caller.metadataAccess(stream, subscribed);
  if (!ok) throw error();
  return found;
}

/** Zulip's access_stream_by_id: 400 "Invalid channel ID" for unknown and inaccessible channels alike. */
export async function accessStreamById(
  caller: ChannelCaller,
  streamId: number,
  opts: StreamAccessOptions = {},
): Promise<StreamWithSubscription> {
  const found = await fetchStreamWithSubscriptionCached(caller.db, caller.realm.id, { id: streamId }, caller.user.id);
  return checkAccess(caller, found, () => badRequest('Invalid channel ID'), opts);
}

/** Zulip's access_stream_by_name: 400 "Invalid channel name 'x'" for unknown and inaccessible channels alike. */
export async function accessStreamByName(
  caller: ChannelCaller,
  name: string,
  opts: StreamAccessOptions = {},
): Promise<StreamWithSubscription> {
  const found = await fetchStreamWithSubscriptionCached(caller.db, caller.realm.id, { name }, caller.user.id);
  return checkAccess(caller, found, () => badRequest(`Invalid channel name '${name}'`), opts);
}

export const cannotAdministerChannel = (): JsonableError =>
  new JsonableError('You do not have permission to administer this channel.', 'CANNOT_ADMINISTER_CHANNEL', 400);

/**
 * Zulip's access_stream_for_delete_or_update_requiring_metadata_access: administrators and
 * members of can_administer_channel_group pass (archived channels included); a caller who can
 * read the channel but not administer it gets CANNOT_ADMINISTER_CHANNEL; anyone else
 * "Invalid channel ID".
 */
export async function accessStreamForAdministration(caller: ChannelCaller, streamId: number): Promise<StreamWithSubscription> {
  const found = await fetchStreamWithSubscriptionCached(caller.db, caller.realm.id, { id: streamId }, caller.user.id);
  if (!found) throw badRequest('Invalid channel ID');
  if (await caller.canAdminister(found.stream)) return found;
  if (await caller.contentAccess(found.stream, found.subscribed)) throw cannotAdministerChannel();
  throw badRequest('Invalid channel ID');
}

/**
 * Whether the caller may add other users to a channel they can read: the realm's
 * can_add_subscribers_group, administrators, channel administrators and the channel's
 * can_add_subscribers_group (Zulip's get_streams_to_which_user_cannot_add_subscribers).
 */
export async function canAddSubscribers(caller: ChannelCaller, stream: Pick<Stream, 'permissions'>): Promise<boolean> {
  if (caller.user.role === ROLE_GUEST) return false;
  if (isAdmin(caller.user)) return true;
  if (await caller.realmPermission('can_add_subscribers_group')) return true;
  if (await caller.canAdminister(stream)) return true;
  return caller.channelPermission(stream, 'can_add_subscribers_group');
}

/**
 * Zulip's bulk_can_remove_subscribers_from_streams for removing users other than oneself and
 * one's own bots: administrators always; otherwise, per channel, channel administrators, or
 * callers with metadata access who are in can_remove_subscribers_group.
 */
export async function canRemoveSubscribers(caller: ChannelCaller, streams: readonly StreamWithSubscription[]): Promise<boolean> {
  if (isAdmin(caller.user)) return true;
  if (caller.user.role === ROLE_GUEST) return false;
  for (const { stream, subscribed } of streams) {
    if (await caller.canAdminister(stream)) continue;
    if (!(await caller.metadataAccess(stream, subscribed))) return false;
    if (!(await caller.channelPermission(stream, 'can_remove_subscribers_group'))) return false;
  }
  return true;
}

/**
 * Zulip's can_access_stream_history: whether the caller may read messages sent before they
 * subscribed (or without subscribing). Public channels for non-guests, web-public channels
 * for everyone; otherwise only shared-history channels the caller has content access to.
 */
export async function canAccessStreamHistory(caller: ChannelCaller, accessed: StreamWithSubscription): Promise<boolean> {
  const { stream, subscribed } = accessed;
  if (stream.is_web_public) return true;
  if (!stream.invite_only && caller.user.role !== ROLE_GUEST) return true;
  if (!stream.history_public_to_subscribers) return false;
  return caller.contentAccess(stream, subscribed);
}

/** A channel named by a narrow, with whether the caller may read its history; undefined if no such channel. */
export async function accessStreamForNarrow(
  caller: ChannelCaller,
  operand: number | string,
): Promise<(StreamWithSubscription & { historyAccess: boolean }) | undefined> {
  const key = typeof operand === 'number' ? { id: operand } : { name: operand };
  const found = await fetchStreamWithSubscriptionCached(caller.db, caller.realm.id, key, caller.user.id);
  if (!found) return undefined;
  return { ...found, historyAccess: await canAccessStreamHistory(caller, found) };
}

/** Zulip's check_stream_access_based_on_can_send_message_group: a bot may also post where its owner may. */
export async function checkCanSendMessageGroup(caller: ChannelCaller, stream: Pick<Stream, 'permissions'>): Promise<void> {
  const { user } = caller;
  // Zulip's cross-realm bots (here the system bots) post regardless of the channel's groups.
  if (user.is_system_bot || (await caller.channelPermission(stream, 'can_send_message_group'))) return;
  if (user.is_bot && user.bot_owner_id !== null) {
    const owner = await fetchUserById(caller.db, caller.realm.id, user.bot_owner_id);
    if (owner && hasChannelPermission(await loadUserGroupMembership(caller.db, owner), owner, stream, 'can_send_message_group')) return;
  }
  throw badRequest('You do not have permission to post in this channel.');
}

/**
 * Zulip's access_stream_for_send_message once the group check has passed: web-public and
 * (for non-guests) public channels, subscribers, can_forge_sender, bots whose owner is
 * subscribed, and content access through groups for shared-history channels.
 */
async function senderMayPost(caller: ChannelCaller, accessed: StreamWithSubscription): Promise<boolean> {
  const { stream, subscribed } = accessed;
  const { user } = caller;
  if (stream.is_web_public) return true;
  if (!stream.invite_only && user.role !== ROLE_GUEST) return true;
  // System bots post where the server needs them to, as Zulip's cross-realm bots do.
  if (subscribed || user.can_forge_sender || user.is_system_bot) return true;
  if (user.is_bot && user.bot_owner_id !== null && (await fetchSubscriptionRow(caller.db, user.bot_owner_id, stream.id))?.active) return true;
  if (stream.history_public_to_subscribers && user.role !== ROLE_GUEST) {
    return (await caller.channelPermission(stream, 'can_subscribe_group')) || (await caller.channelPermission(stream, 'can_add_subscribers_group'));
  }
  return false;
}

/** Whether the caller may post to a channel, without throwing (e.g. for compose-box hints). */
export async function canPostToStream(caller: ChannelCaller, accessed: StreamWithSubscription): Promise<boolean> {
  if (accessed.stream.deactivated) return false;
  try {
    await checkCanSendMessageGroup(caller, accessed.stream);
  } catch {
    return false;
  }
  return senderMayPost(caller, accessed);
}

/**
 * The channel a message is being sent to, checked for posting. Unknown channels and channels
 * the sender cannot see (nor post to by any rule) answer STREAM_DOES_NOT_EXIST, with `stream`
 * for names and `stream_id` for IDs; a visible channel the sender may not post to answers
 * "You do not have permission to post in this channel." (can_send_message_group) or
 * "Not authorized to send to channel '<name>'" (archived, or private without access).
 * Two small indexed queries in the common case (the channel with the sender's subscription,
 * then the sender's groups).
 */
export async function accessStreamForSend(caller: ChannelCaller, key: { id: number } | { name: string }): Promise<StreamWithSubscription> {
  const missing = (): JsonableError =>
    'id' in key
      ? new JsonableError(`Channel with ID '${key.id}' does not exist`, 'STREAM_DOES_NOT_EXIST', 400, { stream_id: key.id })
      : streamDoesNotExist(key.name);
  const found = await fetchStreamWithSubscriptionCached(caller.db, caller.realm.id, key, caller.user.id);
  if (!found) throw missing();
  const mayPost = await senderMayPost(caller, found);
  if (!mayPost && !(await caller.metadataAccess(found.stream, found.subscribed))) throw missing();
  await checkCanSendMessageGroup(caller, found.stream);
  if (found.stream.deactivated || !mayPost) {
    throw badRequest(`Not authorized to send to channel '${found.stream.name}'`);
  }
  return found;
}

/** Realm-level channel creation rights of the caller (also reported by POST /register). */
export async function channelCreationRights(
  caller: ChannelCaller,
): Promise<{ public: boolean; private: boolean; webPublic: boolean; subscribeOthers: boolean }> {
  const m = await caller.membership();
  const has = (name: RealmGroupSettingName) => hasRealmPermission(m, caller.realm, caller.user, name);
  return {
    public: has('can_create_public_channel_group'),
    private: has('can_create_private_channel_group'),
    webPublic: realmSettings(caller.realm).enable_spectator_access && has('can_create_web_public_channel_group'),
    subscribeOthers: has('can_add_subscribers_group'),
  };
}

export interface RealmUserRole {
  id: number;
  role: number;
}

/**
 * Every active user who can see a channel exists, and hence its subscriber list (Zulip's
 * can_access_stream_metadata_user_ids): the recipients of channel and peer events.
 * `m` must be the realm-wide membership.
 */
export function metadataAccessUserIds(
  stream: StreamFlags,
  activeUsers: readonly RealmUserRole[],
  subscriberIds: ReadonlySet<number>,
  m: GroupMembership,
): Set<number> {
  const out = new Set<number>();
  for (const u of activeUsers) {
    if (hasMetadataAccess(u, stream, subscriberIds.has(u.id), m)) out.add(u.id);
  }
  return out;
}
