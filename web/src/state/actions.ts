import { api, ApiError, NetworkError, postPage } from '../api/client';
import { EventLoop, register } from '../api/events';
import type { Message } from '../api/types';
import { applyEvents, setApplyHooks } from './apply';
import { messageMatches, narrowMarksRead, type Term, type View } from './narrow';
import { applyPresences, mergeIds, newList, noteDm, stateFromRegister, store, type MessageList } from './store';

/**
 * The web app's use cases: each calls the API and, where the user should see the result at
 * once, changes the state optimistically; the server's event then confirms it through applyEvent.
 */

let loop: EventLoop | null = null;
let currentView: View = { kind: 'inbox' };
/** The message at the top of the feed's viewport, kept so a reload (re-register) keeps the place. */
export const feedPosition = { anchorId: null as number | null };

const FETCH_BATCH = 50;

export async function boot(registration: Promise<Record<string, any>>): Promise<void> {
  const r = await registration;
  store.state = stateFromRegister(r);
  setApplyHooks({ refetchList: () => void reloadList(), confirmLocal });
  loop = new EventLoop({
    queue: () => (store.state ? { queueId: store.state.queueId, lastEventId: store.state.lastEventId } : null),
    onEvents: applyEvents,
    onQueueLost: reRegister,
    onConnection: (c) => {
      if (store.state && store.state.connection !== c) {
        store.state.connection = c;
        store.changed();
      }
    },
  });
  void loop.run();
  window.addEventListener('online', () => loop?.retryNow());
  startPresence();
  setInterval(expireTyping, 1000);
  store.changed();
}

/** A new queue and fresh state; the view, the place in the feed and compose (UI state) stay. */
async function reRegister(): Promise<void> {
  const r = await register();
  const pending = store.state ? [...store.state.messages.values()].filter((m) => m.local_id) : [];
  store.state = stateFromRegister(r);
  for (const m of pending) store.state.messages.set(m.id, m);
  store.changed();
  if (currentView.kind === 'narrow') await fetchInitial(currentView.terms, feedPosition.anchorId ?? undefined);
}

function startPresence(): void {
  const ping = async () => {
    try {
      const r = await api('POST', '/users/me/presence', { status: document.visibilityState === 'visible' ? 'active' : 'idle', slim_presence: true, new_user_input: true });
      if (store.state && r.presences) {
        applyPresences(store.state, r.presences, r.server_timestamp ?? Date.now() / 1000);
        store.changed();
      }
    } catch (e) {
      if (!(e instanceof NetworkError) && !(e instanceof ApiError)) throw e;
    }
  };
  void ping();
  setInterval(ping, 50_000);
}

function expireTyping(): void {
  const s = store.state;
  if (!s || s.typing.length === 0) return;
  const now = Date.now();
  const left = s.typing.filter((t) => t.expires > now);
  if (left.length !== s.typing.length) {
    s.typing = left;
    store.changed();
  }
}

export function view(): View {
  return currentView;
}

export function openView(v: View): void {
  currentView = v;
  feedPosition.anchorId = null;
  if (v.kind === 'narrow') void fetchInitial(v.terms);
  else if (store.state) {
    store.state.list = null;
    store.changed();
  }
}

async function fetchInitial(terms: Term[], anchor?: number): Promise<void> {
  const s = store.s;
  const list = newList(terms);
  s.list = list;
  store.changed();
  const near = terms.find((t) => t.operator === 'near' || t.operator === 'id');
  const anchorParam = anchor ?? (near ? Number(near.operand) : 'first_unread');
  try {
    const r = await api('GET', '/messages', { anchor: anchorParam, num_before: FETCH_BATCH, num_after: FETCH_BATCH, narrow: terms, apply_markdown: true, client_gravatar: false });
    if (store.state?.list !== list) return;
    ingest(list, r.messages);
    list.foundOldest = r.found_oldest;
    list.foundNewest = r.found_newest;
    list.anchorId = typeof r.anchor === 'number' && list.ids.includes(r.anchor) ? r.anchor : (list.ids.find((id) => id >= Number(r.anchor)) ?? list.ids.at(-1) ?? null);
  } catch (e) {
    if (!(e instanceof ApiError) && !(e instanceof NetworkError)) throw e;
    list.error = e.message;
  }
  list.version++;
  store.changed();
}

function reloadList(): void {
  if (currentView.kind === 'narrow') void fetchInitial(currentView.terms, feedPosition.anchorId ?? undefined);
}

function ingest(list: MessageList, messages: Message[]): void {
  const s = store.s;
  for (const m of messages) {
    s.messages.set(m.id, { ...m, flags: m.flags ?? [] });
    noteDm(s, m);
  }
  mergeIds(list, messages.map((m) => m.id));
}

export async function loadOlder(): Promise<number> {
  const list = store.state?.list;
  if (!list || list.loadingOlder || list.foundOldest || list.ids.length === 0) return 0;
  list.loadingOlder = true;
  try {
    const r = await api('GET', '/messages', { anchor: list.ids[0]!, include_anchor: false, num_before: FETCH_BATCH * 2, num_after: 0, narrow: list.terms, apply_markdown: true, client_gravatar: false });
    if (store.state?.list !== list) return 0;
    ingest(list, r.messages);
    list.foundOldest = r.found_oldest;
    return r.messages.length;
  } catch (e) {
    if (!(e instanceof ApiError) && !(e instanceof NetworkError)) throw e;
    return 0;
  } finally {
    list.loadingOlder = false;
    list.version++;
    store.changed();
  }
}

export async function loadNewer(): Promise<void> {
  const list = store.state?.list;
  if (!list || list.loadingNewer || list.foundNewest || list.ids.length === 0) return;
  list.loadingNewer = true;
  try {
    const last = list.ids.filter((id) => Number.isInteger(id)).at(-1)!;
    const r = await api('GET', '/messages', { anchor: last, include_anchor: false, num_before: 0, num_after: FETCH_BATCH * 2, narrow: list.terms, apply_markdown: true, client_gravatar: false });
    if (store.state?.list !== list) return;
    ingest(list, r.messages);
    list.foundNewest = r.found_newest;
  } catch (e) {
    if (!(e instanceof ApiError) && !(e instanceof NetworkError)) throw e;
  } finally {
    list.loadingNewer = false;
    list.version++;
    store.changed();
  }
}

// Marking read: messages seen in a narrow that marks read are collected and sent in one request.
const toMarkRead = new Set<number>();
let markTimer: ReturnType<typeof setTimeout> | null = null;

export function noteSeen(ids: number[]): void {
  const s = store.state;
  if (!s?.list || !narrowMarksRead(s.list.terms) || document.visibilityState !== 'visible') return;
  let changed = false;
  for (const id of ids) {
    if (!Number.isInteger(id) || !s.unread.has(id)) continue;
    toMarkRead.add(id);
    // Counts drop everywhere at once; the server's update_message_flags event confirms it.
    s.unread.remove(id);
    const m = s.messages.get(id);
    if (m) s.messages.set(id, { ...m, flags: [...m.flags, 'read'] });
    changed = true;
  }
  if (!changed) return;
  s.list.version++;
  store.changed();
  markTimer ??= setTimeout(flushRead, 300);
}

async function flushRead(): Promise<void> {
  markTimer = null;
  const ids = [...toMarkRead];
  toMarkRead.clear();
  if (ids.length === 0) return;
  try {
    await api('POST', '/messages/flags', { messages: ids, op: 'add', flag: 'read' });
  } catch (e) {
    if (!(e instanceof ApiError) && !(e instanceof NetworkError)) throw e;
    for (const id of ids) toMarkRead.add(id);
    markTimer ??= setTimeout(flushRead, 5000);
  }
}

export async function markNarrowRead(terms: Term[]): Promise<void> {
  await api('POST', '/messages/flags/narrow', { anchor: 'oldest', num_before: 0, num_after: 5000, narrow: terms, op: 'add', flag: 'read' });
}

export async function markUnreadFrom(id: number): Promise<void> {
  const list = store.state?.list;
  if (!list) return;
  await api('POST', '/messages/flags/narrow', { anchor: id, include_anchor: true, num_before: 0, num_after: 5000, narrow: list.terms, op: 'remove', flag: 'read' });
}

export async function fetchTopics(streamId: number): Promise<void> {
  const s = store.state;
  if (!s || s.topics.has(streamId)) return;
  s.topics.set(streamId, []);
  try {
    const r = await api('GET', `/users/me/${streamId}/topics`);
    s.topics.set(streamId, r.topics);
  } catch (e) {
    if (!(e instanceof ApiError) && !(e instanceof NetworkError)) throw e;
    s.topics.delete(streamId);
  }
  store.changed();
}

export type Destination = { type: 'stream'; streamId: number; topic: string } | { type: 'private'; to: number[] };

let localCounter = 0;

/** Sends with local echo: shown at once, replaced by the server's message, or marked failed. */
export async function sendMessage(dest: Destination, content: string): Promise<void> {
  const s = store.s;
  const base = Math.max(0, ...[...s.messages.keys()].filter(Number.isInteger));
  localCounter++;
  const localId = `${base}.${String(localCounter).padStart(2, '0')}`;
  const id = Number(localId);
  const me = s.me;
  const echo: Message = {
    id,
    local_id: localId,
    sender_id: me.user_id,
    sender_full_name: me.full_name,
    sender_email: me.email,
    avatar_url: me.avatar_url,
    timestamp: Math.floor(Date.now() / 1000),
    content: `<p>${escapeText(content).replaceAll('\n', '<br>')}</p>`,
    type: dest.type,
    stream_id: dest.type === 'stream' ? dest.streamId : undefined,
    subject: dest.type === 'stream' ? dest.topic : '',
    display_recipient: dest.type === 'stream' ? (s.subs.get(dest.streamId)?.name ?? '') : [...dest.to, me.user_id].map((uid) => ({ id: uid, email: s.users.get(uid)?.email ?? '', full_name: s.users.get(uid)?.full_name ?? '' })),
    flags: ['read'],
    reactions: [],
  };
  s.messages.set(id, echo);
  if (s.list?.foundNewest) {
    if (messageMatches(s.list.terms, echo, me.user_id)) mergeIds(s.list, [id]);
  }
  store.changed();
  await deliver(echo, content);
}

const rawContent = new Map<string, string>();

async function deliver(echo: Message, content: string): Promise<void> {
  rawContent.set(echo.local_id!, content);
  const params =
    echo.type === 'stream'
      ? { type: 'stream', to: echo.stream_id!, topic: echo.subject, content }
      : { type: 'direct', to: (echo.display_recipient as { id: number }[]).map((r) => r.id).filter((x) => x !== store.s.me.user_id), content };
  try {
    await api('POST', '/messages', { ...params, queue_id: store.s.queueId, local_id: echo.local_id });
  } catch (e) {
    if (!(e instanceof ApiError) && !(e instanceof NetworkError)) throw e;
    const s = store.s;
    s.messages.set(echo.id, { ...s.messages.get(echo.id)!, failed: true });
    if (s.list) s.list.version++;
    store.changed();
    throw e;
  }
}

export async function retrySend(id: number): Promise<void> {
  const s = store.s;
  const m = s.messages.get(id);
  if (!m?.local_id) return;
  s.messages.set(id, { ...m, failed: false });
  if (s.list) s.list.version++;
  store.changed();
  await deliver(m, rawContent.get(m.local_id) ?? '');
}

/** The server's message event for our local echo: it takes the echo's place. */
function confirmLocal(localId: string, m: Message): void {
  const s = store.s;
  const echoId = Number(localId);
  if (!s.messages.get(echoId)?.local_id) return;
  s.messages.delete(echoId);
  rawContent.delete(localId);
  // The confirmed message takes the echo's place only where the echo was shown.
  if (s.list?.ids.includes(echoId)) {
    s.list.ids = s.list.ids.filter((id) => id !== echoId);
    mergeIds(s.list, [m.id]);
    s.list.version++;
  }
}

function escapeText(t: string): string {
  return t.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

export async function toggleReaction(messageId: number, emojiName: string, emojiCode?: string, reactionType?: string): Promise<void> {
  const s = store.s;
  const m = s.messages.get(messageId);
  const mine = m?.reactions.some((r) => r.user_id === s.me.user_id && r.emoji_name === emojiName);
  const params: Record<string, string> = { emoji_name: emojiName };
  if (emojiCode) params.emoji_code = emojiCode;
  if (reactionType) params.reaction_type = reactionType;
  await api(mine ? 'DELETE' : 'POST', `/messages/${messageId}/reactions`, params);
}

export async function toggleStar(messageId: number): Promise<void> {
  const m = store.s.messages.get(messageId);
  await api('POST', '/messages/flags', { messages: [messageId], op: m?.flags.includes('starred') ? 'remove' : 'add', flag: 'starred' });
}

/** PATCH /messages/{id}: new content, and/or a move with its propagate mode and Notification Bot's notices. */
export type MessageChange = {
  content?: string;
  topic?: string;
  stream_id?: number;
  propagate_mode?: string;
  send_notification_to_new_thread?: boolean;
  send_notification_to_old_thread?: boolean;
};

export async function editMessage(messageId: number, change: MessageChange): Promise<void> {
  await api('PATCH', `/messages/${messageId}`, change);
}

export async function deleteMessage(messageId: number): Promise<void> {
  await api('DELETE', `/messages/${messageId}`);
}

export async function rawMessage(messageId: number): Promise<string> {
  const r = await api('GET', `/messages/${messageId}`, { apply_markdown: false });
  return r.message.content;
}

export async function renderPreview(content: string): Promise<string> {
  return (await api('POST', '/messages/render', { content })).rendered;
}

export async function sendTyping(op: 'start' | 'stop', dest: Destination): Promise<void> {
  const params = dest.type === 'stream' ? { type: 'stream', stream_id: dest.streamId, topic: dest.topic } : { type: 'direct', to: dest.to };
  try {
    await api('POST', '/typing', { op, ...params });
  } catch (e) {
    if (!(e instanceof ApiError) && !(e instanceof NetworkError)) throw e;
  }
}

export async function saveDraft(dest: Destination | null, content: string): Promise<void> {
  const draft = {
    type: dest?.type ?? '',
    to: dest ? (dest.type === 'stream' ? [dest.streamId] : dest.to) : [],
    topic: dest?.type === 'stream' ? dest.topic : '',
    content,
    timestamp: Math.floor(Date.now() / 1000),
  };
  try {
    await api('POST', '/drafts', { drafts: [draft] });
  } catch (e) {
    if (!(e instanceof ApiError) && !(e instanceof NetworkError)) throw e;
  }
}

export async function deleteDraft(id: number): Promise<void> {
  await api('DELETE', `/drafts/${id}`);
}

export async function logOut(): Promise<void> {
  loop?.stop();
  await postPage('/accounts/logout/', {});
  window.location.assign('/login');
}

export interface EditHistoryEntry {
  timestamp: number;
  user_id: number | null;
  topic?: string;
  prev_topic?: string;
  rendered_content?: string;
  stream?: number;
  prev_stream?: number;
}

export async function editHistory(messageId: number): Promise<EditHistoryEntry[]> {
  return (await api('GET', `/messages/${messageId}/history`)).message_history;
}

export async function readReceipts(messageId: number): Promise<number[]> {
  return (await api('GET', `/messages/${messageId}/read_receipts`)).user_ids;
}
