import type { Stream } from '../../db/tables.js';
import { fetchRealmStreams } from '../../db/repos/streams.js';
import { fetchDefaultStreamIdsCached } from '../../db/cached.js';
import { fetchRealmSubscriberIds, fetchUserSubscriptionRows } from '../../db/repos/subscriptions.js';
import { ChannelCaller, channelCreationRights } from '../../lib/access/streams.js';
import { fetchStreamFormatContext, formatNeverSubscribed, formatStream, formatSubscription } from '../../lib/format/streams.js';
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
  const fmt = await fetchStreamFormatContext(db, realm.id, visible, subscribers);
  const list = (s: Stream): number[] | undefined => (subscribers ? (subscribers.get(s.id) ?? []) : undefined);

  if (wantSubs) {
    const sorted = [...visible].sort(byName);
    out.subscriptions = sorted.filter(subscribed).map((s) => formatSubscription(s, subOf.get(s.id)!, fmt, list(s)));
    out.unsubscribed = sorted.filter((s) => subOf.has(s.id) && !subscribed(s)).map((s) => formatSubscription(s, subOf.get(s.id)!, fmt, list(s)));
    out.never_subscribed = sorted.filter((s) => !subOf.has(s.id)).map((s) => formatNeverSubscribed(s, fmt, list(s)));
  }
  if (wantStreams) {
    // Zulip's do_get_streams(include_web_public=True, include_all=is_admin): public, subscribed
    // and web-public channels; administrators also see every private channel.
    out.streams = visible
      .filter((s) => isAdmin(user) || !s.invite_only || subscribed(s) || !!s.is_web_public)
      .sort(byName)
      .map((s) => formatStream(s, fmt));
  }
  return out;
};
