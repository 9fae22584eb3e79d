import { useEffect, useState } from 'preact/hooks';
import type { Draft, Message, Subscription, Topic, User } from '../api/types';
import { dmKey, UnreadIndex } from './unread';
import type { Term } from './narrow';

export type Presence = 'active' | 'idle' | 'offline';

/** The messages of the narrow on screen, as Zulip's message_list: ids ascending, and how far they reach. */
export interface MessageList {
  terms: Term[];
  ids: number[];
  foundOldest: boolean;
  foundNewest: boolean;
  loadingOlder: boolean;
  loadingNewer: boolean;
  /** The message to open at (the first unread, or `near:`), once loaded. */
  anchorId: number | null;
  /** Bumped on every change, so the feed re-renders only when its list changes. */
  version: number;
  error?: string;
}

export interface TypingEntry {
  conversation: string;
  userId: number;
  expires: number;
}

/** Everything the client knows, filled by POST /register and kept current by applyEvent. */
export interface State {
  me: User;
  queueId: string;
  lastEventId: number;
  realm: {
    name: string;
    icon_url: string;
    empty_topic_display_name: string;
    mandatory_topics: boolean;
    typing_started_wait_period: number;
    typing_stopped_wait_period: number;
    typing_started_expiry_period: number;
    max_message_length: number;
    enable_read_receipts: boolean;
  };
  settings: { enter_sends: boolean; twenty_four_hour_time: boolean; timezone: string; color_scheme: number; emojiset: string };
  users: Map<number, User>;
  subs: Map<number, Subscription>;
  /** Unsubscribed but known channels (for names in links and search). */
  channelNames: Map<number, string>;
  topics: Map<number, Topic[]>;
  userTopics: Map<string, number>;
  messages: Map<number, Message>;
  unread: UnreadIndex;
  presence: Map<number, Presence>;
  typing: TypingEntry[];
  drafts: Draft[];
  /** Direct-message conversations by participants (without me), newest message id: register's recent_private_conversations, kept current. */
  recentDms: Map<string, { ids: number[]; maxId: number }>;
  /** Register's server_emoji_data_url (Unicode emoji names) and the organization's custom emoji. */
  emojiDataUrl: string | null;
  realmEmoji: Map<string, { name: string; source_url: string; deactivated: boolean }>;
  /** The organization's user groups (register's realm_user_groups), for `@*group*` suggestions. */
  userGroups: Map<number, UserGroup>;
  list: MessageList | null;
  connection: 'connected' | 'offline';
  /** POST /register's answer as a whole, kept current by applySettingsEvent: what the settings screens read. */
  reg: Record<string, any>;
  /** How many events of each type arrived: settings screens showing fetched lists refetch when theirs change. */
  eventCounts: Record<string, number>;
}

export interface UserGroup {
  id: number;
  name: string;
  description: string;
  is_system_group: boolean;
  deactivated?: boolean;
}

type Listener = () => void;

class Store {
  state: State | null = null;
  private readonly listeners = new Set<Listener>();
  private scheduled = false;

  get s(): State {
    if (!this.state) throw new Error('not registered');
    return this.state;
  }

  /**
   * Coalesces changes into at most one render per frame: a busy organization's events arrive
   * many times a second, and typing must not wait behind a render for each batch.
   */
  changed(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      for (const l of this.listeners) l();
    };
    // A hidden tab gets no animation frames; it still renders, less often.
    if (document.visibilityState === 'visible') requestAnimationFrame(run);
    else setTimeout(run, 250);
  }

  subscribe(l: Listener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
}

export const store = new Store();

/** Re-renders the calling component after every store change. */
export function useStore(): State | null {
  const [, setTick] = useState(0);
  useEffect(() => store.subscribe(() => setTick((t) => t + 1)), []);
  return store.state;
}

export const userTopicKey = (streamId: number, topic: string) => `${streamId}\u0000${topic.toLowerCase()}`;

/** Zulip's user_topic visibility_policy values. */
export const VISIBILITY = { INHERIT: 0, MUTED: 1, UNMUTED: 2, FOLLOWED: 3 } as const;

export function stateFromRegister(r: Record<string, any>): State {
  const users = new Map<number, User>();
  // register lists active and deactivated users apart, without an is_active field.
  for (const u of [...(r.realm_users ?? []), ...(r.cross_realm_bots ?? [])]) users.set(u.user_id, { ...u, is_active: true });
  for (const u of r.realm_non_active_users ?? []) users.set(u.user_id, { ...u, is_active: false });
  const me = users.get(r.user_id) ?? { user_id: r.user_id, email: r.email, full_name: r.full_name, avatar_url: r.avatar_url, is_bot: false, is_active: true, role: r.role };
  const subs = new Map<number, Subscription>();
  const channelNames = new Map<number, string>();
  for (const s of r.subscriptions ?? []) {
    subs.set(s.stream_id, s);
    channelNames.set(s.stream_id, s.name);
  }
  for (const s of [...(r.unsubscribed ?? []), ...(r.never_subscribed ?? []), ...(r.streams ?? [])]) channelNames.set(s.stream_id, s.name);
  const unread = new UnreadIndex(r.user_id);
  unread.load(r.unread_msgs ?? {});
  const userTopics = new Map<string, number>();
  for (const t of r.user_topics ?? []) userTopics.set(userTopicKey(t.stream_id, t.topic_name), t.visibility_policy);
  const us = r.user_settings ?? {};
  const state: State = {
    me,
    queueId: r.queue_id,
    lastEventId: r.last_event_id,
    realm: {
      name: r.realm_name,
      icon_url: r.realm_icon_url,
      empty_topic_display_name: r.realm_empty_topic_display_name ?? 'general chat',
      mandatory_topics: !!r.realm_mandatory_topics,
      typing_started_wait_period: r.server_typing_started_wait_period_milliseconds ?? 10000,
      typing_stopped_wait_period: r.server_typing_stopped_wait_period_milliseconds ?? 5000,
      typing_started_expiry_period: r.server_typing_started_expiry_period_milliseconds ?? 45000,
      max_message_length: r.max_message_length ?? 10000,
      enable_read_receipts: !!r.realm_enable_read_receipts,
    },
    settings: {
      enter_sends: us.enter_sends ?? r.enter_sends ?? false,
      twenty_four_hour_time: us.twenty_four_hour_time ?? r.twenty_four_hour_time ?? false,
      timezone: us.timezone || r.timezone || Intl.DateTimeFormat().resolvedOptions().timeZone,
      color_scheme: us.color_scheme ?? r.color_scheme ?? 1,
      emojiset: us.emojiset ?? r.emojiset ?? 'google',
    },
    users,
    subs,
    channelNames,
    topics: new Map(),
    userTopics,
    messages: new Map(),
    unread,
    presence: new Map(),
    typing: [],
    drafts: r.drafts ?? [],
    recentDms: new Map((r.recent_private_conversations ?? []).map((c: { user_ids: number[]; max_message_id: number }) => [dmKey(c.user_ids), { ids: c.user_ids, maxId: c.max_message_id }])),
    emojiDataUrl: r.server_emoji_data_url ?? null,
    realmEmoji: new Map(Object.entries(r.realm_emoji ?? {})),
    userGroups: new Map((r.realm_user_groups ?? []).map((g: UserGroup) => [g.id, g])),
    list: null,
    connection: 'connected',
    reg: r,
    eventCounts: {},
  };
  applyPresences(state, r.presences ?? {}, r.server_timestamp ?? Date.now() / 1000);
  // Whoever has the app open is active, before the first presence report says so.
  state.presence.set(state.me.user_id, 'active');
  return state;
}

/** Zulip's presence rule: active within 140 s of the server's clock; idle if seen but not active. */
export function applyPresences(state: State, presences: Record<string, any>, serverTimestamp: number): void {
  const OFFLINE_THRESHOLD = 140;
  // A new map, so that what shows presence re-renders only when presence changed.
  state.presence = new Map(state.presence);
  for (const [key, p] of Object.entries(presences)) {
    const id = Number(key);
    // Modern (active/idle timestamps) or legacy (per-client {status, timestamp}) presence.
    let active = p.active_timestamp ?? 0;
    let idle = p.idle_timestamp ?? 0;
    if (p.active_timestamp === undefined) {
      for (const c of Object.values(p) as { status?: string; timestamp?: number }[]) {
        if (!c || typeof c !== 'object' || typeof c.timestamp !== 'number') continue;
        if (c.status === 'active') active = Math.max(active, c.timestamp);
        idle = Math.max(idle, c.timestamp);
      }
    }
    const status: Presence = serverTimestamp - active < OFFLINE_THRESHOLD ? 'active' : serverTimestamp - idle < OFFLINE_THRESHOLD ? 'idle' : 'offline';
    state.presence.set(Number.isNaN(id) ? (state.users.get(Number(p.user_id))?.user_id ?? id) : id, status);
  }
}

export function newList(terms: Term[]): MessageList {
  return { terms, ids: [], foundOldest: false, foundNewest: false, loadingOlder: false, loadingNewer: false, anchorId: null, version: 0 };
}

/** Notes a direct message in the recent conversations list. */
export function noteDm(state: State, m: Message): void {
  if (m.type !== 'private' || !Number.isInteger(m.id) || !Array.isArray(m.display_recipient)) return;
  const ids = m.display_recipient.map((r) => r.id).filter((id) => id !== state.me.user_id);
  const k = dmKey(ids);
  const e = state.recentDms.get(k);
  if (!e || e.maxId < m.id) state.recentDms.set(k, { ids, maxId: m.id });
}

/** Inserts ids into a sorted list, keeping it sorted and free of duplicates. */
export function mergeIds(list: MessageList, ids: number[]): void {
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  if (sorted.length === 0) return;
  const last = list.ids.at(-1);
  // Messages arriving after the last one (the common case, many a second) are appended:
  // no set or sort of the whole list.
  if (last === undefined || sorted[0]! > last) list.ids = [...list.ids, ...sorted];
  else {
    const known = new Set(list.ids);
    const fresh = sorted.filter((id) => !known.has(id));
    if (fresh.length === 0) return;
    list.ids = [...list.ids, ...fresh].sort((a, b) => a - b);
  }
  list.version++;
}
