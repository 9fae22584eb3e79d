import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, csrfToken, type Params } from '../api/client';
import type { State } from '../state/store';
import { BUILT_IN_VIEWS, type NavigationView } from './live';
import { Avatar } from '../ui/Avatar';
import { TwoFactorSetting } from './TwoFactor';
import { ADMIN_ONLY, Checkbox, cropArea, cropToPng, errorText, isAdmin, saveSetting, Section, Select, Subsection, TextSetting, uploadForm, useId, useSaver } from './common';

const settingsOf = (s: State): Record<string, any> => s.reg.user_settings ?? {};

/**
 * Where a screen of user settings reads and saves: the person's own (PATCH /settings), or the
 * organization's defaults for new users (PATCH /realm/user_settings_defaults), which have the
 * same names.
 */
export interface SettingsSource {
  values: Record<string, any>;
  save: (params: Record<string, unknown>) => Promise<unknown>;
  disabledReason?: string;
  /** Settings this source cannot change. */
  omit?: string[];
}

const personal = (s: State): SettingsSource => ({ values: settingsOf(s), save: (p) => saveSetting(p as Params) });

/** A boolean user setting, saved as it changes. */
function Toggle({ src, name, label }: { src: SettingsSource; name: string; label: string }) {
  if (src.omit?.includes(name)) return null;
  return <Checkbox label={label} checked={!!src.values[name]} onSave={(v) => src.save({ [name]: v })} disabledReason={src.disabledReason} />;
}

/** A user setting chosen from a list, saved as it changes. */
function Choice<T extends string | number>({ src, name, label, options, fallback }: { src: SettingsSource; name: string; label: string; options: [T, string][]; fallback: T }) {
  return <Select label={label} value={(src.values[name] ?? fallback) as T} options={options} onSave={(v) => src.save({ [name]: v })} disabledReason={src.disabledReason} />;
}

export function Profile({ s }: { s: State }) {
  const me = s.users.get(s.me.user_id) ?? s.me;
  const nameReason = s.reg.realm_name_changes_disabled && !isAdmin(s) ? 'Name changes are disabled in this organization. Contact an administrator to change your name.' : undefined;
  const avatarReason = s.reg.realm_avatar_changes_disabled && !isAdmin(s) ? 'Avatar changes are disabled in this organization.' : undefined;
  return (
    <Section title="Profile">
      <TextSetting label="Name" value={me.full_name} onSave={(v) => saveSetting({ full_name: v })} disabledReason={nameReason} />
      <AvatarSetting s={s} disabledReason={avatarReason} />
      <ProfileFields s={s} />
      <StatusSetting s={s} />
    </Section>
  );
}

function AvatarSetting({ s, disabledReason }: { s: State; disabledReason?: string }) {
  const me = s.users.get(s.me.user_id) ?? s.me;
  const id = useId('avatar');
  const saver = useSaver();
  const [file, setFile] = useState<File | null>(null);
  const custom = (me as any).avatar_source === 'U' || s.reg.avatar_source === 'U' || !String(me.avatar_url ?? '').includes('gravatar');
  return (
    <Subsection title="Profile picture">
      <div class="avatar-setting">
        <Avatar url={me.avatar_url} name={me.full_name} id={me.user_id} size={96} />
        <div>
          <label for={id}>Upload new profile picture</label>
          <input
            id={id}
            type="file"
            accept="image/*"
            disabled={!!disabledReason}
            onChange={(e) => {
              setFile(e.currentTarget.files?.[0] ?? null);
              e.currentTarget.value = '';
            }}
          />
          {custom && (
            <button type="button" disabled={!!disabledReason} onClick={() => void saver.run(() => api('DELETE', '/users/me/avatar'))}>
              Delete profile picture
            </button>
          )}
          {saver.status}
          {disabledReason && <span class="setting-reason">{disabledReason}</span>}
        </div>
      </div>
      {file && (
        <AvatarCrop
          file={file}
          onCancel={() => setFile(null)}
          onSave={(png) => {
            setFile(null);
            void saver.run(() => uploadForm('POST', '/users/me/avatar', { file: new File([png], 'avatar.png', { type: 'image/png' }) }));
          }}
        />
      )}
    </Subsection>
  );
}

const CROP_VIEW = 320;

/**
 * Choosing the square of a new picture: the image with the square drawn on it, moved by dragging
 * it or by the position sliders, and sized by the zoom slider (keyboard and screen readers use
 * the sliders). Only the square is uploaded.
 */
function AvatarCrop({ file, onCancel, onSave }: { file: File; onCancel: () => void; onSave: (png: Blob) => void }) {
  const [image, setImage] = useState<ImageBitmap | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [crop, setCrop] = useState({ zoom: 100, x: 50, y: 50 });
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    createImageBitmap(file).then(setImage, () => setError('This file is not an image this browser can read.'));
  }, [file]);
  const scale = image ? Math.min(CROP_VIEW / image.width, CROP_VIEW / image.height) : 1;
  const area = image ? cropArea(image.width, image.height, crop.zoom, crop.x, crop.y) : null;
  useEffect(() => {
    const c = canvas.current;
    if (!c || !image || !area) return;
    const g = c.getContext('2d')!;
    g.clearRect(0, 0, c.width, c.height);
    g.drawImage(image, 0, 0, c.width, c.height);
    g.fillStyle = 'rgba(0, 0, 0, 0.55)';
    const [l, t, side] = [area.left * scale, area.top * scale, area.side * scale];
    g.fillRect(0, 0, c.width, t);
    g.fillRect(0, t + side, c.width, c.height - t - side);
    g.fillRect(0, t, l, side);
    g.fillRect(l + side, t, c.width - l - side, side);
    g.strokeStyle = '#ffffff';
    g.lineWidth = 2;
    g.strokeRect(l + 1, t + 1, side - 2, side - 2);
  }, [image, crop]);
  // Dragging centres the square under the pointer, as far as the image allows.
  const drag = (e: PointerEvent) => {
    if (!image || !area || (e.type === 'pointermove' && e.buttons !== 1)) return;
    const box = (e.currentTarget as HTMLCanvasElement).getBoundingClientRect();
    const px = ((e.clientX - box.left) / box.width) * image.width;
    const py = ((e.clientY - box.top) / box.height) * image.height;
    const at = (p: number, room: number) => (room <= 0 ? 50 : Math.min(100, Math.max(0, ((p - area.side / 2) / room) * 100)));
    setCrop({ ...crop, x: Math.round(at(px, image.width - area.side)), y: Math.round(at(py, image.height - area.side)) });
  };
  const slider = (key: 'zoom' | 'x' | 'y', label: string, min: number) => (
    <label class="crop-slider">
      {label}
      <input type="range" min={min} max={100} value={crop[key]} onInput={(e) => setCrop({ ...crop, [key]: Number(e.currentTarget.value) })} />
    </label>
  );
  return (
    <div class="avatar-crop" role="group" aria-label="Crop your profile picture">
      {error && <p role="alert">{error}</p>}
      {image && (
        <>
          <canvas ref={canvas} width={Math.round(image.width * scale)} height={Math.round(image.height * scale)} aria-label="The new picture; the square is what will be kept" role="img" onPointerDown={drag} onPointerMove={drag} />
          <div class="crop-controls">
            {slider('zoom', 'Zoom', 10)}
            {slider('x', 'Horizontal position', 0)}
            {slider('y', 'Vertical position', 0)}
            <div class="setting-actions">
              <button type="button" class="primary" onClick={() => void cropToPng(image, area!).then(onSave, (e) => setError(String(e)))}>
                Save profile picture
              </button>
              <button type="button" onClick={onCancel}>
                Cancel
              </button>
            </div>
          </div>
        </>
      )}
    </div>
  );
}

/** Custom profile fields of every type (Zulip's CustomProfileField types 1–8). */
function ProfileFields({ s }: { s: State }) {
  const fields: any[] = s.reg.custom_profile_fields ?? [];
  if (fields.length === 0) return null;
  const mine: Record<string, { value: string }> = (s.users.get(s.me.user_id) as any)?.profile_data ?? {};
  const save = (id: number, value: unknown) =>
    value === '' || (Array.isArray(value) && value.length === 0) ? api('DELETE', '/users/me/profile_data', { data: [id] }) : api('PATCH', '/users/me/profile_data', { data: [{ id, value }] });
  return (
    <Subsection title="Custom profile fields">
      {fields.map((f) => {
        const value = mine[f.id]?.value ?? '';
        if (f.type === 3) {
          const options = Object.entries(JSON.parse(f.field_data || '{}') as Record<string, { text: string; order: string }>).sort((a, b) => Number(a[1].order) - Number(b[1].order));
          return <Select label={f.name} value={value} options={[['', ''], ...options.map(([k, o]) => [k, o.text] as [string, string])]} onSave={(v) => save(f.id, v)} />;
        }
        if (f.type === 6) {
          const ids: number[] = value ? JSON.parse(value) : [];
          const users = [...s.users.values()].filter((u) => u.is_active && !u.is_bot);
          return (
            <Select
              label={f.name}
              value={ids[0] ?? 0}
              options={[[0, ''], ...users.map((u) => [u.user_id, u.full_name] as [number, string])]}
              onSave={(v) => save(f.id, v ? [v] : [])}
            />
          );
        }
        const type = f.type === 4 ? 'date' : f.type === 5 ? 'url' : 'text' as const;
        return <TextSetting label={f.name} value={value} type={type} multiline={f.type === 2} onSave={(v) => save(f.id, v)} />;
      })}
    </Subsection>
  );
}

const STATUS_EXPIRY: [string, string][] = [
  ['never', 'Never'],
  ['30m', 'In 30 minutes'],
  ['1h', 'In one hour'],
  ['today', 'Today'],
  ['tomorrow', 'Tomorrow'],
];

function expiryTime(choice: string): number | null {
  const now = new Date();
  if (choice === '30m') return Math.round(now.getTime() / 1000) + 1800;
  if (choice === '1h') return Math.round(now.getTime() / 1000) + 3600;
  if (choice === 'today' || choice === 'tomorrow') {
    const end = new Date(now);
    end.setHours(23, 59, 59, 0);
    if (choice === 'tomorrow') end.setDate(end.getDate() + 1);
    return Math.round(end.getTime() / 1000);
  }
  return null;
}

function StatusSetting({ s }: { s: State }) {
  const status = s.reg.user_status?.[s.me.user_id] ?? {};
  const [text, setText] = useState<string>(status.status_text ?? '');
  const [emoji, setEmoji] = useState<string>(status.emoji_name ?? '');
  const [expiry, setExpiry] = useState('never');
  const saver = useSaver();
  const ids = { text: useId('st'), emoji: useId('se'), exp: useId('sx') };
  return (
    <Subsection title="Status">
      <form
        class="setting-grid"
        onSubmit={(e) => {
          e.preventDefault();
          const end = expiryTime(expiry);
          void saver.run(() => api('POST', '/users/me/status', { status_text: text, emoji_name: emoji, ...(end ? { scheduled_end_time: end } : {}) }));
        }}
      >
        <label for={ids.emoji}>Status emoji</label>
        <input id={ids.emoji} value={emoji} placeholder="e.g. calendar" onInput={(e) => setEmoji(e.currentTarget.value)} />
        <label for={ids.text}>Status text</label>
        <input id={ids.text} value={text} maxLength={60} onInput={(e) => setText(e.currentTarget.value)} />
        <label for={ids.exp}>Clear status after</label>
        <select id={ids.exp} value={expiry} onChange={(e) => setExpiry(e.currentTarget.value)}>
          {STATUS_EXPIRY.map(([v, t]) => (
            <option value={v}>{t}</option>
          ))}
        </select>
        <div class="setting-actions">
          <button class="primary" type="submit">
            Save
          </button>
          <button
            type="button"
            onClick={() => {
              setText('');
              setEmoji('');
              void saver.run(() => api('POST', '/users/me/status', { status_text: '', emoji_name: '' }));
            }}
          >
            Clear status
          </button>
          {saver.status}
        </div>
      </form>
    </Subsection>
  );
}

export function Account({ s }: { s: State }) {
  const us = settingsOf(s);
  const src = personal(s);
  const email = s.reg.delivery_email ?? s.me.email;
  const emailReason = s.reg.realm_email_changes_disabled && !isAdmin(s) ? 'Email address changes are disabled in this organization.' : undefined;
  const [emailSent, setEmailSent] = useState<string | null>(null);
  return (
    <Section title="Account & privacy">
      <Subsection title="Account">
        <TextSetting
          label="Email"
          type="email"
          value={email}
          disabledReason={emailReason}
          onSave={async (v) => {
            await saveSetting({ email: v });
            setEmailSent(v);
          }}
        />
        {emailSent && <p role="status">Check your email ({emailSent}) to confirm the new address.</p>}
        <PasswordChange />
        <ApiKey s={s} email={email} />
        <TwoFactorSetting />
      </Subsection>
      <Subsection title="Privacy">
        <Select
          label="Who can access your email address"
          value={us.email_address_visibility ?? 1}
          options={[
            [1, 'Everyone'],
            [5, 'Members only'],
            [2, 'Admins only'],
            [3, 'Nobody'],
            [4, 'Moderators only'],
          ]}
          onSave={(v) => saveSetting({ email_address_visibility: v })}
        />
        <Toggle src={src} name="send_private_typing_notifications" label="Let recipients see when I'm typing direct messages" />
        <Toggle src={src} name="send_stream_typing_notifications" label="Let recipients see when I'm typing messages in channels" />
        <Toggle src={src} name="send_read_receipts" label="Let others see when I've read messages" />
        <Toggle src={src} name="presence_enabled" label="Display my availability to other users" />
        <Toggle src={src} name="allow_private_data_export" label="Let administrators export my private data" />
      </Subsection>
    </Section>
  );
}

function PasswordChange() {
  const [oldPw, setOld] = useState('');
  const [newPw, setNew] = useState('');
  const saver = useSaver();
  const ids = { old: useId('pw'), new: useId('pw') };
  return (
    <form
      class="setting-grid"
      onSubmit={(e) => {
        e.preventDefault();
        void saver.run(() => saveSetting({ old_password: oldPw, new_password: newPw })).then((ok) => ok && (setOld(''), setNew('')));
      }}
    >
      <label for={ids.old}>Old password</label>
      <input id={ids.old} type="password" autocomplete="current-password" value={oldPw} onInput={(e) => setOld(e.currentTarget.value)} />
      <label for={ids.new}>New password</label>
      <input id={ids.new} type="password" autocomplete="new-password" value={newPw} onInput={(e) => setNew(e.currentTarget.value)} />
      <div class="setting-actions">
        <button class="primary" type="submit" disabled={!oldPw || !newPw}>
          Change password
        </button>
        {saver.status}
      </div>
    </form>
  );
}

/** The zuliprc file zulip-terminal and the Python client read (Zulip's "Download zuliprc"). */
export function zuliprc(email: string, key: string): string {
  return `[api]\nemail=${email}\nkey=${key}\nsite=${window.location.origin}\n`;
}

function ApiKey({ s, email }: { s: State; email: string }) {
  const [password, setPassword] = useState('');
  const [key, setKey] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const id = useId('apikey');
  const fetchKey = async () => {
    try {
      // Not through api(): a wrong password answers 401, which there means the session ended.
      const res = await fetch('/json/fetch_api_key', {
        method: 'POST',
        headers: { 'X-CSRFToken': csrfToken(), 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ username: email, password }).toString(),
        credentials: 'same-origin',
      });
      const r = await res.json();
      if (r.result !== 'success') throw new ApiError(res.status, r.code, r.msg, r);
      setKey(r.api_key);
      setError(null);
      setPassword('');
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <div class="settings-subsection">
      <h3>API key</h3>
      {key === null ? (
        <form
          class="setting-grid"
          onSubmit={(e) => {
            e.preventDefault();
            void fetchKey();
          }}
        >
          <label for={id}>Your password</label>
          <input id={id} type="password" autocomplete="current-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
          <div class="setting-actions">
            <button class="primary" type="submit" disabled={!password}>
              Get API key
            </button>
            {error && (
              <span class="save-status error" role="alert">
                {error}
              </span>
            )}
          </div>
        </form>
      ) : (
        <div>
          <p>
            Your API key: <code aria-label="API key">{key}</code>
          </p>
          <a class="button" href={`data:application/octet-stream,${encodeURIComponent(zuliprc(s.me.email, key))}`} download="zuliprc">
            Download zuliprc
          </a>{' '}
          <button
            type="button"
            onClick={() =>
              void api('POST', '/users/me/api_key/regenerate').then(
                (r) => setKey(r.api_key),
                (e) => setError(errorText(e)),
              )
            }
          >
            Generate new API key
          </button>
          {error && <span role="alert">{error}</span>}
        </div>
      )}
    </div>
  );
}

export function Preferences({ s }: { s: State }) {
  const src = personal(s);
  const zones = (Intl as any).supportedValuesOf?.('timeZone') as string[] | undefined;
  const tz = src.values.timezone || s.settings.timezone;
  return (
    <Section title="Preferences">
      <PreferenceFields src={src}>
        <Select label="Language" value="en" options={[['en', 'English']]} onSave={async () => undefined} disabledReason="Parley's web app is in English." />
        <Select label="Time zone" value={tz} options={[...new Set([tz, ...(zones ?? [])])].map((z) => [z, z] as [string, string])} onSave={(v) => saveSetting({ timezone: v })} />
      </PreferenceFields>
    </Section>
  );
}

/** What new users of the organization start with (Zulip's "Default user settings"). */
export function DefaultUserSettings({ s }: { s: State }) {
  const src: SettingsSource = {
    values: s.reg.realm_user_settings_defaults ?? {},
    save: (p) => api('PATCH', '/realm/user_settings_defaults', p as Params),
    disabledReason: isAdmin(s) ? undefined : ADMIN_ONLY,
    // Register lists them among the defaults, but each person's own (Zulip's update_realm_user_settings_defaults refuses them).
    omit: ['enable_login_emails'],
  };
  return (
    <Section title="Default user settings" intro="The settings new users of this organization start with; each person can change their own.">
      <PreferenceFields src={src} />
      <NotificationFields src={src} />
    </Section>
  );
}

/** The preferences a person has and an organization sets defaults for; `children` lead "General". */
function PreferenceFields({ src, children }: { src: SettingsSource; children?: ComponentChildren }) {
  return (
    <>
      <Subsection title="General">
        {children}
        <Choice
          src={src}
          name="color_scheme"
          label="Theme"
          fallback={1}
          options={[
            [1, 'Automatic (follows system settings)'],
            [3, 'Light'],
            [2, 'Dark'],
          ]}
        />
        <Select
          label="Time format"
          value={src.values.twenty_four_hour_time ? '24' : '12'}
          options={[
            ['12', '12-hour clock (5:00 PM)'],
            ['24', '24-hour clock (17:00)'],
          ]}
          onSave={(v) => src.save({ twenty_four_hour_time: v === '24' })}
          disabledReason={src.disabledReason}
        />
        <Choice src={src} name="emojiset" label="Emoji theme" fallback="google" options={((src.values.emojiset_choices ?? []) as { key: string; text: string }[]).map((c) => [c.key, c.text] as [string, string])} />
      </Subsection>
      <Subsection title="Navigation">
        <Choice
          src={src}
          name="web_home_view"
          label="Home view"
          fallback="inbox"
          options={[
            ['inbox', 'Inbox'],
            ['recent_topics', 'Recent conversations'],
            ['all_messages', 'Combined feed'],
          ]}
        />
        <Choice
          src={src}
          name="web_channel_default_view"
          label="Default view for channels"
          fallback={1}
          options={[
            [1, 'Top topic in the channel'],
            [2, 'Channel feed'],
            [3, 'List of topics'],
            [4, 'Top unread topic in channel'],
          ]}
        />
        <Toggle src={src} name="web_escape_navigates_to_home_view" label="Escape key navigates to home view" />
      </Subsection>
      <Subsection title="Compose">
        <Toggle src={src} name="enter_sends" label="Enter sends" />
        <Toggle src={src} name="translate_emoticons" label="Convert emoticons before sending (:) becomes 😃)" />
      </Subsection>
    </>
  );
}

/**
 * Each kind of notification: a subscription's own override, then the settings for channels,
 * followed topics, and direct messages and mentions, and its label.
 */
export const NOTIFICATIONS: [string, string, string, string, string][] = [
  ['desktop_notifications', 'enable_stream_desktop_notifications', 'enable_followed_topic_desktop_notifications', 'enable_desktop_notifications', 'Visual desktop notifications'],
  ['audible_notifications', 'enable_stream_audible_notifications', 'enable_followed_topic_audible_notifications', 'enable_sounds', 'Audible desktop notifications'],
  ['push_notifications', 'enable_stream_push_notifications', 'enable_followed_topic_push_notifications', 'enable_offline_push_notifications', 'Mobile notifications'],
  ['email_notifications', 'enable_stream_email_notifications', 'enable_followed_topic_email_notifications', 'enable_offline_email_notifications', 'Email notifications'],
];

export function Notifications({ s }: { s: State }) {
  const src = personal(s);
  const us = src.values;
  const saver = useSaver();
  const subs = [...s.subs.values()].sort((a, b) => a.name.localeCompare(b.name));
  return (
    <Section title="Notifications">
      <NotificationFields src={src} />
      {subs.length > 0 && (
        <Subsection title="Notification settings for channels">
          <table class="settings-table">
            <thead>
              <tr>
                <th scope="col">Channel</th>
                {NOTIFICATIONS.map(([, , , , label]) => (
                  <th scope="col">{label}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {subs.map((sub) => (
                <tr>
                  <th scope="row">#{sub.name}</th>
                  {NOTIFICATIONS.map(([prop, global, , , label]) => {
                    const own = (sub as any)[prop];
                    const value = own === null || own === undefined ? !!us[global] : own;
                    return (
                      <td>
                        <input
                          type="checkbox"
                          aria-label={`${label} for #${sub.name}`}
                          checked={value}
                          onChange={(e) => void saver.run(() => api('POST', '/users/me/subscriptions/properties', { subscription_data: [{ stream_id: sub.stream_id, property: prop, value: e.currentTarget.checked }] }))}
                        />
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
          {saver.status}
        </Subsection>
      )}
    </Section>
  );
}

/** The notification settings a person has and an organization sets defaults for. */
function NotificationFields({ src }: { src: SettingsSource }) {
  return (
    <>
      <Subsection title="Channels">
        {NOTIFICATIONS.map(([, name, , , label]) => (
          <Toggle src={src} name={name} label={`Channels: ${label}`} />
        ))}
        <Toggle src={src} name="wildcard_mentions_notify" label="Notify for @all, @everyone and @channel mentions" />
      </Subsection>
      <Subsection title="Followed topics">
        {NOTIFICATIONS.map(([, , name, , label]) => (
          <Toggle src={src} name={name} label={`Followed topics: ${label}`} />
        ))}
      </Subsection>
      <Subsection title="Direct messages and mentions">
        {NOTIFICATIONS.map(([, , , name, label]) => (
          <Toggle src={src} name={name} label={label} />
        ))}
        <Toggle src={src} name="pm_content_in_desktop_notifications" label="Include content of direct messages in desktop notifications" />
      </Subsection>
      <Subsection title="Email">
        <Toggle src={src} name="enable_digest_emails" label="Send digest emails when I'm away" />
        <Toggle src={src} name="enable_login_emails" label="Send email notifications for new logins to my account" />
        <Toggle src={src} name="message_content_in_email_notifications" label="Include message content in message notification emails" />
        <Choice
          src={src}
          name="email_notifications_batching_period_seconds"
          label="Delay before sending message notification emails"
          fallback={120}
          options={[
            [120, '2 minutes'],
            [300, '5 minutes'],
            [600, '10 minutes'],
            [1800, '30 minutes'],
            [3600, '1 hour'],
          ]}
        />
      </Subsection>
    </>
  );
}

export function MutedUsers({ s }: { s: State }) {
  const muted: { id: number; timestamp: number }[] = s.reg.muted_users ?? [];
  const saver = useSaver();
  return (
    <Section title="Muted users">
      {muted.length === 0 ? (
        <p>You have not muted any users.</p>
      ) : (
        <ul class="plain settings-list">
          {muted.map((m) => (
            <li>
              <span>{s.users.get(m.id)?.full_name ?? `user ${m.id}`}</span>
              <button type="button" onClick={() => void saver.run(() => api('DELETE', `/users/me/muted_users/${m.id}`))}>
                Unmute
              </button>
            </li>
          ))}
        </ul>
      )}
      {saver.status}
    </Section>
  );
}

export function AlertWords({ s }: { s: State }) {
  const words: string[] = s.reg.alert_words ?? [];
  const [word, setWord] = useState('');
  const saver = useSaver();
  const id = useId('aw');
  return (
    <Section title="Alert words">
      <form
        class="setting-grid"
        onSubmit={(e) => {
          e.preventDefault();
          void saver.run(() => api('POST', '/users/me/alert_words', { alert_words: [word] })).then((ok) => ok && setWord(''));
        }}
      >
        <label for={id}>Alert word</label>
        <input id={id} value={word} onInput={(e) => setWord(e.currentTarget.value)} />
        <div class="setting-actions">
          <button class="primary" type="submit" disabled={!word.trim()}>
            Add alert word
          </button>
          {saver.status}
        </div>
      </form>
      <ul class="plain settings-list">
        {words.map((w) => (
          <li>
            <span>{w}</span>
            <button type="button" aria-label={`Delete alert word ${w}`} onClick={() => void saver.run(() => api('DELETE', '/users/me/alert_words', { alert_words: [w] }))}>
              Delete
            </button>
          </li>
        ))}
      </ul>
    </Section>
  );
}

const POLICY_NAMES: Record<number, string> = { 1: 'Muted', 2: 'Unmuted', 3: 'Followed' };

export function Topics({ s }: { s: State }) {
  const saver = useSaver();
  const rows = [...s.userTopics.entries()].filter(([, p]) => p !== 0);
  return (
    <Section title="Topics">
      {rows.length === 0 ? (
        <p>You have not muted, unmuted or followed any topics.</p>
      ) : (
        <table class="settings-table">
          <thead>
            <tr>
              <th scope="col">Channel</th>
              <th scope="col">Topic</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(([key, policy]) => {
              const [sid, topic] = key.split('\u0000') as [string, string];
              return (
                <tr>
                  <td>#{s.channelNames.get(Number(sid)) ?? sid}</td>
                  <td>{topic}</td>
                  <td>
                    <select
                      aria-label={`Status of ${topic}`}
                      value={String(policy)}
                      onChange={(e) => void saver.run(() => api('POST', '/user_topics', { stream_id: Number(sid), topic, visibility_policy: Number(e.currentTarget.value) }))}
                    >
                      <option value="0">Default</option>
                      {Object.entries(POLICY_NAMES).map(([v, t]) => (
                        <option value={v}>{t}</option>
                      ))}
                    </select>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {saver.status}
    </Section>
  );
}

export function SavedSnippets({ s }: { s: State }) {
  const snippets: { id: number; title: string; content: string }[] = s.reg.saved_snippets ?? [];
  const [title, setTitle] = useState('');
  const [content, setContent] = useState('');
  const saver = useSaver();
  const ids = { t: useId('snt'), c: useId('snc') };
  return (
    <Section title="Saved snippets" intro="Text you send often, inserted from the compose box's “Snippets” menu.">
      <form
        class="setting-grid"
        aria-label="Add a new saved snippet"
        onSubmit={(e) => {
          e.preventDefault();
          void saver.run(() => api('POST', '/saved_snippets', { title, content })).then((ok) => ok && (setTitle(''), setContent('')));
        }}
      >
        <label for={ids.t}>Title</label>
        <input id={ids.t} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
        <label for={ids.c}>Content</label>
        <textarea id={ids.c} rows={3} value={content} onInput={(e) => setContent(e.currentTarget.value)} />
        <div class="setting-actions">
          <button class="primary" type="submit" disabled={!title.trim() || !content.trim()}>
            Save
          </button>
          {saver.status}
        </div>
      </form>
      <ul class="plain settings-list" aria-label="Saved snippets">
        {snippets.map((x) => (
          <li>
            <strong>{x.title}</strong>
            <span class="muted">{x.content.length > 80 ? `${x.content.slice(0, 80)}…` : x.content}</span>
            <button type="button" class="danger" aria-label={`Delete saved snippet ${x.title}`} onClick={() => void saver.run(() => api('DELETE', `/saved_snippets/${x.id}`))}>
              Delete
            </button>
          </li>
        ))}
      </ul>
    </Section>
  );
}

/**
 * The views at the top of the left sidebar (register's navigation_views): the built-in ones
 * can be unpinned (they stay at their address), and any address can be added as a view of one's
 * own. Zulip's API has them; its web app has no screen for them yet, so the address is Parley's.
 */
export function NavigationViews({ s }: { s: State }) {
  const views: NavigationView[] = s.reg.navigation_views ?? [];
  const byFragment = new Map(views.map((v) => [v.fragment, v]));
  const custom = views.filter((v) => !BUILT_IN_VIEWS.some(([f]) => f === v.fragment));
  const [name, setName] = useState('');
  const [fragment, setFragment] = useState('');
  const saver = useSaver();
  const ids = { n: useId('nvn'), f: useId('nvf') };
  const pin = (f: string, isPinned: boolean) =>
    byFragment.has(f) ? api('PATCH', `/navigation_views/${f}`, { is_pinned: isPinned }) : api('POST', '/navigation_views', { fragment: f, is_pinned: isPinned });
  return (
    <Section title="Navigation views" intro="Checked views are pinned to the top of the left sidebar; the others stay at their address.">
      <ul class="plain settings-list" aria-label="Navigation views">
        {BUILT_IN_VIEWS.map(([f, label]) => (
          <li>
            <Checkbox label={label} checked={byFragment.get(f)?.is_pinned !== false} onSave={(v) => pin(f, v)} />
            <a href={`#${f}`}>#{f}</a>
          </li>
        ))}
        {custom.map((v) => (
          <li>
            <Checkbox label={v.name ?? v.fragment} checked={v.is_pinned} onSave={(on) => pin(v.fragment, on)} />
            <a href={`#${v.fragment}`}>#{v.fragment}</a>
            <button type="button" class="danger" aria-label={`Remove navigation view ${v.name ?? v.fragment}`} onClick={() => void saver.run(() => api('DELETE', `/navigation_views/${v.fragment}`))}>
              Remove
            </button>
          </li>
        ))}
      </ul>
      <form
        class="setting-grid"
        aria-label="Add a navigation view"
        onSubmit={(e) => {
          e.preventDefault();
          void saver.run(() => api('POST', '/navigation_views', { fragment: fragment.replace(/^#/, ''), name, is_pinned: true })).then((ok) => ok && (setName(''), setFragment('')));
        }}
      >
        <label for={ids.n}>Name</label>
        <input id={ids.n} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <label for={ids.f}>Address</label>
        <input id={ids.f} value={fragment} placeholder="narrow/is/alerted" onInput={(e) => setFragment(e.currentTarget.value)} />
        <div class="setting-actions">
          <button class="primary" type="submit" disabled={!name.trim() || !fragment.trim()}>
            Add
          </button>
          {saver.status}
        </div>
      </form>
    </Section>
  );
}
