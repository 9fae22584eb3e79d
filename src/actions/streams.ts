import { now, transaction, type Tx } from '../db/index.js';
import type { Realm, Stream, Subscription, User } from '../db/tables.js';
import {
  deleteDefaultStream,
  fetchDefaultStreamIds,
  fetchStreamByName,
  fetchStreamsByIds,
  fetchStreamsByNames,
  insertDefaultStream,
  insertStreamAuditLogs,
  insertStreamIfAbsent,
  isUniqueViolation,
  streamHasNamedTopics,
  streamNameKey,
  updateStreamRow,
  type StreamAuditRow,
  type StreamUpdate,
  type StreamWithSubscription,
} from '../db/repos/streams.js';
import {
  fetchSubscribedStreamIdSet,
  fetchSubscriberIdsByStream,
  fetchSubscriptionRows,
  fetchUsedColors,
  insertSubscriptions,
  setSubscriptionsActive,
  updateSubscriptionRow,
} from '../db/repos/subscriptions.js';
import { fetchActiveUserRoles, fetchUsersByIds, fetchActiveUserIds } from '../db/repos/users.js';
import { JsonableError, badRequest, insufficientPermission, ownerRequired, streamDoesNotExist } from '../errors.js';
import type { ZulipEvent } from '../events/bus.js';
import {
  CHANNEL_PERMISSION_CONFIG,
  CHANNEL_PERMISSIONS,
  canAddSubscribers,
  canRemoveSubscribers,
  channelCreationRights,
  channelPermissions,
  hasMetadataAccess,
  metadataAccessUserIds,
  type ChannelCaller,
  type ChannelPermission,
  type RealmUserRole,
} from '../lib/access/streams.js';
import {
  formatGroupSettingValue,
  formatStream,
  formatSubscription,
  renderStreamDescription,
  streamPostPolicy,
  SUBSCRIPTION_PROPERTIES,
  type StreamFormatContext,
  type SubscriptionProperty,
} from '../lib/format/streams.js';
import { accessUserByEmail, checkUserAccess } from '../lib/access/users.js';
import { GuestSight } from './guest_sight.js';
import { checkGroupSettingValue, loadGroupMembership, type GroupMembership, type GroupSettingValue } from '../lib/group_settings.js';
import { realmSettings } from '../lib/realm_settings.js';
import { ROLE_GUEST, isAdmin, isOwner } from '../lib/roles.js';
import { normalizeColor, pickColors } from '../lib/stream_colors.js';
import { realmUrl } from '../lib/urls.js';
import { MAX_STREAM_NAME_LENGTH } from '../version.js';
import type { ActionServices } from '../services.js';

/**
 * Every change to channels and subscriptions: rows, audit log and the events Zulip sends
 * (zerver/actions/streams.py), the events only after the transaction commits.
 */

type AfterCommit = (cb: () => void) => void;

/** Realm-wide state for deciding who sees a change; read inside the action's transaction. */
interface RealmView {
  active: RealmUserRole[];
  activeIds: Set<number>;
  m: GroupMembership;
}

async function loadRealmView(tx: Tx, realmId: number): Promise<RealmView> {
  const active = await fetchActiveUserRoles(tx, realmId);
  const m = await loadGroupMembership(tx, realmId);
  return { active, activeIds: new Set(active.map((u) => u.id)), m };
}

function formatContext(view: RealmView, subscribers: ReadonlyMap<number, readonly number[]>): StreamFormatContext {
  return {
    subscriberCount: (id) => subscribers.get(id)?.length ?? 0,
    isActiveUser: (id) => view.activeIds.has(id),
    systemGroupName: (id) => {
      const g = view.m.byId.get(id);
      return g?.isSystem ? g.name : undefined;
    },
  };
}

function metadataUsers(view: RealmView, stream: Stream, subscribers: readonly number[] | undefined): Set<number> {
  return metadataAccessUserIds(stream, view.active, new Set(subscribers ?? []), view.m);
}

/** The users a change of these users' subscriptions to channels with these subscribers may concern. */
function concernedUsers(users: readonly User[], subscribers: ReadonlyMap<number, readonly number[]>): Set<number> {
  const ids = new Set(users.map((u) => u.id));
  for (const list of subscribers.values()) for (const id of list) ids.add(id);
  return ids;
}

function send(services: ActionServices, realm: Realm, afterCommit: AfterCommit, event: ZulipEvent, users: Iterable<number>, onlyIf?: { capability: string; value: boolean }): void {
  const ids = [...new Set(users)].sort((a, b) => a - b);
  if (ids.length === 0) return;
  afterCommit(() => services.events.send(realm.id, event, ids, undefined, onlyIf));
}

function streamCreateEvent(stream: Stream, ctx: StreamFormatContext): ZulipEvent {
  return { type: 'stream', op: 'create', streams: [formatStream(stream, ctx)] };
}

function streamDeleteEvent(streams: readonly Stream[]): ZulipEvent {
  return { type: 'stream', op: 'delete', streams: streams.map((s) => ({ stream_id: s.id })), stream_ids: streams.map((s) => s.id) };
}

function streamUpdateEvent(stream: Stream, property: string, value: unknown, extra: Record<string, unknown> = {}): ZulipEvent {
  return { type: 'stream', op: 'update', stream_id: stream.id, name: stream.name, property, value, ...extra };
}

function audit(realm: Realm, actor: User | null, stream: Stream, eventType: string, extra: Record<string, unknown> = {}, userId?: number): StreamAuditRow {
  return {
    realm_id: realm.id,
    acting_user_id: actor?.id ?? null,
    modified_user_id: userId ?? null,
    modified_stream_id: stream.id,
    event_type: eventType,
    event_time: now(),
    extra_data: extra,
  };
}

/** The value of each channel setting for a new channel (Zulip's get_stream_permission_default_group). */
export function defaultChannelPermissions(m: GroupMembership, creator: Pick<User, 'id'> | null): Record<ChannelPermission, GroupSettingValue> {
  const out = {} as Record<ChannelPermission, GroupSettingValue>;
  for (const name of CHANNEL_PERMISSIONS) {
    const group = CHANNEL_PERMISSION_CONFIG[name].defaultGroupName;
    if (group === 'channel_creator') {
      out[name] = creator ? { direct_members: [creator.id], direct_subgroups: [] } : m.systemGroupId('role:nobody');
    } else {
      out[name] = m.systemGroupId(group);
    }
  }
  return out;
}

export interface StreamCreationSpec {
  /** Already stripped and validated (checkStreamName). */
  name: string;
  description: string;
  inviteOnly: boolean;
  isWebPublic: boolean;
  historyPublicToSubscribers: boolean;
  messageRetentionDays: number | null;
  topicsPolicy: string;
  /** A channel folder of the realm (checked by accessChannelFolder), or none. */
  folderId?: number | null;
  /** Validated values; settings left out take Zulip's defaults. */
  permissions: Partial<Record<ChannelPermission, GroupSettingValue>>;
  isDefault: boolean;
}

export interface SubscriptionPlan {
  /** Channels to create, then subscribe to. */
  create: readonly StreamCreationSpec[];
  /** Existing channels to subscribe to. */
  streams: readonly Stream[];
  users: readonly User[];
  /** Requested colors (lowercase #rrggbb) by channel name key. */
  colors?: ReadonlyMap<string, string>;
}

export interface SubscriptionPair {
  user: User;
  stream: Stream;
}

export interface SubscriptionResult {
  created: Stream[];
  subscribed: SubscriptionPair[];
  alreadySubscribed: SubscriptionPair[];
}

const byId = (a: { id: number }, b: { id: number }): number => a.id - b.id;

/**
 * Creates the planned channels and subscribes the users, inside the caller's transaction.
 * Events: `stream create` for new channels (to who may see them) and for subscribers newly
 * able to see a channel, `subscription add` to each subscriber (skipped for a user being
 * created, who has no event queue yet), `subscription peer_add` to everyone who sees the
 * channel's subscribers.
 */
export async function addSubscriptionsInTransaction(
  tx: Tx,
  afterCommit: AfterCommit,
  services: ActionServices,
  realm: Realm,
  actor: User | null,
  plan: SubscriptionPlan,
  opts: { fromUserCreation?: boolean } = {},
): Promise<SubscriptionResult> {
  const view = await loadRealmView(tx, realm.id);
  const audits: StreamAuditRow[] = [];
  const created: Stream[] = [];
  const streams = new Map<number, Stream>(plan.streams.map((s) => [s.id, s]));
  const defaults = defaultChannelPermissions(view.m, actor);
  for (const spec of plan.create) {
    const row = await insertStreamIfAbsent(tx, {
      realm_id: realm.id,
      name: spec.name,
      name_lc: streamNameKey(spec.name),
      description: spec.description,
      rendered_description: renderStreamDescription(spec.description, realmUrl(services.config, realm)),
      invite_only: spec.inviteOnly ? 1 : 0,
      is_web_public: spec.isWebPublic ? 1 : 0,
      history_public_to_subscribers: spec.historyPublicToSubscribers ? 1 : 0,
      date_created: now(),
      creator_id: actor?.id ?? null,
      message_retention_days: spec.messageRetentionDays,
      topics_policy: spec.topicsPolicy,
      folder_id: spec.folderId ?? null,
      permissions: JSON.stringify({ ...defaults, ...spec.permissions }),
    });
    if (!row) {
      // Created concurrently by someone else: subscribe to it like any existing channel.
      const existing = await fetchStreamByName(tx, realm.id, spec.name);
      if (existing) streams.set(existing.id, existing);
      continue;
    }
    created.push(row);
    streams.set(row.id, row);
    audits.push(audit(realm, actor, row, 'channel_created'));
    if (spec.isDefault) await insertDefaultStream(tx, realm.id, row.id);
  }
  const allStreams = [...streams.values()].sort(byId);
  const streamIds = allStreams.map((s) => s.id);
  const users = [...new Map(plan.users.map((u) => [u.id, u])).values()].sort(byId);
  const before = await fetchSubscriberIdsByStream(tx, streamIds);
  const sight = await GuestSight.take(tx, realm, view.active, view.m, async () => concernedUsers(users, before));

  const rows = await fetchSubscriptionRows(tx, users.map((u) => u.id), streamIds);
  const rowOf = new Map(rows.map((r) => [`${r.user_id}:${r.stream_id}`, r]));
  const already: SubscriptionPair[] = [];
  const toActivate: { user: User; stream: Stream; row: Subscription }[] = [];
  const toAdd: SubscriptionPair[] = [];
  for (const user of users) {
    for (const stream of allStreams) {
      const row = rowOf.get(`${user.id}:${stream.id}`);
      if (row?.active) already.push({ user, stream });
      else if (row) toActivate.push({ user, stream, row: { ...row, active: 1 } });
      else toAdd.push({ user, stream });
    }
  }

  const requested = new Map<number, string>();
  for (const s of allStreams) {
    const c = plan.colors?.get(streamNameKey(s.name));
    if (c !== undefined) requested.set(s.id, c);
  }
  const used = await fetchUsedColors(tx, [...new Set(toAdd.map((p) => p.user.id))]);
  const newRows: Subscription[] = [];
  for (const user of users) {
    const mine = toAdd.filter((p) => p.user.id === user.id).map((p) => p.stream.id);
    if (mine.length === 0) continue;
    const colors = pickColors(used.get(user.id) ?? [], requested, mine);
    for (const streamId of mine) {
      newRows.push({
        user_id: user.id,
        stream_id: streamId,
        realm_id: realm.id,
        active: 1,
        is_muted: 0,
        pin_to_top: 0,
        color: colors.get(streamId)!,
        desktop_notifications: null,
        audible_notifications: null,
        push_notifications: null,
        email_notifications: null,
        wildcard_mentions_notify: null,
      });
    }
  }
  await insertSubscriptions(tx, newRows.map((r) => ({ user_id: r.user_id, stream_id: r.stream_id, realm_id: r.realm_id, color: r.color })));
  await setSubscriptionsActive(tx, toActivate.map((p) => ({ user_id: p.user.id, stream_id: p.stream.id })), true);
  for (const p of toAdd) audits.push(audit(realm, actor, p.stream, 'subscription_created', {}, p.user.id));
  for (const p of toActivate) audits.push(audit(realm, actor, p.stream, 'subscription_activated', {}, p.user.id));
  await insertStreamAuditLogs(tx, audits);

  const after = await fetchSubscriberIdsByStream(tx, streamIds);
  const preCtx = formatContext(view, before);
  const postCtx = formatContext(view, after);
  const preMeta = new Map(allStreams.map((s) => [s.id, metadataUsers(view, s, before.get(s.id))]));
  for (const s of created) send(services, realm, afterCommit, streamCreateEvent(s, preCtx), preMeta.get(s.id)!);

  const subRows = new Map<string, Subscription>();
  for (const r of newRows) subRows.set(`${r.user_id}:${r.stream_id}`, r);
  for (const p of toActivate) subRows.set(`${p.user.id}:${p.stream.id}`, p.row);
  const subscribed: SubscriptionPair[] = [...toAdd, ...toActivate.map(({ user, stream }) => ({ user, stream }))];
  const altered = new Map<number, Set<number>>();
  for (const p of subscribed) {
    let set = altered.get(p.stream.id);
    if (!set) altered.set(p.stream.id, (set = new Set()));
    set.add(p.user.id);
  }

  if (!opts.fromUserCreation) {
    for (const stream of allStreams) {
      const gainers = [...(altered.get(stream.id) ?? [])].filter((id) => !preMeta.get(stream.id)!.has(id));
      send(services, realm, afterCommit, streamCreateEvent(stream, postCtx), gainers);
    }
    for (const user of users) {
      const mine = subscribed.filter((p) => p.user.id === user.id).sort((a, b) => byId(a.stream, b.stream));
      if (mine.length === 0) continue;
      const dicts = mine.map((p) =>
        formatSubscription(p.stream, subRows.get(`${user.id}:${p.stream.id}`)!, postCtx, after.get(p.stream.id) ?? []),
      );
      send(services, realm, afterCommit, { type: 'subscription', op: 'add', subscriptions: dicts }, [user.id]);
    }
  }
  await sight?.announce(tx, services, afterCommit, realm, view.active);
  for (const stream of allStreams) {
    const changed = altered.get(stream.id);
    if (!changed) continue;
    const peers = [...metadataUsers(view, stream, after.get(stream.id))].filter((id) => !changed.has(id));
    const event = { type: 'subscription', op: 'peer_add', stream_ids: [stream.id], user_ids: [...changed].sort((a, b) => a - b) };
    send(services, realm, afterCommit, event, peers);
  }
  return { created, subscribed, alreadySubscribed: already };
}

/** Creates channels and subscribes users in one transaction (POST /users/me/subscriptions). */
export async function doAddSubscriptions(services: ActionServices, realm: Realm, actor: User | null, plan: SubscriptionPlan): Promise<SubscriptionResult> {
  return transaction(services.db, (tx, afterCommit) => addSubscriptionsInTransaction(tx, afterCommit, services, realm, actor, plan));
}

/**
 * Subscribes a user being created to the realm's default channels, inside the creating
 * transaction. Call it after the user's row and group memberships exist and after queuing the
 * user-creation event, so that peers learn of the user before the peer_add events.
 */
export async function subscribeNewUserToDefaultStreams(
  tx: Tx,
  afterCommit: AfterCommit,
  services: ActionServices,
  realm: Realm,
  user: User,
  extraStreamIds: readonly number[] = [],
  includeDefaults = true,
): Promise<void> {
  const defaults = includeDefaults ? await fetchDefaultStreamIds(tx, realm.id) : [];
  const ids = [...new Set([...defaults, ...extraStreamIds])];
  const streams = (await fetchStreamsByIds(tx, realm.id, ids)).filter((s) => !s.deactivated);
  if (streams.length === 0) return;
  await addSubscriptionsInTransaction(tx, afterCommit, services, realm, null, { create: [], streams, users: [user] }, { fromUserCreation: true });
}

export interface RemovalResult {
  removed: SubscriptionPair[];
  notRemoved: SubscriptionPair[];
}

/**
 * Unsubscribes users. Events: `subscription remove` to each user, `stream delete` to those
 * who can no longer see the channel at all, `subscription peer_remove` to everyone who still
 * sees its subscribers. Subscription rows are kept inactive, with their personal settings.
 */
export async function doRemoveSubscriptions(
  services: ActionServices,
  realm: Realm,
  actor: User | null,
  users: readonly User[],
  streams: readonly Stream[],
): Promise<RemovalResult> {
  return transaction(services.db, async (tx, afterCommit) => {
    const view = await loadRealmView(tx, realm.id);
    const uniqueUsers = [...new Map(users.map((u) => [u.id, u])).values()].sort(byId);
    const uniqueStreams = [...new Map(streams.map((s) => [s.id, s])).values()];
    const rows = await fetchSubscriptionRows(tx, uniqueUsers.map((u) => u.id), uniqueStreams.map((s) => s.id));
    const active = new Set(rows.filter((r) => r.active).map((r) => `${r.user_id}:${r.stream_id}`));
    const removed: SubscriptionPair[] = [];
    const notRemoved: SubscriptionPair[] = [];
    for (const user of uniqueUsers) {
      for (const stream of uniqueStreams) {
        if (active.has(`${user.id}:${stream.id}`)) removed.push({ user, stream });
        else notRemoved.push({ user, stream });
      }
    }
    const pairs = removed;
    if (pairs.length === 0) return { removed, notRemoved };
    const sight = await GuestSight.take(tx, realm, view.active, view.m, async () =>
      concernedUsers(uniqueUsers, await fetchSubscriberIdsByStream(tx, uniqueStreams.map((s) => s.id))),
    );
    await setSubscriptionsActive(tx, pairs.map((p) => ({ user_id: p.user.id, stream_id: p.stream.id })), false);
    await insertStreamAuditLogs(tx, pairs.map((p) => audit(realm, actor, p.stream, 'subscription_deactivated', {}, p.user.id)));
    const after = await fetchSubscriberIdsByStream(tx, uniqueStreams.map((s) => s.id));

    for (const user of uniqueUsers) {
      const mine = pairs.filter((p) => p.user.id === user.id).map((p) => p.stream).sort(byId);
      if (mine.length === 0) continue;
      const event = { type: 'subscription', op: 'remove', subscriptions: mine.map((s) => ({ name: s.name, stream_id: s.id })) };
      send(services, realm, afterCommit, event, [user.id]);
      const lost = mine.filter((s) => !hasMetadataAccess(user, s, false, view.m));
      if (lost.length > 0) send(services, realm, afterCommit, streamDeleteEvent(lost), [user.id]);
    }
    await sight?.announce(tx, services, afterCommit, realm, view.active);
    for (const stream of uniqueStreams) {
      const changed = new Set(pairs.filter((p) => p.stream.id === stream.id).map((p) => p.user.id));
      if (changed.size === 0) continue;
      const peers = [...metadataUsers(view, stream, after.get(stream.id))].filter((id) => !changed.has(id));
      const event = { type: 'subscription', op: 'peer_remove', stream_ids: [stream.id], user_ids: [...changed].sort((a, b) => a - b) };
      send(services, realm, afterCommit, event, peers);
    }
    return { removed, notRemoved };
  });
}

/**
 * Applies a change to one channel row and notifies everyone who can see the channel:
 * users who gain sight of it get `stream create` (and its subscribers as `peer_add`), users
 * who lose it get `stream delete`, the others `stream update` with `events(updated)`.
 */
async function changeStream(
  services: ActionServices,
  realm: Realm,
  stream: Stream,
  changes: StreamUpdate,
  audits: (updated: Stream) => StreamAuditRow[],
  events: (updated: Stream, ctx: StreamFormatContext) => ZulipEvent[],
): Promise<Stream> {
  return transaction(services.db, async (tx, afterCommit) => {
    const view = await loadRealmView(tx, realm.id);
    const subscribers = await fetchSubscriberIdsByStream(tx, [stream.id]);
    const before = metadataUsers(view, stream, subscribers.get(stream.id));
    await updateStreamRow(tx, stream.id, changes);
    const updated = { ...stream, ...changes } as Stream;
    await insertStreamAuditLogs(tx, audits(updated));
    const after = metadataUsers(view, updated, subscribers.get(stream.id));
    const ctx = formatContext(view, subscribers);
    const gainers = [...after].filter((id) => !before.has(id));
    const losers = [...before].filter((id) => !after.has(id));
    const stayers = [...after].filter((id) => before.has(id));
    for (const event of events(updated, ctx)) send(services, realm, afterCommit, event, stayers);
    // The subscribers follow as peer_add, from which clients count them: start the count at 0.
    send(services, realm, afterCommit, streamCreateEvent(updated, { ...ctx, subscriberCount: () => 0 }), gainers);
    const subs = subscribers.get(stream.id) ?? [];
    if (subs.length > 0) {
      send(services, realm, afterCommit, { type: 'subscription', op: 'peer_add', stream_ids: [stream.id], user_ids: [...subs] }, gainers);
    }
    send(services, realm, afterCommit, streamDeleteEvent([updated]), losers);
    return updated;
  });
}

export async function doRenameStream(services: ActionServices, realm: Realm, actor: User, stream: Stream, newName: string): Promise<Stream> {
  try {
    return await changeStream(
      services,
      realm,
      stream,
      { name: newName, name_lc: streamNameKey(newName) },
      (s) => [audit(realm, actor, s, 'channel_name_changed', { old_value: stream.name, new_value: newName })],
      // Keyed by ID, with the old name in `name`, as Zulip does.
      (s) => [{ ...streamUpdateEvent(s, 'name', newName), name: stream.name }],
    );
  } catch (e) {
    // Another channel took the name after checkStreamRename.
    if (isUniqueViolation(e)) throw new JsonableError(`Channel '${newName}' already exists`, 'STREAM_ALREADY_EXISTS', 400);
    throw e;
  }
}

export async function doChangeStreamDescription(services: ActionServices, realm: Realm, actor: User, stream: Stream, description: string): Promise<Stream> {
  const rendered = renderStreamDescription(description, realmUrl(services.config, realm));
  return changeStream(
    services,
    realm,
    stream,
    { description, rendered_description: rendered },
    (s) => [audit(realm, actor, s, 'channel_property_changed', { property: 'description', old_value: stream.description, new_value: description })],
    (s) => [streamUpdateEvent(s, 'description', description, { rendered_description: rendered })],
  );
}

export interface StreamPrivacy {
  inviteOnly: boolean;
  historyPublicToSubscribers: boolean;
  isWebPublic: boolean;
}

export async function doChangeStreamPermission(services: ActionServices, realm: Realm, actor: User, stream: Stream, privacy: StreamPrivacy): Promise<Stream> {
  const changes = {
    invite_only: privacy.inviteOnly ? 1 : 0,
    history_public_to_subscribers: privacy.historyPublicToSubscribers ? 1 : 0,
    is_web_public: privacy.isWebPublic ? 1 : 0,
  };
  return changeStream(
    services,
    realm,
    stream,
    changes,
    (s) =>
      (['invite_only', 'history_public_to_subscribers', 'is_web_public'] as const)
        .filter((p) => stream[p] !== s[p])
        .map((p) => audit(realm, actor, s, 'channel_property_changed', { property: p, old_value: !!stream[p], new_value: !!s[p] })),
    (s) => [
      streamUpdateEvent(s, 'invite_only', !!s.invite_only, {
        history_public_to_subscribers: !!s.history_public_to_subscribers,
        is_web_public: !!s.is_web_public,
      }),
    ],
  );
}

/** Changes one group-valued channel setting to an already validated value. */
export async function doChangeStreamGroupSetting(
  services: ActionServices,
  realm: Realm,
  actor: User,
  stream: Stream,
  setting: ChannelPermission,
  value: GroupSettingValue,
): Promise<Stream> {
  const old = channelPermissions(stream);
  const permissions = JSON.stringify({ ...old, [setting]: value });
  return changeStream(
    services,
    realm,
    stream,
    { permissions },
    (s) => [audit(realm, actor, s, 'channel_group_based_setting_changed', { property: setting, old_value: old[setting], new_value: value })],
    (s, ctx) => {
      const events = [streamUpdateEvent(s, setting, formatGroupSettingValue(value, ctx.isActiveUser))];
      if (setting === 'can_send_message_group') {
        const before = streamPostPolicy(old.can_send_message_group, ctx);
        const after = streamPostPolicy(value, ctx);
        if (before !== after) {
          events.push(streamUpdateEvent(s, 'stream_post_policy', after), streamUpdateEvent(s, 'is_announcement_only', after === 2));
        }
      }
      return events;
    },
  );
}

/** Zulip's do_change_stream_folder; folder null takes the channel out of its folder. */
export async function doChangeStreamFolder(services: ActionServices, realm: Realm, actor: User, stream: Stream, folderId: number | null): Promise<Stream> {
  return changeStream(
    services,
    realm,
    stream,
    { folder_id: folderId },
    (s) => [audit(realm, actor, s, 'channel_folder_changed', { old_value: stream.folder_id, new_value: folderId })],
    (s) => [streamUpdateEvent(s, 'folder_id', folderId)],
  );
}

export async function doSetStreamTopicsPolicy(services: ActionServices, realm: Realm, actor: User, stream: Stream, policy: string): Promise<Stream> {
  return changeStream(
    services,
    realm,
    stream,
    { topics_policy: policy },
    (s) => [audit(realm, actor, s, 'channel_property_changed', { property: 'topics_policy', old_value: stream.topics_policy, new_value: policy })],
    (s) => [streamUpdateEvent(s, 'topics_policy', policy)],
  );
}

export async function doSetStreamMessageRetentionDays(services: ActionServices, realm: Realm, actor: User, stream: Stream, days: number | null): Promise<Stream> {
  return changeStream(
    services,
    realm,
    stream,
    { message_retention_days: days },
    (s) => [audit(realm, actor, s, 'channel_message_retention_days_changed', { old_value: stream.message_retention_days, new_value: days })],
    (s) => [streamUpdateEvent(s, 'message_retention_days', days)],
  );
}

async function sendDefaultStreams(services: ActionServices, tx: Tx, realm: Realm, afterCommit: AfterCommit): Promise<void> {
  const ids = await fetchDefaultStreamIds(tx, realm.id);
  const audience = (await fetchActiveUserRoles(tx, realm.id)).filter((u) => u.role !== ROLE_GUEST).map((u) => u.id);
  send(services, realm, afterCommit, { type: 'default_streams', default_streams: ids }, audience);
}

export async function doAddDefaultStream(services: ActionServices, realm: Realm, stream: Stream): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await insertDefaultStream(tx, realm.id, stream.id);
    await sendDefaultStreams(services, tx, realm, afterCommit);
  });
}

export async function doRemoveDefaultStream(services: ActionServices, realm: Realm, stream: Stream): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await deleteDefaultStream(tx, realm.id, stream.id);
    await sendDefaultStreams(services, tx, realm, afterCommit);
  });
}

/**
 * Archives a channel: it stops accepting messages and leaves the default channels;
 * subscriptions are kept. Clients that declared the `archived_channels` capability get
 * `stream update is_archived`; the others `stream delete`, as Zulip does since feature level 378.
 */
export async function doArchiveStream(services: ActionServices, realm: Realm, actor: User, stream: Stream): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    const view = await loadRealmView(tx, realm.id);
    const subscribers = await fetchSubscriberIdsByStream(tx, [stream.id]);
    const audience = metadataUsers(view, stream, subscribers.get(stream.id));
    await updateStreamRow(tx, stream.id, { deactivated: 1 });
    await insertStreamAuditLogs(tx, [audit(realm, actor, stream, 'channel_deactivated')]);
    if ((await fetchDefaultStreamIds(tx, realm.id)).includes(stream.id)) {
      await deleteDefaultStream(tx, realm.id, stream.id);
      await sendDefaultStreams(services, tx, realm, afterCommit);
    }
    const archived = { ...stream, deactivated: 1 };
    send(services, realm, afterCommit, streamUpdateEvent(archived, 'is_archived', true), audience, { capability: 'archived_channels', value: true });
    send(services, realm, afterCommit, streamDeleteEvent([archived]), audience, { capability: 'archived_channels', value: false });
  });
}

/** Unarchives a channel: `stream update is_archived` for archived_channels clients, `stream create` for the others. */
export async function doUnarchiveStream(services: ActionServices, realm: Realm, actor: User, stream: Stream): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    const view = await loadRealmView(tx, realm.id);
    const subscribers = await fetchSubscriberIdsByStream(tx, [stream.id]);
    const restored: Stream = { ...stream, deactivated: 0, is_web_public: stream.invite_only ? 0 : stream.is_web_public };
    await updateStreamRow(tx, stream.id, { deactivated: 0, is_web_public: restored.is_web_public });
    await insertStreamAuditLogs(tx, [audit(realm, actor, stream, 'channel_reactivated')]);
    const audience = metadataUsers(view, restored, subscribers.get(stream.id));
    const ctx = formatContext(view, subscribers);
    send(services, realm, afterCommit, streamUpdateEvent(restored, 'is_archived', false), audience, { capability: 'archived_channels', value: true });
    send(services, realm, afterCommit, streamCreateEvent(restored, ctx), audience, { capability: 'archived_channels', value: false });
  });
}

/**
 * Changes one personal subscription setting. `in_home_view` is stored as !is_muted; changing
 * either sends two events, in_home_view first, as Zulip does since feature level 139.
 */
export async function doChangeSubscriptionProperty(
  services: ActionServices,
  realm: Realm,
  user: User,
  stream: Stream,
  sub: Subscription,
  property: SubscriptionProperty,
  value: boolean | string,
): Promise<void> {
  const column = property === 'in_home_view' ? 'is_muted' : property;
  const stored: string | number = column === 'color' ? String(value) : property === 'in_home_view' ? (value ? 0 : 1) : value ? 1 : 0;
  await transaction(services.db, async (tx, afterCommit) => {
    await updateSubscriptionRow(tx, user.id, stream.id, { [column]: stored });
    await insertStreamAuditLogs(tx, [
      audit(realm, user, stream, 'subscription_property_changed', { property: column, old_value: sub[column], new_value: stored }, user.id),
    ]);
    const event = (p: string, v: unknown): ZulipEvent => ({ type: 'subscription', op: 'update', stream_id: stream.id, property: p, value: v });
    if (column === 'is_muted') {
      send(services, realm, afterCommit, event('in_home_view', !stored), [user.id]);
      send(services, realm, afterCommit, event('is_muted', !!stored), [user.id]);
    } else {
      send(services, realm, afterCommit, event(column, column === 'color' ? stored : !!stored), [user.id]);
    }
  });
}

// ---------------------------------------------------------------------------------------
// Checks: every 4xx of the channel endpoints, raised before any action runs.

const INVALID_NAME_CHARACTER = /\p{Cc}|\p{Cs}|\p{Cn}/u;

/** Zulip's check_stream_name, on an already stripped name. */
export function checkStreamName(name: string): string {
  if (name.trim() === '') throw badRequest("Channel name can't be empty.");
  const chars = [...name];
  if (chars.length > MAX_STREAM_NAME_LENGTH) throw badRequest(`Channel name too long (limit: ${MAX_STREAM_NAME_LENGTH} characters).`);
  const bad = chars.findIndex((c) => INVALID_NAME_CHARACTER.test(c));
  if (bad >= 0) throw badRequest(`Invalid character in channel name, at position ${bad + 1}.`);
  return name;
}

/** Descriptions are single-line: Zulip replaces newlines with spaces. */
export const cleanStreamDescription = (description: string): string => description.replace(/\r?\n/g, ' ');

/** The users named by `principals` (IDs or emails), which must exist and be active. */
export async function resolvePrincipals(services: ActionServices, caller: ChannelCaller, principals: readonly (number | string)[]): Promise<User[]> {
  const out = new Map<number, User>();
  const opts = { allowDeactivated: false, allowBots: true, forAdmin: false };
  const ids = principals.filter((x): x is number => typeof x === 'number');
  // IDs in one query (a request may name hundreds of users); emails one by one.
  const found = new Map((await fetchUsersByIds(caller.db, caller.realm.id, ids)).map((u) => [u.id, u]));
  if (ids.some((id) => !found.has(id))) throw badRequest('No such user');
  for (const principal of principals) {
    const user =
      typeof principal === 'number'
        ? await checkUserAccess(caller.db, caller.realm, caller.user, found.get(principal)!, opts)
        : await accessUserByEmail(caller.db, services.config, caller.realm, caller.user, principal, opts);
    out.set(user.id, user);
  }
  return [...out.values()];
}

/** Validates requested channel settings against the realm's groups and users (Zulip's access_user_group_for_setting). */
export async function checkChannelSettingValues(
  caller: ChannelCaller,
  values: Partial<Record<ChannelPermission, GroupSettingValue>>,
): Promise<Partial<Record<ChannelPermission, GroupSettingValue>>> {
  const names = CHANNEL_PERMISSIONS.filter((n) => values[n] !== undefined);
  if (names.length === 0) return {};
  const m = await loadGroupMembership(caller.db, caller.realm.id);
  const active = new Set(await fetchActiveUserIds(caller.db, caller.realm.id));
  const out: Partial<Record<ChannelPermission, GroupSettingValue>> = {};
  for (const name of names) {
    out[name] = checkGroupSettingValue(m, values[name]!, name, CHANNEL_PERMISSION_CONFIG[name], active);
    if (
      (name === 'can_delete_any_message_group' || name === 'can_delete_own_message_group') &&
      !m.isSystemGroupValue(out[name]!, 'role:nobody') &&
      !(await caller.realmPermission('can_set_delete_message_policy_group'))
    ) {
      throw insufficientPermission();
    }
  }
  return out;
}

/**
 * Zulip's parse_message_retention_days: "realm_default" (null), "unlimited" (-1) or a
 * positive number of days.
 */
export function parseMessageRetentionDays(value: string | number): number | null {
  if (value === 'realm_default') return null;
  if (value === 'unlimited' || value === 'forever') return -1;
  const n = typeof value === 'number' ? value : /^-?\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n <= 0) throw badRequest(`Bad value for 'message_retention_days': ${String(value)}`);
  return n;
}

export const TOPICS_POLICIES = ['inherit', 'allow_empty_topic', 'disable_empty_topic', 'empty_topic_only'] as const;

/**
 * Zulip's validate_topics_policy: anything but `inherit` needs can_set_topics_policy_group,
 * and an existing channel may become `empty_topic_only` only if all its messages are in the
 * empty topic.
 */
export async function checkTopicsPolicy(caller: ChannelCaller, policy: string, stream?: Stream): Promise<void> {
  if (policy !== 'inherit' && !(await caller.realmPermission('can_set_topics_policy_group'))) throw insufficientPermission();
  if (stream && policy === 'empty_topic_only' && (await streamHasNamedTopics(caller.db, stream.id))) {
    const name = realmSettings(caller.realm).empty_topic_display_name;
    throw badRequest(`To enable this configuration, all messages in this channel must be in the "${name}" topic. Consider renaming or deleting topics.`);
  }
}

export interface CreationOptions {
  inviteOnly: boolean;
  isWebPublic: boolean;
  isDefaultStream: boolean;
  historyPublicToSubscribers?: boolean;
  messageRetentionDays: number | null;
  topicsPolicy?: string;
  /** A channel folder of the realm (checked by accessChannelFolder) for new channels. */
  folderId?: number | null;
  permissions: Partial<Record<ChannelPermission, GroupSettingValue>>;
}

/** Zulip's check_channel_creation_permissions plus the settings a new channel may combine. */
async function checkChannelCreation(caller: ChannelCaller, opts: CreationOptions): Promise<void> {
  const rights = await channelCreationRights(caller);
  if (opts.inviteOnly ? !rights.private : !rights.public) throw insufficientPermission();
  if (opts.isDefaultStream && !isAdmin(caller.user)) throw insufficientPermission();
  if (opts.inviteOnly && opts.isDefaultStream) throw badRequest('A default channel cannot be private.');
  if (opts.isWebPublic) {
    if (!realmSettings(caller.realm).enable_spectator_access) throw badRequest('Web-public channels are not enabled.');
    if (!rights.webPublic) throw insufficientPermission();
    if (opts.inviteOnly) throw badRequest('Invalid parameters');
  }
  if (opts.messageRetentionDays !== null && !isOwner(caller.user)) throw ownerRequired();
}

/** A private channel with protected history must let everyone create topics (Zulip's validate_can_create_topic_group_setting_for_protected_history_streams). */
async function checkProtectedHistoryTopics(caller: ChannelCaller, opts: CreationOptions, historyPublic: boolean): Promise<void> {
  const value = opts.permissions.can_create_topic_group;
  if (historyPublic || value === undefined) return;
  const m = await loadGroupMembership(caller.db, caller.realm.id);
  if (typeof value !== 'number' || value !== m.systemGroupId('role:everyone')) {
    throw badRequest('Unsupported parameter combination: history_public_to_subscribers, can_create_topic_group');
  }
}

export interface SubscribeRequest extends CreationOptions {
  subscriptions: readonly { name: string; description?: string; color?: string }[];
  principals?: readonly (number | string)[];
  authorizationErrorsFatal: boolean;
}

/**
 * Every check of POST /users/me/subscriptions (Zulip's add_subscriptions_backend), in Zulip's
 * order; returns what to do and the names of channels skipped for lack of access
 * (authorization_errors_fatal=false).
 */
export async function checkAddSubscriptions(
  services: ActionServices,
  caller: ChannelCaller,
  req: SubscribeRequest,
): Promise<{ plan: SubscriptionPlan; unauthorized: string[] }> {
  if (caller.user.role === ROLE_GUEST) throw badRequest('Not allowed for guest users');
  const colors = new Map<string, string>();
  const wanted = new Map<string, { name: string; description: string }>();
  for (const item of req.subscriptions) {
    const name = checkStreamName(item.name.trim());
    if (item.color !== undefined) {
      const color = normalizeColor(item.color);
      if (color === null) throw badRequest('add.color is not a valid hex color code');
      colors.set(streamNameKey(name), color);
    }
    if (!wanted.has(streamNameKey(name))) wanted.set(streamNameKey(name), { name, description: cleanStreamDescription(item.description ?? '') });
  }
  const permissions = await checkChannelSettingValues(caller, req.permissions);
  const users = req.principals && req.principals.length > 0 ? await resolvePrincipals(services, caller, req.principals) : [caller.user];
  const subscribingOthers = users.some((u) => u.id !== caller.user.id);

  const existing = await fetchStreamsByNames(caller.db, caller.realm.id, [...wanted.values()].map((w) => w.name));
  const existingByKey = new Map(existing.map((s) => [s.name_lc, s]));
  const toCreate = [...wanted.entries()].filter(([key]) => !existingByKey.has(key)).map(([, w]) => w);
  const create: StreamCreationSpec[] = [];
  if (toCreate.length > 0) {
    const opts = { ...req, permissions };
    const historyPublic = req.inviteOnly ? (req.historyPublicToSubscribers ?? false) : true;
    await checkProtectedHistoryTopics(caller, opts, historyPublic);
    if (req.topicsPolicy !== undefined) await checkTopicsPolicy(caller, req.topicsPolicy);
    await checkChannelCreation(caller, opts);
    for (const w of toCreate) {
      create.push({
        name: w.name,
        description: w.description,
        inviteOnly: req.inviteOnly,
        isWebPublic: req.isWebPublic,
        historyPublicToSubscribers: historyPublic,
        messageRetentionDays: req.messageRetentionDays,
        topicsPolicy: req.topicsPolicy ?? 'inherit',
        folderId: req.folderId ?? null,
        permissions,
        isDefault: req.isDefaultStream,
      });
    }
  }

  const subscribed = await fetchSubscribedStreamIdSet(caller.db, caller.user.id);
  const authorized: Stream[] = [];
  const unauthorized: Stream[] = [];
  for (const stream of [...existingByKey.values()].sort(byId)) {
    if (await caller.contentAccess(stream, subscribed.has(stream.id))) authorized.push(stream);
    else unauthorized.push(stream);
  }
  if (unauthorized.length > 0 && req.authorizationErrorsFatal) {
    throw badRequest(`Unable to access channel (${unauthorized[0]!.name}).`);
  }
  if (subscribingOthers) {
    for (const stream of authorized) if (!(await canAddSubscribers(caller, stream))) throw insufficientPermission();
  }
  return { plan: { create, streams: authorized, users, colors }, unauthorized: unauthorized.map((s) => s.name) };
}

/**
 * Every check of POST /channels/create (Zulip's create_channel): a name no channel of the
 * realm has, archived ones included (409 CHANNEL_ALREADY_EXISTS), then the checks of channel
 * creation in POST /users/me/subscriptions, subscribing exactly `subscribers`.
 */
export async function checkCreateChannel(
  services: ActionServices,
  caller: ChannelCaller,
  req: CreationOptions & { name: string; description: string; subscribers: readonly number[] },
): Promise<SubscriptionPlan> {
  if (caller.user.role === ROLE_GUEST) throw badRequest('Not allowed for guest users');
  const name = checkStreamName(req.name.trim());
  if (await fetchStreamByName(caller.db, caller.realm.id, name)) {
    throw new JsonableError(`Channel '${name}' already exists`, 'CHANNEL_ALREADY_EXISTS', 409);
  }
  const { plan } = await checkAddSubscriptions(services, caller, {
    ...req,
    subscriptions: [{ name, description: req.description }],
    principals: req.subscribers,
    authorizationErrorsFatal: true,
  });
  return plan;
}

/**
 * Every check of DELETE /users/me/subscriptions: the principals exist and are active; every
 * channel exists and is visible to the caller (otherwise STREAM_DOES_NOT_EXIST, so as not to
 * reveal private channels); removing anyone but oneself and one's own bots needs
 * canRemoveSubscribers.
 */
export async function checkRemoveSubscriptions(
  services: ActionServices,
  caller: ChannelCaller,
  names: readonly string[],
  principals: readonly (number | string)[] | undefined,
): Promise<{ users: User[]; streams: Stream[] }> {
  const users = principals && principals.length > 0 ? await resolvePrincipals(services, caller, principals) : [caller.user];
  const unsubscribingOthers = users.some((u) => !(u.id === caller.user.id || (u.is_bot && u.bot_owner_id === caller.user.id)));
  const stripped = names.map((n) => n.trim());
  const found = new Map((await fetchStreamsByNames(caller.db, caller.realm.id, stripped)).map((s) => [s.name_lc, s]));
  const subscribed = await fetchSubscribedStreamIdSet(caller.db, caller.user.id);
  const accessed: StreamWithSubscription[] = [];
  for (const name of stripped) {
    const stream = found.get(streamNameKey(name));
    if (!stream || !(await caller.metadataAccess(stream, subscribed.has(stream.id)))) throw streamDoesNotExist(name);
    if (!accessed.some((a) => a.stream.id === stream.id)) accessed.push({ stream, subscribed: subscribed.has(stream.id) });
  }
  if (unsubscribingOthers && !(await canRemoveSubscribers(caller, accessed))) throw insufficientPermission();
  return { users, streams: accessed.map((a) => a.stream) };
}

/** Zulip's check_stream_name_available for a rename: a different channel may not have the name. */
export async function checkStreamRename(caller: ChannelCaller, stream: Stream, rawName: string): Promise<string> {
  const name = rawName.trim();
  if (stream.name === name) throw badRequest('Channel already has that name.');
  checkStreamName(name);
  if (streamNameKey(name) !== stream.name_lc) {
    const other = await fetchStreamByName(caller.db, caller.realm.id, name);
    if (other) throw new JsonableError(`Channel '${name}' already exists`, 'STREAM_ALREADY_EXISTS', 400);
  }
  return name;
}

/** Zulip's SubscriptionPropertyChangeRequest validation; returns the value to store. */
export function checkSubscriptionPropertyChange(property: string, value: boolean | string): { property: SubscriptionProperty; value: boolean | string } {
  if (property === 'color') {
    const color = typeof value === 'string' ? normalizeColor(value) : null;
    if (color === null) throw badRequest('color is not a valid hex color code');
    return { property, value: color };
  }
  if (!(SUBSCRIPTION_PROPERTIES as readonly string[]).includes(property)) throw badRequest(`Unknown subscription property: ${property}`);
  if (typeof value !== 'boolean') throw badRequest(`${property} is not a boolean`);
  return { property: property as SubscriptionProperty, value };
}
