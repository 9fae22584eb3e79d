import { useState } from 'preact/hooks';
import { api } from '../api/client';
import type { State } from '../state/store';
import {
  Checkbox,
  errorText,
  GroupSettingSelect,
  inGroupSetting,
  isAdmin,
  isGuest,
  isOwner,
  realmAllows,
  Section,
  Select,
  Subsection,
  TextSetting,
  useFetched,
  useId,
  useSaver,
  OWNER_ONLY,
  type GroupSetting,
} from './common';
import { NOTIFICATIONS } from './Personal';

/** A channel as GET /streams and GET /streams/{id} return it. */
interface Channel {
  stream_id: number;
  name: string;
  description: string;
  invite_only: boolean;
  is_web_public: boolean;
  history_public_to_subscribers: boolean;
  message_retention_days: number | null;
  subscriber_count: number;
  is_archived: boolean;
  [setting: string]: any;
}

const slug = (c: { stream_id: number; name: string }) => `#channels/${c.stream_id}/${encodeURIComponent(c.name.replace(/\s+/g, '-'))}`;

/** The channel's permission settings (Zulip's Stream.stream_permission_group_settings) with their labels. */
const CHANNEL_PERMISSIONS: [string, string][] = [
  ['can_send_message_group', 'Who can post to this channel'],
  ['can_administer_channel_group', 'Who can administer this channel'],
  ['can_subscribe_group', 'Who can subscribe to this channel'],
  ['can_add_subscribers_group', 'Who can subscribe anyone to this channel'],
  ['can_remove_subscribers_group', 'Who can unsubscribe anyone from this channel'],
  ['can_move_messages_within_channel_group', 'Who can move messages inside this channel'],
  ['can_move_messages_out_of_channel_group', 'Who can move messages out of this channel'],
  ['can_resolve_topics_group', 'Who can resolve topics'],
  ['can_delete_any_message_group', 'Who can delete any message in this channel'],
  ['can_delete_own_message_group', 'Who can delete their own messages in this channel'],
];

const canAdminister = (s: State, c: Channel) => isAdmin(s) || inGroupSetting(s, c.can_administer_channel_group);

/** `#channels/subscribed`, `#channels/all`, `#channels/new`, `#channels/<id>/<name>/<tab>`. */
export function Channels({ s, path }: { s: State; path: string[] }) {
  const which = path[0] ?? 'subscribed';
  const { data, error } = useFetched(s, ['stream', 'subscription'], () => api('GET', '/streams', { include_all: true, exclude_archived: false }).then((r) => r.streams as Channel[]));
  const channels = (data ?? []).filter((c) => (which === 'subscribed' ? s.subs.has(c.stream_id) : true));
  const selected = /^\d+$/.test(which) ? (data ?? []).find((c) => c.stream_id === Number(which)) : undefined;
  return (
    <Section title="Channels">
      <nav class="settings-tabs" aria-label="Channel lists">
        <a href="#channels/subscribed" aria-current={which === 'subscribed' ? 'page' : undefined}>
          Subscribed
        </a>
        <a href="#channels/all" aria-current={which === 'all' ? 'page' : undefined}>
          All channels
        </a>
        <a href="#channels/new" aria-current={which === 'new' ? 'page' : undefined}>
          Create channel
        </a>
      </nav>
      {error && <p role="alert">{error}</p>}
      {which === 'new' ? (
        <CreateChannel s={s} />
      ) : selected ? (
        <ChannelSettings s={s} c={selected} tab={path[2] ?? 'general'} />
      ) : /^\d+$/.test(which) ? (
        data && <p role="alert">This channel does not exist, or you cannot see it.</p>
      ) : (
        <ChannelList s={s} channels={channels} loading={!data} />
      )}
    </Section>
  );
}

function ChannelList({ s, channels, loading }: { s: State; channels: Channel[]; loading: boolean }) {
  const saver = useSaver();
  const [filter, setFilter] = useState('');
  const id = useId('filter');
  const shown = channels.filter((c) => c.name.toLowerCase().includes(filter.toLowerCase()));
  return (
    <div>
      <label class="sr-only" for={id}>
        Filter channels
      </label>
      <input id={id} type="search" placeholder="Filter channels" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
      {saver.status}
      {loading ? (
        <p role="status">Loading…</p>
      ) : (
        <ul class="plain channel-rows" aria-label="Channels">
          {shown.map((c) => {
            const subscribed = s.subs.has(c.stream_id);
            const canJoin = !isGuest(s) && (!c.invite_only || inGroupSetting(s, c.can_subscribe_group) || canAdminister(s, c));
            return (
              <li class="channel-row">
                <div>
                  <a href={slug(c)}>
                    <strong>
                      {c.invite_only ? '🔒 ' : c.is_web_public ? '🌐 ' : '#'}
                      {c.name}
                    </strong>
                  </a>
                  {c.is_archived && <span class="tag">Archived</span>}
                  <span class="muted"> {c.subscriber_count} subscribers</span>
                  {c.description && <p class="muted">{c.description}</p>}
                </div>
                {!c.is_archived &&
                  (subscribed ? (
                    <button type="button" aria-label={`Unsubscribe from ${c.name}`} onClick={() => void saver.run(() => api('DELETE', '/users/me/subscriptions', { subscriptions: [c.name] }))}>
                      Unsubscribe
                    </button>
                  ) : (
                    canJoin && (
                      <button type="button" class="primary" aria-label={`Subscribe to ${c.name}`} onClick={() => void saver.run(() => api('POST', '/users/me/subscriptions', { subscriptions: [{ name: c.name }] }))}>
                        Subscribe
                      </button>
                    )
                  ))}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}

type Privacy = 'public' | 'private-shared' | 'private' | 'web-public';

function CreateChannel({ s }: { s: State }) {
  const allowed: [Privacy, string][] = [];
  if (realmAllows(s, 'can_create_web_public_channel_group') && s.reg.server_web_public_streams_enabled && s.reg.realm_enable_spectator_access) allowed.push(['web-public', 'Web-public']);
  if (realmAllows(s, 'can_create_public_channel_group')) allowed.push(['public', 'Public']);
  if (realmAllows(s, 'can_create_private_channel_group')) allowed.push(['private-shared', 'Private, shared history'], ['private', 'Private, protected history']);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [privacy, setPrivacy] = useState<Privacy>(allowed.find(([p]) => p === 'public')?.[0] ?? allowed[0]?.[0] ?? 'public');
  const [members, setMembers] = useState<Set<number>>(new Set([s.me.user_id]));
  const [filter, setFilter] = useState('');
  const [error, setError] = useState<string | null>(null);
  const ids = { name: useId('cn'), desc: useId('cd'), priv: useId('cp'), filter: useId('cf') };
  if (allowed.length === 0) return <p role="alert">You do not have permission to create channels in this organization.</p>;
  const canAddOthers = realmAllows(s, 'can_add_subscribers_group') || isAdmin(s);
  const people = [...s.users.values()].filter((u) => u.is_active && !u.is_bot && u.full_name.toLowerCase().includes(filter.toLowerCase())).sort((a, b) => a.full_name.localeCompare(b.full_name));
  const create = async () => {
    try {
      await api('POST', '/users/me/subscriptions', {
        subscriptions: [{ name, description }],
        principals: [...members],
        invite_only: privacy === 'private' || privacy === 'private-shared',
        is_web_public: privacy === 'web-public',
        history_public_to_subscribers: privacy !== 'private',
      });
      const r = await api('GET', '/get_stream_id', { stream: name });
      window.location.hash = slug({ stream_id: r.stream_id, name });
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <form
      class="setting-grid"
      aria-label="Create channel"
      onSubmit={(e) => {
        e.preventDefault();
        void create();
      }}
    >
      <label for={ids.name}>Channel name</label>
      <input id={ids.name} required maxLength={s.reg.max_stream_name_length ?? 60} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <label for={ids.desc}>Channel description</label>
      <input id={ids.desc} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      <label for={ids.priv}>Who can access the channel?</label>
      <select id={ids.priv} value={privacy} onChange={(e) => setPrivacy(e.currentTarget.value as Privacy)}>
        {allowed.map(([v, t]) => (
          <option value={v}>{t}</option>
        ))}
      </select>
      <fieldset class="subscriber-picker">
        <legend>Choose subscribers</legend>
        {canAddOthers ? (
          <>
            <label class="sr-only" for={ids.filter}>
              Filter people
            </label>
            <input id={ids.filter} type="search" placeholder="Filter people" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
            <div class="picker-list">
              {people.map((u) => (
                <label class="checkbox">
                  <input
                    type="checkbox"
                    checked={members.has(u.user_id)}
                    onChange={(e) => {
                      const next = new Set(members);
                      if (e.currentTarget.checked) next.add(u.user_id);
                      else next.delete(u.user_id);
                      setMembers(next);
                    }}
                  />
                  {u.full_name}
                </label>
              ))}
            </div>
          </>
        ) : (
          <p class="setting-reason">You may subscribe only yourself: this organization does not let you subscribe other people.</p>
        )}
      </fieldset>
      <div class="setting-actions">
        <button class="primary" type="submit" disabled={!name.trim()}>
          Create
        </button>
        {error && (
          <span class="save-status error" role="alert">
            {error}
          </span>
        )}
      </div>
    </form>
  );
}

function ChannelSettings({ s, c, tab }: { s: State; c: Channel; tab: string }) {
  const base = slug(c);
  return (
    <div class="channel-settings">
      <h3>
        {c.invite_only ? '🔒' : '#'}
        {c.name}
      </h3>
      <nav class="settings-tabs" aria-label="Channel settings">
        <a href={`${base}/general`} aria-current={tab === 'general' ? 'page' : undefined}>
          General
        </a>
        <a href={`${base}/personal`} aria-current={tab === 'personal' ? 'page' : undefined}>
          Personal
        </a>
        <a href={`${base}/subscribers`} aria-current={tab === 'subscribers' ? 'page' : undefined}>
          Subscribers
        </a>
      </nav>
      {tab === 'personal' ? <Personal s={s} c={c} /> : tab === 'subscribers' ? <Subscribers s={s} c={c} /> : <General s={s} c={c} />}
    </div>
  );
}

function General({ s, c }: { s: State; c: Channel }) {
  const reason = canAdminister(s, c) ? undefined : 'Only channel administrators can change this.';
  const patch = (params: Record<string, unknown>) => api('PATCH', `/streams/${c.stream_id}`, params as any);
  const privacy = c.is_web_public ? 'web-public' : !c.invite_only ? 'public' : c.history_public_to_subscribers ? 'private-shared' : 'private';
  const saver = useSaver();
  return (
    <div>
      <TextSetting label="Channel name" value={c.name} onSave={(v) => patch({ new_name: v })} disabledReason={reason} />
      <TextSetting label="Channel description" value={c.description} onSave={(v) => patch({ description: v })} disabledReason={reason} />
      <Select
        label="Who can access the channel?"
        value={privacy}
        options={[
          ['web-public', 'Web-public'],
          ['public', 'Public'],
          ['private-shared', 'Private, shared history'],
          ['private', 'Private, protected history'],
        ]}
        onSave={(v) =>
          patch({
            is_private: v === 'private' || v === 'private-shared',
            is_web_public: v === 'web-public',
            history_public_to_subscribers: v !== 'private',
          })
        }
        disabledReason={reason}
      />
      <Select
        label="Message retention period"
        value={c.message_retention_days === null ? 'realm_default' : c.message_retention_days === -1 ? 'unlimited' : String(c.message_retention_days)}
        options={[
          ['realm_default', 'Use organization level settings'],
          ['unlimited', 'Retain forever'],
          ...[30, 90, 365].map((d) => [String(d), `${d} days`] as [string, string]),
          ...(c.message_retention_days && c.message_retention_days > 0 && ![30, 90, 365].includes(c.message_retention_days)
            ? [[String(c.message_retention_days), `${c.message_retention_days} days`] as [string, string]]
            : []),
        ]}
        onSave={(v) => patch({ message_retention_days: /^\d+$/.test(v) ? Number(v) : v })}
        disabledReason={isOwner(s) ? undefined : OWNER_ONLY}
      />
      <ChannelFolder s={s} c={c} reason={reason} patch={patch} />
      <Subsection title="Permissions">
        {CHANNEL_PERMISSIONS.map(([name, label]) =>
          c[name] === undefined ? null : (
            <GroupSettingSelect s={s} label={label} value={c[name] as GroupSetting} onSave={(g) => patch({ [name]: { new: g } })} disabledReason={reason} />
          ),
        )}
      </Subsection>
      <Subsection title={c.is_archived ? 'Unarchive channel' : 'Archive channel'}>
        {reason ? (
          <p class="setting-reason">{reason}</p>
        ) : c.is_archived ? (
          <button type="button" onClick={() => void saver.run(() => patch({ is_archived: false }))}>
            Unarchive channel
          </button>
        ) : (
          <button
            type="button"
            class="danger"
            onClick={() => {
              if (window.confirm(`Archive #${c.name}? It will be removed from everyone's sidebar.`)) void saver.run(() => api('DELETE', `/streams/${c.stream_id}`));
            }}
          >
            Archive channel
          </button>
        )}
        {saver.status}
      </Subsection>
    </div>
  );
}

function Personal({ s, c }: { s: State; c: Channel }) {
  const sub = s.subs.get(c.stream_id) as Record<string, any> | undefined;
  if (!sub) return <p>You are not subscribed to this channel; its personal settings apply to subscribers.</p>;
  const set = (property: string, value: unknown) => api('POST', '/users/me/subscriptions/properties', { subscription_data: [{ stream_id: c.stream_id, property, value }] });
  const us = s.reg.user_settings ?? {};
  return (
    <div>
      <Checkbox label="Mute channel" checked={!!sub.is_muted} onSave={(v) => set('is_muted', v)} />
      <Checkbox label="Pin channel to top of left sidebar" checked={!!sub.pin_to_top} onSave={(v) => set('pin_to_top', v)} />
      <ColorSetting color={sub.color} onSave={(v) => set('color', v)} />
      <Subsection title="Notification settings">
        {[
          ...NOTIFICATIONS.map(([prop, global, , , label]): [string, string, string] => [prop, global, label]),
          ['wildcard_mentions_notify', 'wildcard_mentions_notify', 'Notify for @all, @everyone and @channel mentions'] as [string, string, string],
        ].map(([prop, global, label]) => (
          <Checkbox label={label} checked={(sub as any)[prop] ?? !!us[global]} onSave={(v) => set(prop, v)} />
        ))}
      </Subsection>
    </div>
  );
}

/** The folder the channel is listed in (the organization's channel folders, none for no folder). */
function ChannelFolder({ s, c, reason, patch }: { s: State; c: Channel; reason?: string; patch: (params: Record<string, unknown>) => Promise<unknown> }) {
  const { data } = useFetched(s, ['channel_folder'], () => api('GET', '/channel_folders').then((r) => r.channel_folders as { id: number; name: string }[]));
  return (
    <Select
      label="Channel folder"
      value={c.folder_id ?? -1}
      options={[[-1, 'None'], ...(data ?? []).map((f) => [f.id, f.name] as [number, string])]}
      onSave={(v) => patch({ folder_id: v === -1 ? null : v })}
      disabledReason={reason}
    />
  );
}

function ColorSetting({ color, onSave }: { color: string; onSave: (v: string) => Promise<unknown> }) {
  const id = useId('color');
  const saver = useSaver();
  return (
    <div class="setting">
      <label for={id}>Channel color</label>
      <input id={id} type="color" value={color} onChange={(e) => void saver.run(() => onSave(e.currentTarget.value))} />
      {saver.status}
    </div>
  );
}

function Subscribers({ s, c }: { s: State; c: Channel }) {
  const { data, error } = useFetched(s, ['subscription', 'stream'], () => api('GET', `/streams/${c.stream_id}/members`).then((r) => r.subscribers as number[]), [c.stream_id]);
  const saver = useSaver();
  const [adding, setAdding] = useState(0);
  const id = useId('addsub');
  const canAdd = !c.is_archived && (canAdminister(s, c) || inGroupSetting(s, c.can_add_subscribers_group) || realmAllows(s, 'can_add_subscribers_group'));
  const canRemoveOthers = canAdminister(s, c) || inGroupSetting(s, c.can_remove_subscribers_group);
  const members = new Set(data ?? []);
  const candidates = [...s.users.values()].filter((u) => u.is_active && !members.has(u.user_id)).sort((a, b) => a.full_name.localeCompare(b.full_name));
  return (
    <div>
      {error && <p role="alert">{error}</p>}
      {canAdd ? (
        <form
          class="setting-row"
          onSubmit={(e) => {
            e.preventDefault();
            if (adding) void saver.run(() => api('POST', '/users/me/subscriptions', { subscriptions: [{ name: c.name }], principals: [adding] })).then(() => setAdding(0));
          }}
        >
          <label for={id}>Add subscribers</label>
          <select id={id} value={String(adding)} onChange={(e) => setAdding(Number(e.currentTarget.value))}>
            <option value="0"></option>
            {candidates.map((u) => (
              <option value={String(u.user_id)}>{u.full_name}</option>
            ))}
          </select>
          <button class="primary" type="submit" disabled={!adding}>
            Add
          </button>
        </form>
      ) : (
        <p class="setting-reason">You do not have permission to add other people to this channel.</p>
      )}
      {saver.status}
      <ul class="plain settings-list" aria-label="Subscribers">
        {[...members]
          .map((uid) => s.users.get(uid))
          .filter((u) => u !== undefined)
          .sort((a, b) => a.full_name.localeCompare(b.full_name))
          .map((u) => (
            <li>
              <span>{u.full_name}</span>
              <span class="muted">{u.email}</span>
              {(u.user_id === s.me.user_id || canRemoveOthers) && (
                <button type="button" aria-label={`Unsubscribe ${u.full_name}`} onClick={() => void saver.run(() => api('DELETE', '/users/me/subscriptions', { subscriptions: [c.name], principals: [u.user_id] }))}>
                  Unsubscribe
                </button>
              )}
            </li>
          ))}
      </ul>
    </div>
  );
}
