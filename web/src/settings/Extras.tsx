import { useState } from 'preact/hooks';
import { api } from '../api/client';
import type { State } from '../state/store';
import { ADMIN_ONLY, errorText, FormActions, isAdmin, isOwner, realmAllows, Section, uploadForm, useFetched, useId, useSaver } from './common';

/** A form of labelled inputs with one submit button, cleared once the server accepted it. */
function AddForm({ title, fields, submit, onSubmit }: { title: string; fields: [key: string, label: string][]; submit: string; onSubmit: (values: Record<string, string>) => Promise<unknown> }) {
  const [values, setValues] = useState<Record<string, string>>({});
  const saver = useSaver();
  const base = useId('add');
  return (
    <form
      class="setting-grid"
      aria-label={title}
      onSubmit={(e) => {
        e.preventDefault();
        void saver.run(() => onSubmit(values)).then((ok) => ok && setValues({}));
      }}
    >
      <h3 class="grid-wide">{title}</h3>
      {fields.map(([key, label]) => (
        <>
          <label for={`${base}-${key}`}>{label}</label>
          <input id={`${base}-${key}`} value={values[key] ?? ''} onInput={(e) => setValues({ ...values, [key]: e.currentTarget.value })} />
        </>
      ))}
      <div class="setting-actions grid-wide">
        <button class="primary" type="submit">
          {submit}
        </button>
        {saver.status}
      </div>
    </form>
  );
}

/** Zulip's linkifier preview: the pattern (Python syntax) run on a sample, the template filled in. */
export function linkifierPreview(pattern: string, template: string, sample: string): string | null {
  let re: RegExp;
  try {
    re = new RegExp(pattern.replace(/\(\?P</g, '(?<'), 'u');
  } catch {
    return null;
  }
  const m = re.exec(sample);
  if (!m) return null;
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(m.groups?.[name] ?? ''));
}

export function Linkifiers({ s }: { s: State }) {
  const linkifiers: { id: number; pattern: string; url_template: string }[] = s.reg.realm_linkifiers ?? [];
  const saver = useSaver();
  const [pattern, setPattern] = useState('');
  const [template, setTemplate] = useState('');
  const [sample, setSample] = useState('');
  const ids = { p: useId('lp'), t: useId('lt'), s: useId('ls') };
  const preview = pattern && template && sample ? linkifierPreview(pattern, template, sample) : null;
  return (
    <Section title="Linkifiers" intro="Linkifiers turn text matching a pattern into a link, e.g. #1234 into a link to that issue.">
      {isAdmin(s) ? (
        <form
          class="setting-grid"
          aria-label="Add a new linkifier"
          onSubmit={(e) => {
            e.preventDefault();
            void saver.run(() => api('POST', '/realm/filters', { pattern, url_template: template })).then((ok) => {
              if (ok) {
                setPattern('');
                setTemplate('');
              }
            });
          }}
        >
          <h3 class="grid-wide">Add a new linkifier</h3>
          <label for={ids.p}>Pattern</label>
          <input id={ids.p} value={pattern} placeholder="#(?P<id>[0-9]+)" onInput={(e) => setPattern(e.currentTarget.value)} />
          <label for={ids.t}>URL template</label>
          <input id={ids.t} value={template} placeholder="https://github.com/zulip/zulip/issues/{id}" onInput={(e) => setTemplate(e.currentTarget.value)} />
          <label for={ids.s}>Sample text</label>
          <input id={ids.s} value={sample} placeholder="#1234" onInput={(e) => setSample(e.currentTarget.value)} />
          <p class="grid-wide" role="status" aria-label="Linkifier preview">
            {sample ? (preview ? `Links to ${preview}` : 'The pattern does not match the sample.') : ''}
          </p>
          <div class="setting-actions grid-wide">
            <button class="primary" type="submit" disabled={!pattern || !template}>
              Add linkifier
            </button>
            {saver.status}
          </div>
        </form>
      ) : (
        <p class="setting-reason">{ADMIN_ONLY}</p>
      )}
      <table class="settings-table" aria-label="Linkifiers">
        <thead>
          <tr>
            <th scope="col">Pattern</th>
            <th scope="col">URL template</th>
            {isAdmin(s) && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {linkifiers.map((l) => (
            <tr>
              <td>
                <code>{l.pattern}</code>
              </td>
              <td>
                <code>{l.url_template}</code>
              </td>
              {isAdmin(s) && (
                <td>
                  <button type="button" class="danger" aria-label={`Delete linkifier ${l.pattern}`} onClick={() => void saver.run(() => api('DELETE', `/realm/filters/${l.id}`))}>
                    Delete
                  </button>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </Section>
  );
}

export function Playgrounds({ s }: { s: State }) {
  const list: { id: number; name: string; pygments_language: string; url_template: string }[] = s.reg.realm_playgrounds ?? [];
  const saver = useSaver();
  return (
    <Section title="Code playgrounds">
      {isAdmin(s) ? (
        <AddForm
          title="Add a new code playground"
          fields={[
            ['pygments_language', 'Language'],
            ['name', 'Name'],
            ['url_template', 'URL template'],
          ]}
          submit="Add code playground"
          onSubmit={(v) => api('POST', '/realm/playgrounds', v)}
        />
      ) : (
        <p class="setting-reason">{ADMIN_ONLY}</p>
      )}
      {saver.status}
      <ul class="plain settings-list" aria-label="Code playgrounds">
        {list.map((p) => (
          <li>
            <span>
              {p.pygments_language}: {p.name} — <code>{p.url_template}</code>
            </span>
            {isAdmin(s) && (
              <button type="button" class="danger" aria-label={`Delete playground ${p.name}`} onClick={() => void saver.run(() => api('DELETE', `/realm/playgrounds/${p.id}`))}>
                Delete
              </button>
            )}
          </li>
        ))}
      </ul>
    </Section>
  );
}

export function CustomEmoji({ s }: { s: State }) {
  const emoji = Object.values((s.reg.realm_emoji ?? {}) as Record<string, { id: string; name: string; source_url: string; deactivated: boolean; author_id: number | null }>).filter((e) => !e.deactivated);
  const canAdd = realmAllows(s, 'can_add_custom_emoji_group');
  const [name, setName] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const saver = useSaver();
  const ids = { n: useId('en'), f: useId('ef') };
  return (
    <Section title="Custom emoji">
      {canAdd ? (
        <form
          class="setting-grid"
          aria-label="Add a new emoji"
          onSubmit={(e) => {
            e.preventDefault();
            if (file) void saver.run(() => uploadForm('POST', `/realm/emoji/${encodeURIComponent(name)}`, { file })).then((ok) => ok && setName(''));
          }}
        >
          <h3 class="grid-wide">Add a new emoji</h3>
          <label for={ids.n}>Emoji name</label>
          <input id={ids.n} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <label for={ids.f}>Upload emoji</label>
          <input id={ids.f} type="file" accept="image/*" onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
          <div class="setting-actions grid-wide">
            <button class="primary" type="submit" disabled={!name || !file}>
              Add emoji
            </button>
            {saver.status}
          </div>
        </form>
      ) : (
        <p class="setting-reason">This organization does not let you add custom emoji.</p>
      )}
      <ul class="plain settings-list emoji-list" aria-label="Custom emoji">
        {emoji.map((e) => (
          <li>
            <img src={e.source_url} alt="" width={24} height={24} />
            <span>:{e.name}:</span>
            <span class="muted">{e.author_id ? s.users.get(e.author_id)?.full_name : ''}</span>
            {(isAdmin(s) || (canAdd && e.author_id === s.me.user_id)) && (
              <button type="button" class="danger" aria-label={`Deactivate emoji ${e.name}`} onClick={() => void saver.run(() => api('DELETE', `/realm/emoji/${encodeURIComponent(e.name)}`))}>
                Deactivate
              </button>
            )}
          </li>
        ))}
      </ul>
    </Section>
  );
}

const FIELD_TYPES: [number, string][] = [
  [1, 'Text (short)'],
  [2, 'Text (long)'],
  [3, 'List of options'],
  [4, 'Date'],
  [5, 'Link'],
  [6, 'Users'],
  [8, 'Pronouns'],
];

export function ProfileFields({ s }: { s: State }) {
  const fields: { id: number; name: string; hint: string; type: number; field_data: string }[] = s.reg.custom_profile_fields ?? [];
  const saver = useSaver();
  const [name, setName] = useState('');
  const [hint, setHint] = useState('');
  const [type, setType] = useState(1);
  const [options, setOptions] = useState('');
  const ids = { n: useId('pn'), h: useId('ph'), t: useId('pt'), o: useId('po') };
  const [editing, setEditing] = useState<number | null>(null);
  const reorder = (i: number, by: number) => {
    const order = fields.map((f) => f.id);
    const [moved] = order.splice(i, 1);
    order.splice(i + by, 0, moved!);
    void saver.run(() => api('PATCH', '/realm/profile_fields', { order }));
  };
  const fieldData = () =>
    type === 3 ? { field_data: choicesData(options.split('\n').map((text, i) => ({ id: String(i), text }))) } : {};
  if (!isAdmin(s)) return <Section title="Custom profile fields"><p class="setting-reason">{ADMIN_ONLY}</p></Section>;
  return (
    <Section title="Custom profile fields">
      <form
        class="setting-grid"
        aria-label="Add a new profile field"
        onSubmit={(e) => {
          e.preventDefault();
          void saver.run(() => api('POST', '/realm/profile_fields', { name, hint, field_type: type, ...fieldData() })).then((ok) => ok && (setName(''), setHint(''), setOptions('')));
        }}
      >
        <h3 class="grid-wide">Add a new profile field</h3>
        <label for={ids.t}>Type</label>
        <select id={ids.t} value={String(type)} onChange={(e) => setType(Number(e.currentTarget.value))}>
          {FIELD_TYPES.map(([v, t]) => (
            <option value={String(v)}>{t}</option>
          ))}
        </select>
        <label for={ids.n}>Label</label>
        <input id={ids.n} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <label for={ids.h}>Hint</label>
        <input id={ids.h} value={hint} onInput={(e) => setHint(e.currentTarget.value)} />
        {type === 3 && (
          <>
            <label for={ids.o}>Field choices (one on each line)</label>
            <textarea id={ids.o} rows={3} value={options} onInput={(e) => setOptions(e.currentTarget.value)} />
          </>
        )}
        <div class="setting-actions grid-wide">
          <button class="primary" type="submit" disabled={!name.trim()}>
            Add
          </button>
          {saver.status}
        </div>
      </form>
      <table class="settings-table" aria-label="Custom profile fields">
        <thead>
          <tr>
            <th scope="col">Label</th>
            <th scope="col">Type</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {fields.map((f, i) => (
            <tr>
              <th scope="row">{editing === f.id ? <EditField f={f} onDone={() => setEditing(null)} /> : f.name}</th>
              <td>{FIELD_TYPES.find(([t]) => t === f.type)?.[1] ?? 'External account'}</td>
              <td class="row-actions">
                <button type="button" aria-label={`Move ${f.name} up`} disabled={i === 0} onClick={() => reorder(i, -1)}>
                  ↑
                </button>
                <button type="button" aria-label={`Move ${f.name} down`} disabled={i === fields.length - 1} onClick={() => reorder(i, 1)}>
                  ↓
                </button>
                <button type="button" aria-label={`Edit ${f.name}`} onClick={() => setEditing(f.id)}>
                  Edit
                </button>
                <button type="button" class="danger" aria-label={`Delete ${f.name}`} onClick={() => void saver.run(() => api('DELETE', `/realm/profile_fields/${f.id}`))}>
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Section>
  );
}

const BOT_TYPES: [number, string][] = [
  [1, 'Generic bot'],
  [2, 'Incoming webhook'],
  [3, 'Outgoing webhook'],
];

interface BotRow {
  user_id: number;
  full_name: string;
  email: string;
  is_active: boolean;
  bot_owner_id?: number | null;
  bot_type?: number;
}

/** Bots: the person's own (`#settings/your-bots`) or, for administrators, all (`#organization/bots`). */
export function Bots({ s, mine }: { s: State; mine?: boolean }) {
  const { data, error } = useFetched(s, ['realm_bot', 'realm_user'], () => api('GET', '/users').then((r) => (r.members as any[]).filter((u) => u.is_bot && !u.is_system_bot) as BotRow[]));
  const bots = (data ?? []).filter((b) => !mine || b.bot_owner_id === s.me.user_id);
  const anyBot = realmAllows(s, 'can_create_bots_group');
  const writeOnly = anyBot || realmAllows(s, 'can_create_write_only_bots_group');
  const types = BOT_TYPES.filter(([t]) => anyBot || (writeOnly && t === 2));
  const [name, setName] = useState('');
  const [short, setShort] = useState('');
  const [type, setType] = useState(types[0]?.[0] ?? 1);
  const [keys, setKeys] = useState<Record<number, string>>({});
  const [editing, setEditing] = useState<number | null>(null);
  const saver = useSaver();
  const ids = { n: useId('bn'), e: useId('be'), t: useId('bt') };
  const showKey = async (id: number, regenerate = false) => {
    try {
      const r = await (regenerate ? api('POST', `/bots/${id}/api_key/regenerate`) : api('GET', `/bots/${id}/api_key`));
      setKeys({ ...keys, [id]: r.api_key });
    } catch (e) {
      setKeys({ ...keys, [id]: errorText(e) });
    }
  };
  return (
    <Section title="Bots">
      {mine &&
        (types.length > 0 ? (
          <form
            class="setting-grid"
            aria-label="Add a new bot"
            onSubmit={(e) => {
              e.preventDefault();
              void saver.run(() => api('POST', '/bots', { full_name: name, short_name: short, bot_type: type })).then((ok) => ok && (setName(''), setShort('')));
            }}
          >
            <h3 class="grid-wide">Add a new bot</h3>
            <label for={ids.t}>Bot type</label>
            <select id={ids.t} value={String(type)} onChange={(e) => setType(Number(e.currentTarget.value))}>
              {types.map(([v, t]) => (
                <option value={String(v)}>{t}</option>
              ))}
            </select>
            <label for={ids.n}>Name</label>
            <input id={ids.n} value={name} onInput={(e) => setName(e.currentTarget.value)} />
            <label for={ids.e}>Bot email</label>
            <div class="setting-row">
              <input id={ids.e} value={short} onInput={(e) => setShort(e.currentTarget.value)} />
              <span class="muted">-bot@{s.reg.realm_bot_domain}</span>
            </div>
            <div class="setting-actions grid-wide">
              <button class="primary" type="submit" disabled={!name || !short}>
                Create bot
              </button>
              {saver.status}
            </div>
          </form>
        ) : (
          <p class="setting-reason">This organization does not let you create bots.</p>
        ))}
      {error && <p role="alert">{error}</p>}
      {!mine && saver.status}
      <table class="settings-table" aria-label="Bots">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Email</th>
            <th scope="col">Owner</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {bots.map((b) => [
            <tr>
              <th scope="row">
                {b.full_name}
                {!b.is_active && <span class="tag">Deactivated</span>}
              </th>
              <td>{b.email}</td>
              <td>{b.bot_owner_id ? s.users.get(b.bot_owner_id)?.full_name : ''}</td>
              <td class="row-actions">
                {b.bot_owner_id === s.me.user_id && b.is_active && (
                  <>
                    {keys[b.user_id] ? (
                      <code aria-label={`API key of ${b.full_name}`}>{keys[b.user_id]}</code>
                    ) : (
                      <button type="button" onClick={() => void showKey(b.user_id)}>
                        Show API key
                      </button>
                    )}
                    <button type="button" aria-label={`Generate a new API key for ${b.full_name}`} onClick={() => void showKey(b.user_id, true)}>
                      Generate new API key
                    </button>
                  </>
                )}
                {(b.bot_owner_id === s.me.user_id || isAdmin(s)) && b.is_active && (
                  <button type="button" aria-label={`Edit ${b.full_name}`} aria-expanded={editing === b.user_id} onClick={() => setEditing(editing === b.user_id ? null : b.user_id)}>
                    Edit
                  </button>
                )}
                {(b.bot_owner_id === s.me.user_id || isAdmin(s)) &&
                  (b.is_active ? (
                    <button type="button" class="danger" aria-label={`Deactivate ${b.full_name}`} onClick={() => void saver.run(() => api('DELETE', `/bots/${b.user_id}`))}>
                      Deactivate
                    </button>
                  ) : (
                    <button type="button" aria-label={`Reactivate ${b.full_name}`} onClick={() => void saver.run(() => api('POST', `/users/${b.user_id}/reactivate`))}>
                      Reactivate
                    </button>
                  ))}
              </td>
            </tr>,
            editing === b.user_id && (
              <tr>
                <td colSpan={4}>
                  <EditBot s={s} bot={b} onDone={() => setEditing(null)} />
                </td>
              </tr>
            ),
          ])}
        </tbody>
      </table>
    </Section>
  );
}

/** A bot's name, owner and default channels (PATCH /bots/{id}); the defaults come from register's realm_bots. */
function EditBot({ s, bot, onDone }: { s: State; bot: BotRow; onDone: () => void }) {
  const info = ((s.reg.realm_bots ?? []) as { user_id: number; default_sending_stream: string | null; default_events_register_stream: string | null }[]).find((x) => x.user_id === bot.user_id);
  const [name, setName] = useState(bot.full_name);
  const [owner, setOwner] = useState(bot.bot_owner_id ?? s.me.user_id);
  const [sending, setSending] = useState(info?.default_sending_stream ?? '');
  const [events, setEvents] = useState(info?.default_events_register_stream ?? '');
  const saver = useSaver();
  const ids = { n: useId('ebn'), o: useId('ebo'), s: useId('ebs'), e: useId('ebe') };
  const people = [...s.users.values()].filter((u) => u.is_active && !u.is_bot).sort((a, b) => a.full_name.localeCompare(b.full_name));
  const channels = [...s.channelNames.values()].sort((a, b) => a.localeCompare(b));
  const channelSelect = (id: string, value: string, set: (v: string) => void) => (
    <select id={id} value={value} onChange={(e) => set(e.currentTarget.value)}>
      <option value="">(none)</option>
      {channels.map((c) => (
        <option value={c}>#{c}</option>
      ))}
    </select>
  );
  return (
    <form
      class="setting-grid"
      aria-label={`Edit ${bot.full_name}`}
      onSubmit={(e) => {
        e.preventDefault();
        const params = { full_name: name, bot_owner_id: owner, default_sending_stream: sending, default_events_register_stream: events };
        void saver.run(() => api('PATCH', `/bots/${bot.user_id}`, params)).then((ok) => ok && onDone());
      }}
    >
      <label for={ids.n}>Name</label>
      <input id={ids.n} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <label for={ids.o}>Owner</label>
      <select id={ids.o} value={String(owner)} onChange={(e) => setOwner(Number(e.currentTarget.value))}>
        {people.map((u) => (
          <option value={String(u.user_id)}>{u.full_name}</option>
        ))}
      </select>
      <label for={ids.s}>Default channel for messages it sends</label>
      {channelSelect(ids.s, sending, setSending)}
      <label for={ids.e}>Default channel for events it registers for</label>
      {channelSelect(ids.e, events, setEvents)}
      <FormActions onCancel={onDone} status={saver.status} />
    </form>
  );
}

interface FieldChoice {
  id: string;
  text: string;
}

/** A select field's choices from its field_data (`{"<id>": {"text", "order"}}`), in order. */
function parseChoices(fieldData: string): FieldChoice[] {
  let data: Record<string, { text: string; order: string }> = {};
  try {
    data = JSON.parse(fieldData || '{}');
  } catch {
    return [];
  }
  return Object.entries(data)
    .sort((a, b) => Number(a[1].order) - Number(b[1].order))
    .map(([id, c]) => ({ id, text: c.text }));
}

/** Choices back to field_data: ids kept (people's answers name them), order as listed. */
const choicesData = (choices: FieldChoice[]) => Object.fromEntries(choices.filter((c) => c.text.trim()).map((c, i) => [c.id, { text: c.text.trim(), order: String(i) }]));

/** A profile field's label and hint, and a select field's choices, changed in place (PATCH /realm/profile_fields/{id}). */
function EditField({ f, onDone }: { f: { id: number; name: string; hint: string; type: number; field_data: string }; onDone: () => void }) {
  const [name, setName] = useState(f.name);
  const [hint, setHint] = useState(f.hint);
  const [choices, setChoices] = useState(() => parseChoices(f.field_data));
  const saver = useSaver();
  const ids = { n: useId('efn'), h: useId('efh') };
  const setChoice = (i: number, text: string) => setChoices(choices.map((c, j) => (j === i ? { ...c, text } : c)));
  const nextId = () => String(Math.max(-1, ...choices.map((c) => Number(c.id)).filter(Number.isFinite)) + 1);
  return (
    <form
      class="setting-grid"
      aria-label={`Edit ${f.name}`}
      onSubmit={(e) => {
        e.preventDefault();
        void saver.run(() => api('PATCH', `/realm/profile_fields/${f.id}`, { name, hint, ...(f.type === 3 ? { field_data: choicesData(choices) } : {}) })).then((ok) => ok && onDone());
      }}
    >
      <label for={ids.n}>Label</label>
      <input id={ids.n} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <label for={ids.h}>Hint</label>
      <input id={ids.h} value={hint} onInput={(e) => setHint(e.currentTarget.value)} />
      {f.type === 3 && (
        <fieldset class="grid-wide picker-list">
          <legend>Field choices</legend>
          {choices.map((c, i) => (
            <div class="setting-row">
              <input aria-label={`Choice ${i + 1}`} value={c.text} onInput={(e) => setChoice(i, e.currentTarget.value)} />
              <button type="button" aria-label={`Remove choice ${i + 1}`} onClick={() => setChoices(choices.filter((_, j) => j !== i))}>
                Remove
              </button>
            </div>
          ))}
          <button type="button" onClick={() => setChoices([...choices, { id: nextId(), text: '' }])}>
            Add choice
          </button>
        </fieldset>
      )}
      <FormActions onCancel={onDone} status={saver.status} />
    </form>
  );
}

interface RealmExport {
  id: number;
  export_time: number;
  acting_user_id: number;
  export_url: string | null;
  deleted_timestamp: number | null;
  failed_timestamp: number | null;
  pending: boolean;
  export_type: string | number;
}

const EXPORT_TYPE_NAMES: Record<string, string> = {
  public: 'Public data',
  full_with_consent: 'Full, with member consent',
  full_without_consent: 'Full, without member consent',
  '1': 'Public data',
  '2': 'Full, with member consent',
  '3': 'Full, without member consent',
};

/** Zulip's "Data exports" (administrators): start an export, follow it live, download or delete it. */
export function DataExports({ s }: { s: State }) {
  const { data, error } = useFetched(s, ['realm_export'], () => api('GET', '/export/realm').then((r) => r.exports as RealmExport[]));
  const [type, setType] = useState('public');
  const saver = useSaver();
  const typeId = useId('export-type');
  const owner = isOwner(s);
  const rows = (data ?? []).filter((e) => e.deleted_timestamp === null).sort((a, b) => b.export_time - a.export_time);
  return (
    <Section title="Data exports" intro="An export holds the organization's data in Zulip's export format, to move it to another server or keep a copy. It is made in the background; this list updates when it is ready.">
      <form
        class="setting-grid"
        aria-label="Start a new export"
        onSubmit={(e) => {
          e.preventDefault();
          void saver.run(() => api('POST', '/export/realm', { export_type: type }));
        }}
      >
        <label for={typeId}>Export type</label>
        <select id={typeId} value={type} onChange={(e) => setType(e.currentTarget.value)}>
          <option value="public">Public data</option>
          <option value="full_with_consent" disabled={!owner}>
            Full, with member consent{owner ? '' : ' (owners only)'}
          </option>
        </select>
        <div class="setting-actions grid-wide">
          <button class="primary" type="submit">
            Start export
          </button>
          {saver.status}
        </div>
      </form>
      {error && <p role="alert">{error}</p>}
      {data && rows.length === 0 && <p>There are no exports yet.</p>}
      {rows.length > 0 && (
        <table class="settings-table" aria-label="Data exports">
          <thead>
            <tr>
              <th scope="col">Requested by</th>
              <th scope="col">Type</th>
              <th scope="col">Time</th>
              <th scope="col">Status</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((e) => {
              const when = new Date(e.export_time * 1000).toLocaleString();
              return (
                <tr>
                  <th scope="row">{s.users.get(e.acting_user_id)?.full_name ?? ''}</th>
                  <td>{EXPORT_TYPE_NAMES[String(e.export_type)] ?? String(e.export_type)}</td>
                  <td>{when}</td>
                  <td>
                    {e.failed_timestamp !== null ? (
                      'Failed'
                    ) : e.pending || !e.export_url ? (
                      'In progress'
                    ) : (
                      <a href={e.export_url} download aria-label={`Download export of ${when}`}>
                        Download
                      </a>
                    )}
                  </td>
                  <td class="row-actions">
                    <button type="button" class="danger" aria-label={`Delete export of ${when}`} onClick={() => void saver.run(() => api('DELETE', `/export/realm/${e.id}`))}>
                      Delete
                    </button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </Section>
  );
}
