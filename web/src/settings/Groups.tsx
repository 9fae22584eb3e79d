import { useState } from 'preact/hooks';
import { api } from '../api/client';
import type { State } from '../state/store';
import { errorText, GroupSettingSelect, inGroupSetting, isGuest, realmAllows, Section, Subsection, TextSetting, useId, useSaver, type GroupSetting } from './common';

interface Group {
  id: number;
  name: string;
  description: string;
  members: number[];
  direct_subgroup_ids: number[];
  is_system_group: boolean;
  deactivated: boolean;
  [setting: string]: any;
}

const GROUP_PERMISSIONS: [string, string][] = [
  ['can_manage_group', 'Who can administer this group'],
  ['can_mention_group', 'Who can mention this group'],
  ['can_add_members_group', 'Who can add members to this group'],
  ['can_remove_members_group', 'Who can remove members from this group'],
  ['can_join_group', 'Who can join this group'],
  ['can_leave_group', 'Who can leave this group'],
];

const slug = (g: Group) => `#groups/${g.id}/${encodeURIComponent(g.name.replace(/\s+/g, '-'))}`;

/** Administering a group, read from the group's and the organization's settings. */
const canManage = (s: State, g: Group) => realmAllows(s, 'can_manage_all_groups') || inGroupSetting(s, g.can_manage_group);

/** `#groups/your`, `#groups/all`, `#groups/new`, `#groups/<id>/<name>/<tab>`; the groups come from register, kept live. */
export function Groups({ s, path }: { s: State; path: string[] }) {
  const which = path[0] ?? 'your';
  const groups: Group[] = (s.reg.realm_user_groups ?? []).filter((g: Group) => !g.is_system_group);
  if (isGuest(s)) return <Section title="User groups"><p class="settings-denied" role="alert">Guests cannot manage user groups.</p></Section>;
  const selected = /^\d+$/.test(which) ? groups.find((g) => g.id === Number(which)) : undefined;
  const shown = groups.filter((g) => (which === 'your' ? g.members.includes(s.me.user_id) && !g.deactivated : true));
  return (
    <Section title="User groups">
      <nav class="settings-tabs" aria-label="Group lists">
        <a href="#groups/your" aria-current={which === 'your' ? 'page' : undefined}>
          Your groups
        </a>
        <a href="#groups/all" aria-current={which === 'all' ? 'page' : undefined}>
          All groups
        </a>
        <a href="#groups/new" aria-current={which === 'new' ? 'page' : undefined}>
          Create user group
        </a>
      </nav>
      {which === 'new' ? (
        <CreateGroup s={s} />
      ) : selected ? (
        <GroupSettings s={s} g={selected} tab={path[2] ?? 'general'} />
      ) : (
        <ul class="plain channel-rows" aria-label="User groups">
          {shown.map((g) => (
            <li class="channel-row">
              <div>
                <a href={slug(g)}>
                  <strong>{g.name}</strong>
                </a>
                {g.deactivated && <span class="tag">Deactivated</span>}
                <span class="muted"> {g.members.length} members</span>
                {g.description && <p class="muted">{g.description}</p>}
              </div>
            </li>
          ))}
          {shown.length === 0 && <li>No user groups.</li>}
        </ul>
      )}
    </Section>
  );
}

function CreateGroup({ s }: { s: State }) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [error, setError] = useState<string | null>(null);
  const ids = { n: useId('gn'), d: useId('gd') };
  if (!realmAllows(s, 'can_create_groups')) return <p role="alert">This organization does not let you create user groups.</p>;
  return (
    <form
      class="setting-grid"
      aria-label="Create user group"
      onSubmit={(e) => {
        e.preventDefault();
        api('POST', '/user_groups/create', { name, description, members: [s.me.user_id] }).then(
          (r) => (window.location.hash = `#groups/${r.group_id}/${encodeURIComponent(name)}/members`),
          (e) => setError(errorText(e)),
        );
      }}
    >
      <label for={ids.n}>User group name</label>
      <input id={ids.n} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <label for={ids.d}>User group description</label>
      <input id={ids.d} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      <div class="setting-actions grid-wide">
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

function GroupSettings({ s, g, tab }: { s: State; g: Group; tab: string }) {
  const base = slug(g);
  const reason = canManage(s, g) ? undefined : 'Only the administrators of this group can change it.';
  const patch = (params: Record<string, unknown>) => api('PATCH', `/user_groups/${g.id}`, params as any);
  const saver = useSaver();
  return (
    <div class="channel-settings">
      <h3>{g.name}</h3>
      <nav class="settings-tabs" aria-label="Group settings">
        <a href={`${base}/general`} aria-current={tab === 'general' ? 'page' : undefined}>
          General
        </a>
        <a href={`${base}/members`} aria-current={tab === 'members' ? 'page' : undefined}>
          Members
        </a>
        <a href={`${base}/permissions`} aria-current={tab === 'permissions' ? 'page' : undefined}>
          Permissions
        </a>
      </nav>
      {tab === 'members' ? (
        <Members s={s} g={g} />
      ) : tab === 'permissions' ? (
        GROUP_PERMISSIONS.map(([name, label]) => <GroupSettingSelect s={s} label={label} value={g[name] as GroupSetting} onSave={(v) => patch({ [name]: { new: v } })} disabledReason={reason} />)
      ) : (
        <div>
          <TextSetting label="User group name" value={g.name} onSave={(v) => patch({ name: v })} disabledReason={reason} />
          <TextSetting label="User group description" value={g.description} onSave={(v) => patch({ description: v })} disabledReason={reason} />
          {!reason && (
            <Subsection title={g.deactivated ? 'Reactivate group' : 'Deactivate group'}>
              {g.deactivated ? (
                <button type="button" onClick={() => void saver.run(() => patch({ deactivated: false }))}>
                  Reactivate group
                </button>
              ) : (
                <button type="button" class="danger" onClick={() => void saver.run(() => api('POST', `/user_groups/${g.id}/deactivate`))}>
                  Deactivate group
                </button>
              )}
              {saver.status}
            </Subsection>
          )}
        </div>
      )}
    </div>
  );
}

function Members({ s, g }: { s: State; g: Group }) {
  const canAdd = !g.deactivated && (canManage(s, g) || inGroupSetting(s, g.can_add_members_group));
  const canRemove = canManage(s, g) || inGroupSetting(s, g.can_remove_members_group);
  const [adding, setAdding] = useState('');
  const saver = useSaver();
  const id = useId('gm');
  const others: Group[] = (s.reg.realm_user_groups ?? []).filter((x: Group) => !x.is_system_group && x.id !== g.id && !g.direct_subgroup_ids.includes(x.id));
  const people = [...s.users.values()].filter((u) => u.is_active && !g.members.includes(u.user_id)).sort((a, b) => a.full_name.localeCompare(b.full_name));
  return (
    <div>
      {canAdd ? (
        <form
          class="setting-row"
          onSubmit={(e) => {
            e.preventDefault();
            const [kind, value] = adding.split(':');
            const path = kind === 'g' ? 'subgroups' : 'members';
            void saver.run(() => api('POST', `/user_groups/${g.id}/${path}`, { add: [Number(value)] })).then(() => setAdding(''));
          }}
        >
          <label for={id}>Add members</label>
          <select id={id} value={adding} onChange={(e) => setAdding(e.currentTarget.value)}>
            <option value=""></option>
            {people.map((u) => (
              <option value={`u:${u.user_id}`}>{u.full_name}</option>
            ))}
            {others.map((x) => (
              <option value={`g:${x.id}`}>Group: {x.name}</option>
            ))}
          </select>
          <button class="primary" type="submit" disabled={!adding}>
            Add
          </button>
        </form>
      ) : (
        <p class="setting-reason">You do not have permission to add members to this group.</p>
      )}
      {saver.status}
      <ul class="plain settings-list" aria-label="Members">
        {g.direct_subgroup_ids.map((sid) => {
          const sub = (s.reg.realm_user_groups ?? []).find((x: Group) => x.id === sid);
          return (
            <li>
              <span>Group: {sub?.name ?? sid}</span>
              {canRemove && (
                <button type="button" aria-label={`Remove group ${sub?.name}`} onClick={() => void saver.run(() => api('POST', `/user_groups/${g.id}/subgroups`, { delete: [sid] }))}>
                  Remove
                </button>
              )}
            </li>
          );
        })}
        {g.members.map((uid) => {
          const u = s.users.get(uid);
          return (
            <li>
              <span>{u?.full_name ?? uid}</span>
              {(canRemove || (uid === s.me.user_id && inGroupSetting(s, g.can_leave_group))) && (
                <button type="button" aria-label={`Remove ${u?.full_name}`} onClick={() => void saver.run(() => api('POST', `/user_groups/${g.id}/members`, { delete: [uid] }))}>
                  Remove
                </button>
              )}
            </li>
          );
        })}
      </ul>
    </div>
  );
}
