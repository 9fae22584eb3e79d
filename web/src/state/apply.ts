import type { Message, ServerEvent } from '../api/types';
import { messageMatches } from './narrow';
import { applyPresences, mergeIds, noteDm, store, userTopicKey, type State } from './store';
import { dmKey } from './unread';
import { applySettingsEvent } from '../settings/live';

const hooks: { refetchList: () => void; confirmLocal: (localId: string, m: Message) => void } = {
  refetchList: () => undefined,
  confirmLocal: () => undefined,
};

/** Lets the view controller learn about changes it must act on (without a cycle of imports). */
export function setApplyHooks(h: typeof hooks): void {
  Object.assign(hooks, h);
}

function replaceMessage(state: State, id: number, change: (m: Message) => Message): void {
  const m = state.messages.get(id);
  if (!m) return;
  state.messages.set(id, change(m));
  if (state.list) state.list.version++;
}

function typingConversation(e: ServerEvent, myId: number): string {
  if (e.message_type === 'stream') return `s${e.stream_id}\u0000${String(e.topic).toLowerCase()}`;
  const ids = (e.recipients ?? []).map((r: any) => r.user_id).filter((id: number) => id !== myId);
  return `d${dmKey(ids)}`;
}

function noteTopic(state: State, streamId: number, topic: string, id: number): void {
  const topics = state.topics.get(streamId);
  if (!topics) return;
  const i = topics.findIndex((t) => t.name.toLowerCase() === topic.toLowerCase());
  if (i >= 0) topics.splice(i, 1);
  topics.unshift({ name: topic, max_id: id });
}

/**
 * Zulip's server_events_dispatch: the one place each server event changes the client's
 * state. Every other module reads the state; only this function (and optimistic local
 * changes the server then confirms) writes it.
 */
export function applyEvent(state: State, e: ServerEvent): void {
  switch (e.type) {
    case 'heartbeat':
      return;
    case 'message': {
      const m: Message = { ...e.message, flags: e.flags ?? [] };
      if (e.local_message_id) hooks.confirmLocal(String(e.local_message_id), m);
      state.messages.set(m.id, m);
      if (!m.flags.includes('read')) state.unread.add(m);
      if (m.type === 'stream') noteTopic(state, m.stream_id!, m.subject, m.id);
      else noteDm(state, m);
      state.typing = state.typing.filter((t) => t.userId !== m.sender_id);
      const list = state.list;
      if (list && list.foundNewest) {
        const match = messageMatches(list.terms, m, state.me.user_id);
        if (match) mergeIds(list, [m.id]);
        else if (match === null) hooks.refetchList();
      }
      return;
    }
    case 'update_message': {
      const ids: number[] = e.message_ids ?? [e.message_id];
      const moved = e.subject !== undefined || e.new_stream_id !== undefined;
      for (const id of ids) {
        replaceMessage(state, id, (m) => ({
          ...m,
          // A rendering-only update (a thumbnail made, a link preview) is not an edit.
          ...(id === e.message_id && e.rendered_content !== undefined
            ? { content: e.rendered_content, match_content: undefined, ...(e.rendering_only ? {} : { last_edit_timestamp: e.edit_timestamp }) }
            : {}),
          ...(e.subject !== undefined ? { subject: e.subject, match_subject: undefined } : {}),
          ...(e.new_stream_id !== undefined ? { stream_id: e.new_stream_id } : {}),
          ...(moved ? { last_moved_timestamp: e.edit_timestamp } : {}),
        }));
        if (moved) state.unread.move(id, e.new_stream_id ?? e.stream_id, e.subject ?? e.orig_subject);
      }
      if (moved) {
        const streamIds = [e.stream_id, e.new_stream_id].filter((x) => x !== undefined);
        for (const sid of streamIds) state.topics.delete(sid);
        if (state.list && state.list.terms.some((t) => t.operator === 'topic' || t.operator === 'channel')) hooks.refetchList();
      }
      return;
    }
    case 'delete_message': {
      const ids: number[] = e.message_ids ?? [e.message_id];
      for (const id of ids) {
        state.messages.delete(id);
        state.unread.remove(id);
      }
      if (state.list) {
        const gone = new Set(ids);
        const before = state.list.ids.length;
        state.list.ids = state.list.ids.filter((id) => !gone.has(id));
        if (state.list.ids.length !== before) state.list.version++;
      }
      if (e.stream_id !== undefined) state.topics.delete(e.stream_id);
      return;
    }
    case 'reaction': {
      replaceMessage(state, e.message_id, (m) => {
        const same = (r: any) => r.user_id === e.user_id && r.emoji_code === e.emoji_code && r.reaction_type === e.reaction_type;
        const reactions = m.reactions.filter((r) => !same(r));
        if (e.op === 'add') reactions.push({ emoji_name: e.emoji_name, emoji_code: e.emoji_code, reaction_type: e.reaction_type, user_id: e.user_id });
        return { ...m, reactions };
      });
      return;
    }
    case 'update_message_flags': {
      const ids: number[] = e.all ? [...state.messages.keys()] : (e.messages ?? []);
      for (const id of ids) {
        replaceMessage(state, id, (m) => ({ ...m, flags: e.op === 'add' ? [...new Set([...m.flags, e.flag])] : m.flags.filter((f) => f !== e.flag) }));
        if (e.flag === 'read') {
          if (e.op === 'add') state.unread.remove(id);
          else if (e.message_details?.[id]) state.unread.addDetails(id, e.message_details[id]);
          else {
            const m = state.messages.get(id);
            if (m) state.unread.add(m);
          }
        }
      }
      if (e.all && e.flag === 'read' && e.op === 'add') for (const id of state.unread.idsWhere(() => true)) state.unread.remove(id);
      return;
    }
    case 'subscription': {
      // A new map on every change: compose and the channel list re-render only when it changed.
      state.subs = new Map(state.subs);
      if (e.op === 'add') for (const s of e.subscriptions) {
        state.subs.set(s.stream_id, s);
        state.channelNames.set(s.stream_id, s.name);
      }
      else if (e.op === 'remove') for (const s of e.subscriptions) state.subs.delete(s.stream_id);
      else if (e.op === 'update') {
        const s = state.subs.get(e.stream_id);
        if (s) state.subs.set(e.stream_id, { ...s, [e.property === 'in_home_view' ? 'is_muted' : e.property]: e.property === 'in_home_view' ? !e.value : e.value });
      }
      return;
    }
    case 'stream': {
      state.subs = new Map(state.subs);
      if (e.op === 'update') {
        const s = state.subs.get(e.stream_id);
        if (s) state.subs.set(e.stream_id, { ...s, [e.property]: e.value });
        if (e.property === 'name') state.channelNames.set(e.stream_id, e.value);
      } else if (e.op === 'create') for (const s of e.streams) state.channelNames.set(s.stream_id, s.name);
      else if (e.op === 'delete') for (const s of e.streams ?? []) state.subs.delete(s.stream_id ?? s);
      return;
    }
    case 'realm_user': {
      state.users = new Map(state.users);
      if (e.op === 'add') state.users.set(e.person.user_id, e.person);
      else if (e.op === 'update') {
        const u = state.users.get(e.person.user_id);
        if (u) state.users.set(u.user_id, { ...u, ...e.person });
        if (e.person.user_id === state.me.user_id) state.me = { ...state.me, ...e.person };
      } else if (e.op === 'remove') {
        const u = state.users.get(e.person.user_id);
        if (u) state.users.set(u.user_id, { ...u, is_active: false });
      }
      return;
    }
    case 'presence': {
      applyPresences(state, e.presences ?? { [e.user_id]: e.presence }, e.server_timestamp ?? Date.now() / 1000);
      return;
    }
    case 'typing': {
      const conversation = typingConversation(e, state.me.user_id);
      const userId = e.sender?.user_id;
      state.typing = state.typing.filter((t) => !(t.conversation === conversation && t.userId === userId));
      if (e.op === 'start' && userId !== state.me.user_id) state.typing.push({ conversation, userId, expires: Date.now() + state.realm.typing_started_expiry_period });
      return;
    }
    case 'user_topic': {
      state.userTopics.set(userTopicKey(e.stream_id, e.topic_name), e.visibility_policy);
      return;
    }
    case 'drafts': {
      if (e.op === 'add') state.drafts = [...state.drafts, ...e.drafts];
      else if (e.op === 'update') state.drafts = state.drafts.map((d) => (d.id === e.draft.id ? e.draft : d));
      else if (e.op === 'remove') state.drafts = state.drafts.filter((d) => d.id !== e.draft_id);
      return;
    }
    case 'realm': {
      if (e.op === 'update' && e.property === 'name') state.realm.name = e.value;
      if (e.op === 'update_dict' && e.data?.name) state.realm.name = e.data.name;
      if (e.op === 'update' && e.property === 'enable_read_receipts') state.realm.enable_read_receipts = !!e.value;
      if (e.op === 'update_dict' && e.data?.enable_read_receipts !== undefined) state.realm.enable_read_receipts = !!e.data.enable_read_receipts;
      return;
    }
    case 'realm_emoji': {
      if (e.op === 'update') state.realmEmoji = new Map(Object.entries(e.realm_emoji ?? {}));
      return;
    }
    case 'user_group': {
      state.userGroups = new Map(state.userGroups);
      const g = e.op === 'update' ? state.userGroups.get(e.group_id) : undefined;
      if (e.op === 'add') state.userGroups.set(e.group.id, e.group);
      else if (g) state.userGroups.set(g.id, { ...g, ...e.data });
      else if (e.op === 'remove') state.userGroups.delete(e.group_id);
      return;
    }
    case 'user_settings': {
      if (e.op === 'update' && e.property in state.settings) state.settings = { ...state.settings, [e.property]: e.value };
      return;
    }
    default:
      return;
  }
}

/** Applies one poll's events and renders once. */
export function applyEvents(events: ServerEvent[]): void {
  const state = store.state;
  if (!state) return;
  for (const e of events) {
    applyEvent(state, e);
    applySettingsEvent(state, e);
    state.lastEventId = Math.max(state.lastEventId, e.id);
  }
  store.changed();
}
