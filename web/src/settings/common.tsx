import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, csrfToken, NetworkError, type Params } from '../api/client';
import type { State } from '../state/store';

/** Zulip's role values (UserProfile.ROLE_*), as register and the users list carry them. */
export const ROLE = { OWNER: 100, ADMIN: 200, MODERATOR: 300, MEMBER: 400, GUEST: 600 } as const;
export const ROLE_NAMES: [number, string][] = [
  [ROLE.OWNER, 'Owner'],
  [ROLE.ADMIN, 'Administrator'],
  [ROLE.MODERATOR, 'Moderator'],
  [ROLE.MEMBER, 'Member'],
  [ROLE.GUEST, 'Guest'],
];
export const roleName = (role: number) => ROLE_NAMES.find(([r]) => r === role)?.[1] ?? 'Member';

export const isAdmin = (s: State) => s.me.role <= ROLE.ADMIN;
export const isOwner = (s: State) => s.me.role === ROLE.OWNER;
export const isGuest = (s: State) => s.me.role === ROLE.GUEST;

export const ADMIN_ONLY = 'Only organization administrators can change this.';
export const OWNER_ONLY = 'Only organization owners can change this.';

/** A group-setting value: a group's id, or an anonymous group of members and subgroups. */
export type GroupSetting = number | { direct_members: number[]; direct_subgroups: number[] };

/**
 * Whether a user is in a group setting, read from register's realm_user_groups (each group's
 * direct members and subgroups), as the server reads its own tables.
 */
export function inGroupSetting(s: State, value: GroupSetting | undefined, userId = s.me.user_id): boolean {
  if (value === undefined || value === null) return false;
  const groups = new Map<number, any>((s.reg.realm_user_groups ?? []).map((g: any) => [g.id, g]));
  const seen = new Set<number>();
  const inGroup = (id: number): boolean => {
    if (seen.has(id)) return false;
    seen.add(id);
    const g = groups.get(id);
    if (!g) return false;
    return g.members.includes(userId) || g.direct_subgroup_ids.some(inGroup);
  };
  if (typeof value === 'number') return inGroup(value);
  return value.direct_members.includes(userId) || value.direct_subgroups.some(inGroup);
}

/** A realm permission (`can_..._group`) as register's `realm_can_..._group` states it. */
export const realmAllows = (s: State, setting: string) => inGroupSetting(s, s.reg[`realm_${setting}`]);

export function groupName(s: State, id: number): string {
  const g = (s.reg.realm_user_groups ?? []).find((x: any) => x.id === id);
  if (!g) return `group ${id}`;
  return g.is_system_group ? SYSTEM_GROUP_NAMES[g.name] ?? g.name : g.name;
}

/** Zulip's names for its system groups, as its group pickers show them. */
export const SYSTEM_GROUP_NAMES: Record<string, string> = {
  'role:nobody': 'Nobody',
  'role:owners': 'Owners',
  'role:administrators': 'Administrators',
  'role:moderators': 'Moderators',
  'role:fullmembers': 'Full members',
  'role:members': 'Members',
  'role:everyone': 'Everyone',
  'role:internet': 'Everyone on the internet',
};

export function errorText(e: unknown): string {
  if (e instanceof ApiError || e instanceof NetworkError) return e.message;
  throw e;
}

/** Runs a change and reports it in a live region: "Saving…", "Saved", or the server's refusal. */
export function useSaver(): { status: ComponentChildren; run: (f: () => Promise<unknown>) => Promise<boolean> } {
  const [state, setState] = useState<{ kind: 'idle' | 'saving' | 'saved' | 'error'; text?: string }>({ kind: 'idle' });
  const timer = useRef<number>(0);
  const run = async (f: () => Promise<unknown>) => {
    setState({ kind: 'saving' });
    try {
      await f();
      setState({ kind: 'saved' });
      window.clearTimeout(timer.current);
      timer.current = window.setTimeout(() => setState({ kind: 'idle' }), 4000);
      return true;
    } catch (e) {
      setState({ kind: 'error', text: errorText(e) });
      return false;
    }
  };
  const status = (
    <span class={`save-status ${state.kind}`} role={state.kind === 'error' ? 'alert' : 'status'}>
      {state.kind === 'saving' ? 'Saving…' : state.kind === 'saved' ? 'Saved' : state.kind === 'error' ? state.text : ''}
    </span>
  );
  return { status, run };
}

/**
 * A list fetched from the API, fetched again whenever an event of one of `types` arrives
 * (the server's events say something changed; the list itself comes from the server).
 */
export function useFetched<T>(s: State, types: string[], fetch: () => Promise<T>, deps: unknown[] = []): { data: T | null; error: string | null; reload: () => void } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [nonce, setNonce] = useState(0);
  const version = types.map((t) => s.eventCounts[t] ?? 0).join(',');
  useEffect(() => {
    let live = true;
    fetch().then(
      (d) => live && (setData(d), setError(null)),
      (e) => live && setError(errorText(e)),
    );
    return () => {
      live = false;
    };
  }, [version, nonce, ...deps]);
  return { data, error, reload: () => setNonce((n) => n + 1) };
}

/** PATCH /settings for one property: every personal setting saves as it changes. */
export const saveSetting = (params: Params) => api('PATCH', '/settings', params);

let fieldSeq = 0;
export function useId(prefix: string): string {
  const ref = useRef<string>('');
  if (!ref.current) ref.current = `${prefix}-${++fieldSeq}`;
  return ref.current;
}

/** Why a control is unavailable, next to it and named as its description. */
function Reason({ id, text }: { id: string; text: string | undefined }) {
  return text ? (
    <span class="setting-reason" id={id}>
      {text}
    </span>
  ) : null;
}

export function Checkbox({ label, checked, onSave, disabledReason }: { label: string; checked: boolean; onSave: (v: boolean) => Promise<unknown>; disabledReason?: string }) {
  const id = useId('cb');
  const saver = useSaver();
  // The person's choice shows at once; the server's event then sets `checked` (or a refusal undoes it).
  const [local, setLocal] = useState<boolean | null>(null);
  useEffect(() => setLocal(null), [checked]);
  return (
    <div class="setting checkbox">
      <input
        id={id}
        type="checkbox"
        checked={local ?? checked}
        disabled={!!disabledReason}
        aria-describedby={disabledReason ? `${id}-why` : undefined}
        onChange={(e) => {
          const v = e.currentTarget.checked;
          setLocal(v);
          void saver.run(() => onSave(v)).then((ok) => ok || setLocal(null));
        }}
      />
      <label for={id}>{label}</label>
      {saver.status}
      <Reason id={`${id}-why`} text={disabledReason} />
    </div>
  );
}

export function Select<T extends string | number>({
  label,
  value,
  options,
  onSave,
  disabledReason,
}: {
  label: string;
  value: T;
  options: [T, string][];
  onSave: (v: T) => Promise<unknown>;
  disabledReason?: string;
}) {
  const id = useId('sel');
  const saver = useSaver();
  const [local, setLocal] = useState<T | null>(null);
  useEffect(() => setLocal(null), [value]);
  return (
    <div class="setting">
      <label for={id}>{label}</label>
      <select
        id={id}
        value={String(local ?? value)}
        disabled={!!disabledReason}
        aria-describedby={disabledReason ? `${id}-why` : undefined}
        onChange={(e) => {
          const raw = e.currentTarget.value;
          const v = (typeof value === 'number' ? Number(raw) : raw) as T;
          setLocal(v);
          void saver.run(() => onSave(v)).then((ok) => ok || setLocal(null));
        }}
      >
        {options.map(([v, text]) => (
          <option value={String(v)}>{text}</option>
        ))}
      </select>
      {saver.status}
      <Reason id={`${id}-why`} text={disabledReason} />
    </div>
  );
}

/** A text setting with its own "Save" button. */
export function TextSetting({ label, value, onSave, disabledReason, multiline, type = 'text' }: { label: string; value: string; onSave: (v: string) => Promise<unknown>; disabledReason?: string; multiline?: boolean; type?: 'text' | 'email' | 'url' | 'date' }) {
  const id = useId('txt');
  const [text, setText] = useState(value);
  useEffect(() => setText(value), [value]);
  const saver = useSaver();
  return (
    <form
      class="setting text"
      onSubmit={(e) => {
        e.preventDefault();
        void saver.run(() => onSave(text));
      }}
    >
      <label for={id}>{label}</label>
      <div class="setting-row">
        {multiline ? (
          <textarea id={id} rows={3} value={text} disabled={!!disabledReason} aria-describedby={disabledReason ? `${id}-why` : undefined} onInput={(e) => setText(e.currentTarget.value)} />
        ) : (
          <input id={id} type={type as 'text'} value={text} disabled={!!disabledReason} aria-describedby={disabledReason ? `${id}-why` : undefined} onInput={(e) => setText(e.currentTarget.value)} />
        )}
        {!disabledReason && (
          <button type="submit" class="primary" disabled={text === value}>
            Save
          </button>
        )}
      </div>
      {saver.status}
      <Reason id={`${id}-why`} text={disabledReason} />
    </form>
  );
}

/** One text field and a button that adds what was typed; the field empties once the server took it. */
export function AddForm({ label, button = 'Add', onAdd }: { label: string; button?: string; onAdd: (text: string) => Promise<boolean> }) {
  const id = useId('add');
  const [text, setText] = useState('');
  return (
    <form
      class="setting-row"
      onSubmit={(e) => {
        e.preventDefault();
        void onAdd(text.trim()).then((ok) => ok && setText(''));
      }}
    >
      <label for={id}>{label}</label>
      <input id={id} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <button type="submit" disabled={!text.trim()}>
        {button}
      </button>
    </form>
  );
}

/** An edit form's "Save" and "Cancel", with its save status. */
export function FormActions({ onCancel, status }: { onCancel: () => void; status: ComponentChildren }) {
  return (
    <div class="setting-actions">
      <button class="primary" type="submit">
        Save
      </button>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
      {status}
    </div>
  );
}

/** The options of a group-setting picker: the system groups Zulip offers, then named groups. */
export function groupOptions(s: State, allowNobody = true): [number, string][] {
  const order = ['role:owners', 'role:administrators', 'role:moderators', 'role:fullmembers', 'role:members', 'role:everyone', 'role:nobody'];
  const groups: any[] = (s.reg.realm_user_groups ?? []).filter((g: any) => !g.deactivated);
  const system = order
    .map((n) => groups.find((g) => g.is_system_group && g.name === n))
    .filter((g) => g && (allowNobody || g.name !== 'role:nobody'))
    .map((g) => [g.id, SYSTEM_GROUP_NAMES[g.name] ?? g.name] as [number, string]);
  const named = groups.filter((g) => !g.is_system_group).map((g) => [g.id, g.name] as [number, string]);
  return [...system, ...named];
}

/** A group setting shown with a group picker; an anonymous group shows as its own option. */
export function GroupSettingSelect({ s, label, value, onSave, disabledReason }: { s: State; label: string; value: GroupSetting; onSave: (groupId: number) => Promise<unknown>; disabledReason?: string }) {
  const options = groupOptions(s);
  const current = typeof value === 'number' ? value : -1;
  const all: [number, string][] = current === -1 ? [[-1, describeAnonymous(s, value as Exclude<GroupSetting, number>)], ...options] : options;
  return <Select label={label} value={current} options={all} onSave={onSave} disabledReason={disabledReason} />;
}

function describeAnonymous(s: State, v: { direct_members: number[]; direct_subgroups: number[] }): string {
  const parts = [...v.direct_subgroups.map((g) => groupName(s, g)), ...v.direct_members.map((u) => s.users.get(u)?.full_name ?? `user ${u}`)];
  return parts.length ? parts.join(', ') : 'Nobody';
}

export function Section({ title, children, intro }: { title: string; children: ComponentChildren; intro?: ComponentChildren }) {
  return (
    <section class="settings-section" aria-labelledby={`h-${title}`}>
      <h2 id={`h-${title}`} tabIndex={-1}>
        {title}
      </h2>
      {intro && <p class="settings-intro">{intro}</p>}
      {children}
    </section>
  );
}

export function Subsection({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <div class="settings-subsection">
      <h3>{title}</h3>
      {children}
    </div>
  );
}

/** Shown in place of a screen the person may not use, saying why (the server would refuse). */
export function NotAllowed({ title, reason }: { title: string; reason: string }) {
  return (
    <Section title={title}>
      <p class="settings-denied" role="alert">
        {reason}
      </p>
    </Section>
  );
}

/** A multipart request (avatar, icon, emoji uploads), answered as api() answers. */
export async function uploadForm(method: 'POST', path: string, fields: Record<string, Blob | string>): Promise<Record<string, any>> {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  let res: Response;
  try {
    res = await fetch(`/json${path}`, { method, body: fd, headers: { 'X-CSRFToken': csrfToken() }, credentials: 'same-origin' });
  } catch (e) {
    throw new NetworkError(String(e));
  }
  const data = await res.json().catch(() => ({}));
  if (!res.ok || data.result !== 'success') throw new ApiError(res.status, data.code ?? 'BAD_REQUEST', data.msg ?? `HTTP ${res.status}`, data);
  return data;
}

/** A square of an image, in its pixels. */
export interface Square {
  left: number;
  top: number;
  side: number;
}

/**
 * The square a crop chooses: `zoom` is its side as a percentage of the image's shorter side,
 * `x` and `y` where it sits in the room left on each axis (0 left or top, 50 centred, 100 right
 * or bottom).
 */
export function cropArea(width: number, height: number, zoom: number, x: number, y: number): Square {
  const side = Math.max(1, Math.round((Math.min(width, height) * zoom) / 100));
  return { side, left: Math.round(((width - side) * x) / 100), top: Math.round(((height - side) * y) / 100) };
}

/** The square of an image as a PNG of at most 500 pixels a side (Zulip's avatars are squares). */
export function cropToPng(image: ImageBitmap, area: Square): Promise<Blob> {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = Math.min(area.side, 500);
  canvas.getContext('2d')!.drawImage(image, area.left, area.top, area.side, area.side, 0, 0, canvas.width, canvas.height);
  return new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('could not encode the image'))), 'image/png'));
}
