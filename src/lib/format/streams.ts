import type { Tx } from '../../db/index.js';
import type { Stream, Subscription } from '../../db/tables.js';
import { countSubscribersByStream } from '../../db/repos/subscriptions.js';
import { countSubscribersCached, fetchSystemGroupsCached } from '../../db/cached.js';
import { cachedRead } from '../../db/cache.js';
import { fetchRealmStreams } from '../../db/repos/streams.js';
import { fetchUsersByIds } from '../../db/repos/users.js';
import { normalizeGroupSettingValue, type GroupSettingValue } from '../group_settings.js';
import { renderMarkdown } from '../markdown/index.js';
import { CHANNEL_PERMISSIONS, channelPermissions } from '../access/streams.js';

/**
 * Channel and subscription dicts exactly as zulip.yaml's BasicChannel and Subscription
 * components, for GET /streams, GET /users/me/subscriptions, POST /register and events.
 */

/** What formatting needs beyond the rows; built once per request by the caller. */
export interface StreamFormatContext {
  /** Active subscribers (active users, bots included) of a channel. */
  subscriberCount(streamId: number): number;
  /** Deactivated users are left out of anonymous group-setting values (feature level 303). */
  isActiveUser(userId: number): boolean;
  /** Name of a system group by ID, for the legacy stream_post_policy. */
  systemGroupName(groupId: number): string | undefined;
}

/**
 * Loads what formatting `streams` needs, in at most three queries: subscriber counts (unless
 * the subscriber lists are already known; for more than a few channels, the whole
 * organization's, cached: a register in an organization of thousands of channels asks for
 * nearly all of them), system group names, and which users named in
 * anonymous settings are deactivated.
 */
export async function fetchStreamFormatContext(
  db: Tx,
  realmId: number,
  streams: readonly Stream[],
  subscribers?: ReadonlyMap<number, readonly number[]>,
): Promise<StreamFormatContext> {
  const counts = subscribers
    ? new Map(streams.map((s) => [s.id, subscribers.get(s.id)?.length ?? 0]))
    : streams.length > 20
      ? await countSubscribersCached(db, realmId)
      : await countSubscribersByStream(db, streams.map((s) => s.id));
  const named = new Set<number>();
  for (const stream of streams) {
    for (const v of Object.values(channelPermissions(stream))) if (typeof v !== 'number') v.direct_members.forEach((u) => named.add(u));
  }
  const inactive = new Set((await fetchUsersByIds(db, realmId, [...named])).filter((u) => !u.is_active).map((u) => u.id));
  const systemGroups = new Map((await fetchSystemGroupsCached(db, realmId)).map((g) => [g.id, g.name]));
  return {
    subscriberCount: (id) => counts.get(id) ?? 0,
    isActiveUser: (id) => !inactive.has(id),
    systemGroupName: (id) => systemGroups.get(id),
  };
}

/** Zulip's Stream.SYSTEM_GROUPS_ENUM_MAP: can_send_message_group as the deprecated stream_post_policy. */
const STREAM_POST_POLICY: Record<string, number> = {
  'role:everyone': 1,
  'role:administrators': 2,
  'role:fullmembers': 3,
  'role:moderators': 4,
};

export function streamPostPolicy(canSendMessageGroup: GroupSettingValue, ctx: Pick<StreamFormatContext, 'systemGroupName'>): number {
  if (typeof canSendMessageGroup !== 'number') return 1;
  return STREAM_POST_POLICY[ctx.systemGroupName(canSendMessageGroup) ?? ''] ?? 1;
}

export function formatGroupSettingValue(value: GroupSettingValue, isActiveUser: (id: number) => boolean): GroupSettingValue {
  if (typeof value === 'number') return value;
  return normalizeGroupSettingValue({ direct_members: value.direct_members.filter(isActiveUser), direct_subgroups: value.direct_subgroups });
}

/**
 * A channel description as HTML, rendered as Zulip-flavoured Markdown without previews (Zulip's
 * render_stream_description); "" for no description.
 */
export function renderStreamDescription(description: string, realmUrl: string): string {
  if (description.trim() === '') return '';
  return renderMarkdown(description, { realmUrl: realmUrl.replace(/\/+$/, ''), inlineImagePreview: false }).html;
}

export type BasicChannelDict = Record<string, unknown> & { stream_id: number; name: string };

/** The BasicChannel dict. stream_weekly_traffic is null: Parley keeps no traffic statistics. */
export function formatStream(stream: Stream, ctx: StreamFormatContext): BasicChannelDict {
  const perms = channelPermissions(stream);
  const policy = streamPostPolicy(perms.can_send_message_group, ctx);
  const out: BasicChannelDict = {
    stream_id: stream.id,
    name: stream.name,
    is_archived: !!stream.deactivated,
    description: stream.description,
    rendered_description: stream.rendered_description,
    date_created: stream.date_created,
    creator_id: stream.creator_id,
    invite_only: !!stream.invite_only,
    is_web_public: !!stream.is_web_public,
    stream_post_policy: policy,
    is_announcement_only: policy === 2,
    message_retention_days: stream.message_retention_days,
    default_push_notifications: false,
    history_public_to_subscribers: !!stream.history_public_to_subscribers,
    topics_policy: stream.topics_policy,
    first_message_id: stream.first_message_id,
    folder_id: stream.folder_id,
    is_recently_active: true,
    subscriber_count: ctx.subscriberCount(stream.id),
    stream_weekly_traffic: null,
  };
  for (const name of CHANNEL_PERMISSIONS) out[name] = formatGroupSettingValue(perms[name], ctx.isActiveUser);
  return out;
}

/**
 * Every channel of an organization (archived ones included) as its BasicChannel JSON, cached:
 * a register in an organization of thousands of channels sends nearly all of them twice
 * (`streams` and `never_subscribed`), the same for everyone. Depends on what formatStream
 * reads: the channel rows, subscriber counts, system groups and users' activity.
 */
export const fetchRealmStreamJsonCached = cachedRead(
  'realm_stream_json',
  ['streams', 'subscriptions', 'users', 'user_groups'],
  (realmId: number) => String(realmId),
  async (db: Tx, realmId: number): Promise<Map<number, string>> => {
    const streams = await fetchRealmStreams(db, realmId, true);
    const ctx = await fetchStreamFormatContext(db, realmId, streams);
    return new Map(streams.map((s) => [s.id, JSON.stringify(formatStream(s, ctx))]));
  },
);

const nullableFlag = (v: number | null): boolean | null => (v === null ? null : !!v);

/**
 * The Subscription dict: the channel's fields plus the user's personal settings, with the
 * legacy `in_home_view` (= !is_muted) that zulip-mobile still reads. `subscribers` only when
 * the client asked for them.
 */
export function formatSubscription(
  stream: Stream,
  sub: Subscription,
  ctx: StreamFormatContext,
  subscribers?: readonly number[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {
    ...formatStream(stream, ctx),
    color: sub.color,
    is_muted: !!sub.is_muted,
    in_home_view: !sub.is_muted,
    pin_to_top: !!sub.pin_to_top,
    desktop_notifications: nullableFlag(sub.desktop_notifications),
    audible_notifications: nullableFlag(sub.audible_notifications),
    push_notifications: nullableFlag(sub.push_notifications),
    email_notifications: nullableFlag(sub.email_notifications),
    wildcard_mentions_notify: nullableFlag(sub.wildcard_mentions_notify),
  };
  if (subscribers) out.subscribers = [...subscribers];
  return out;
}

/** A never_subscribed entry of POST /register: the channel, with subscribers when requested. */
export function formatNeverSubscribed(stream: Stream, ctx: StreamFormatContext, subscribers?: readonly number[]): Record<string, unknown> {
  const out: Record<string, unknown> = formatStream(stream, ctx);
  if (subscribers) out.subscribers = [...subscribers];
  return out;
}

/** Properties of a subscription a user may change, and the stored column of each. */
export const SUBSCRIPTION_PROPERTIES = [
  'color',
  'is_muted',
  'in_home_view',
  'pin_to_top',
  'desktop_notifications',
  'audible_notifications',
  'push_notifications',
  'email_notifications',
  'wildcard_mentions_notify',
] as const;
export type SubscriptionProperty = (typeof SUBSCRIPTION_PROPERTIES)[number];
