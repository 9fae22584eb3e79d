import type { Stream } from '../../db/tables.js';
import { fetchRealmStreams } from '../../db/repos/streams.js';
import { fetchDefaultStreamIdsCached } from '../../db/cached.js';
import { fetchRealmSubscriberIds, fetchUserSubscriptionRows } from '../../db/repos/subscriptions.js';
import { ChannelCaller, channelCreationRights } from '../../lib/access/streams.js';
import { fetchRealmStreamJsonCached, fetchStreamFormatContext, formatNeverSubscribed, formatStream, formatSubscription } from '../../lib/format/streams.js';
import { RawJson } from '../../lib/raw_json.js';
import { isAdmin } from '../../lib/roles.js';
import { MAX_STREAM_DESCRIPTION_LENGTH, MAX_STREAM_NAME_LENGTH } from '../../version.js';
import type { StateFetcher } from './types.js';

const byName = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * POST /register keys for: subscription (subscriptions, unsubscribed, never_subscribed),
 * stream (streams), default_streams, default_stream_groups, the channel limits of `realm`,
 * and the channel-creation rights of `realm_user` (can_create_streams ...). Archived channels
 * are included only for clients that declared the archived_channels capability.
 */
export const fetchStreamsState: StateFetcher = async (ctx) => {
  const { realm, user, options } = ctx;
  const db = ctx.services.db.kysely;
  const out: Record<string, unknown> = {};
  if (ctx.want('realm') || ctx.want('stream')) {
    out.max_stream_name_length = MAX_STREAM_NAME_LENGTH;
    out.max_stream_description_length = MAX_STREAM_DESCRIPTION_LENGTH;
  }
  const caller = new ChannelCaller(db, realm, user);
  if (ctx.want('realm_user')) {
    const rights = await channelCreationRights(caller);
    out.can_create_public_streams = rights.public;
    out.can_create_private_streams = rights.private;
    out.can_create_streams = rights.public || rights.private;
    out.can_create_web_public_streams = rights.webPublic;
    out.can_subscribe_other_users = rights.subscribeOthers;
  }
  if (ctx.want('default_streams')) out.realm_default_streams = await fetchDefaultStreamIdsCached(db, realm.id);
  if (ctx.want('default_stream_groups')) out.realm_default_stream_groups = [];
  const wantSubs = ctx.want('subscription');
  const wantStreams = ctx.want('stream');
  if (!wantSubs && !wantStreams) return out;

  const streams = await fetchRealmStreams(db, realm.id, !!options.clientCapabilities.archived_channels);
  const rows = await fetchUserSubscriptionRows(db, user.id);
  const subOf = new Map(rows.map((r) => [r.stream_id, r]));
  const subscribed = (s: Stream): boolean => !!subOf.get(s.id)?.active;
  const visible: Stream[] = [];
  for (const s of streams) if (await caller.metadataAccess(s, subscribed(s))) visible.push(s);

  // include_subscribers="partial" gets full lists: the server may always send `subscribers`.
  const subscribers = wantSubs && options.includeSubscribers !== false ? await fetchRealmSubscriberIds(db, realm.id) : undefined;
  const sorted = [...visible].sort(byName);
  const mine = sorted.filter((s) => subOf.has(s.id));
  // Channels without the user's subscription are the same for everyone: their JSON is cached.
  const cached = await fetchRealmStreamJsonCached(db, realm.id);
  const complete = visible.every((s) => cached.has(s.id));
  const fmt = await fetchStreamFormatContext(db, realm.id, subscribers || !complete ? visible : mine, subscribers);
  const list = (s: Stream): number[] | undefined => (subscribers ? (subscribers.get(s.id) ?? []) : undefined);
  const basic = (channels: Stream[]): RawJson => new RawJson(`[${channels.map((s) => cached.get(s.id) ?? JSON.stringify(formatStream(s, fmt))).join(',')}]`);

  if (wantSubs) {
    out.subscriptions = mine.filter(subscribed).map((s) => formatSubscription(s, subOf.get(s.id)!, fmt, list(s)));
    out.unsubscribed = mine.filter((s) => !subscribed(s)).map((s) => formatSubscription(s, subOf.get(s.id)!, fmt, list(s)));
    const never = sorted.filter((s) => !subOf.has(s.id));
    out.never_subscribed = subscribers ? never.map((s) => formatNeverSubscribed(s, fmt, list(s))) : basic(never);
  }
  if (wantStreams) {
    // Zulip's do_get_streams(include_web_public=True, include_all=is_admin): public, subscribed
    // and web-public channels; administrators also see every private channel.
    out.streams = basic(sorted.filter((s) => isAdmin(user) || !s.invite_only || subscribed(s) || !!s.is_web_public));
  }
  return out;
};
