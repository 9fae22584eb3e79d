import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api/client';
import type { State } from '../state/store';
import { Avatar } from '../ui/Avatar';
import {
  AddForm,
  ADMIN_ONLY,
  Checkbox,
  errorText,
  FormActions,
  GroupSettingSelect,
  isAdmin,
  isOwner,
  OWNER_ONLY,
  realmAllows,
  ROLE,
  ROLE_NAMES,
  roleName,
  Section,
  Select,
  Subsection,
  TextSetting,
  uploadForm,
  useFetched,
  useId,
  useSaver,
  type GroupSetting,
} from './common';

const patchRealm = (params: Record<string, unknown>) => api('PATCH', '/realm', params as any);

/**
 * The PATCH /realm settings only owners may change: the server's one list (Zulip's
 * update_realm), which register does not carry, so it is kept here once.
 */
const OWNER_ONLY_SETTINGS = new Set([
  'invite_required',
  'create_multiuse_invite_group',
  'can_create_groups',
  'can_invite_users_group',
  'can_manage_all_groups',
  'can_manage_billing_group',
  'emails_restricted_to_domains',
  'disallow_disposable_email_addresses',
  'waiting_period_threshold',
  'message_retention_days',
  'authentication_methods',
]);

/** Why the person may not change a PATCH /realm setting (administrators', some owners'), or undefined. */
const realmReason = (s: State, name: string) => (!isAdmin(s) ? ADMIN_ONLY : OWNER_ONLY_SETTINGS.has(name) && !isOwner(s) ? OWNER_ONLY : undefined);

export function OrganizationProfile({ s }: { s: State }) {
  const r = s.reg;
  const reason = isAdmin(s) ? undefined : ADMIN_ONLY;
  return (
    <Section title="Organization profile">
      <TextSetting label="Organization name" value={r.realm_name ?? s.realm.name} onSave={(v) => patchRealm({ name: v })} disabledReason={reason} />
      <TextSetting label="Organization description" value={r.realm_description ?? ''} multiline onSave={(v) => patchRealm({ description: v })} disabledReason={reason} />
      <ImageSetting label="Organization icon" url={r.realm_icon_url} path="/realm/icon" custom={r.realm_icon_source === 'U'} />
      <ImageSetting label="Organization logo" url={r.realm_logo_url} path="/realm/logo" custom={r.realm_logo_source === 'U'} />
    </Section>
  );
}

function ImageSetting({ label, url, path, custom, reason }: { label: string; url: string; path: string; custom: boolean; reason?: string }) {
  const id = useId('img');
  const saver = useSaver();
  return (
    <Subsection title={label}>
      <div class="avatar-setting">
        <Avatar url={url} name={label} id={1} size={64} />
        <div>
          <label for={id}>Upload {label.toLowerCase()}</label>
          <input
            id={id}
            type="file"
            accept="image/*"
            disabled={!!reason}
            onChange={(e) => {
              const file = e.currentTarget.files?.[0];
              if (file) void saver.run(() => uploadForm('POST', path, { file }));
            }}
          />
          {custom && !reason && (
            <button type="button" onClick={() => void saver.run(() => api('DELETE', path))}>
              Delete {label.toLowerCase()}
            </button>
          )}
          {saver.status}
          {reason && <span class="setting-reason">{reason}</span>}
        </div>
      </div>
    </Subsection>
  );
}

const LIMITS: [number | 'null', string][] = [
  ['null', 'Any time'],
  [120, '2 minutes'],
  [600, '10 minutes'],
  [3600, '1 hour'],
  [86400, '1 day'],
  [259200, '3 days'],
  [604800, '1 week'],
];

function limitOptions(current: number | null): [string, string][] {
  const opts = LIMITS.map(([v, t]) => [String(v), t] as [string, string]);
  if (current !== null && !LIMITS.some(([v]) => v === current)) opts.push([String(current), `${current} seconds`]);
  return opts;
}

const limitValue = (v: string) => (v === 'null' ? 0 : Number(v));

/** A time limit of PATCH /realm (seconds, or "unlimited"), as a choice of durations. */
function LimitSetting({ s, name, label }: { s: State; name: string; label: string }) {
  const current = s.reg[`realm_${name}`] ?? null;
  return (
    <Select
      label={label}
      value={String(current ?? 'null')}
      options={limitOptions(current)}
      onSave={(v) => patchRealm({ [name]: v === 'null' ? 'unlimited' : limitValue(v) })}
      disabledReason={realmReason(s, name)}
    />
  );
}

/** A boolean of PATCH /realm, saved as it changes. */
function RealmCheckbox({ s, name, label }: { s: State; name: string; label: string }) {
  return <Checkbox label={label} checked={!!s.reg[`realm_${name}`]} onSave={(v) => patchRealm({ [name]: v })} disabledReason={realmReason(s, name)} />;
}

/** A channel setting of PATCH /realm (an announcement channel), -1 for none. */
function RealmChannel({ s, name, label }: { s: State; name: string; label: string }) {
  const channels = [...s.channelNames.entries()].sort((a, b) => a[1].localeCompare(b[1]));
  return (
    <Select
      label={label}
      value={s.reg[`realm_${name}`] ?? -1}
      options={[[-1, 'Disabled'], ...channels.map(([id, n]) => [id, `#${n}`] as [number, string])]}
      onSave={(v) => patchRealm({ [name]: v })}
      disabledReason={realmReason(s, name)}
    />
  );
}

/** Zulip's organization types (zulip.yaml's org_type). */
const ORG_TYPES: [number, string][] = [
  [0, 'Unspecified'],
  [10, 'Business'],
  [20, 'Open-source project'],
  [30, 'Education (non-profit)'],
  [35, 'Education (for-profit)'],
  [40, 'Research'],
  [50, 'Event or conference'],
  [60, 'Non-profit (registered)'],
  [70, 'Government'],
  [80, 'Political group'],
  [90, 'Community'],
  [100, 'Personal'],
  [1000, 'Other'],
];

export function OrganizationSettings({ s }: { s: State }) {
  const r = s.reg;
  const reason = isAdmin(s) ? undefined : ADMIN_ONLY;
  const providers = Object.values((r.realm_available_video_chat_providers ?? {}) as Record<string, { name: string; id: number }>);
  return (
    <Section title="Organization settings">
      <Subsection title="Message editing">
        <RealmCheckbox s={s} name="allow_message_editing" label="Allow message editing" />
        <LimitSetting s={s} name="message_content_edit_limit_seconds" label="Time limit for editing messages" />
        <LimitSetting s={s} name="message_content_delete_limit_seconds" label="Time limit for deleting messages" />
        <LimitSetting s={s} name="move_messages_within_stream_limit_seconds" label="Time limit for moving messages between topics" />
        <LimitSetting s={s} name="move_messages_between_streams_limit_seconds" label="Time limit for moving messages between channels" />
        <Select
          label="Message edit history"
          value={r.realm_message_edit_history_visibility_policy ?? 'all'}
          options={[
            ['all', 'Show edits and moves'],
            ['moves', 'Show moves only'],
            ['none', "Don't show edit history"],
          ]}
          onSave={(v) => patchRealm({ message_edit_history_visibility_policy: v })}
          disabledReason={reason}
        />
        <Select
          label="Topics policy"
          value={r.realm_topics_policy ?? 'allow_empty_topic'}
          options={[
            ['allow_empty_topic', 'Allow sending messages without a topic'],
            ['disable_empty_topic', 'Require topics in channel messages'],
          ]}
          onSave={(v) => patchRealm({ topics_policy: v })}
          disabledReason={reason}
        />
      </Subsection>
      <Subsection title="Other settings">
        <Select
          label="Call provider"
          value={r.realm_video_chat_provider ?? 1}
          options={providers.map((p) => [p.id, p.name] as [number, string])}
          onSave={(v) => patchRealm({ video_chat_provider: v })}
          disabledReason={reason}
        />
        <TextSetting
          label={`Jitsi server URL (empty: this server's default, ${r.server_jitsi_server_url ?? 'none'})`}
          type="url"
          value={r.realm_jitsi_server_url ?? ''}
          onSave={(v) => patchRealm({ jitsi_server_url: JSON.stringify(v.trim() || 'default') })}
          disabledReason={reason}
        />
        <Select
          label="Organization type"
          value={r.realm_org_type ?? 0}
          options={ORG_TYPES}
          onSave={(v) => patchRealm({ org_type: v })}
          disabledReason={realmReason(s, 'org_type')}
        />
        <Select label="Language for automated messages and invitation emails" value={r.realm_default_language ?? 'en'} options={[['en', 'English']]} onSave={(v) => patchRealm({ default_language: v })} disabledReason={reason} />
        <TextSetting
          label="Default language for code blocks"
          value={r.realm_default_code_block_language ?? ''}
          onSave={(v) => patchRealm({ default_code_block_language: v.trim() })}
          disabledReason={reason}
        />
        <Select
          label="GIPHY integration"
          value={r.realm_gif_rating_policy ?? 2}
          options={Object.values((r.gif_rating_policy_options ?? {}) as Record<string, { name: string; id: number }>).map((o) => [o.id, o.name] as [number, string])}
          onSave={(v) => patchRealm({ gif_rating_policy: v })}
          disabledReason={reason}
        />
        <Select
          label="Image and video preview size"
          value={r.realm_media_preview_size ?? 100}
          options={[
            [100, 'Small'],
            [150, 'Medium'],
            [200, 'Large'],
          ]}
          onSave={(v) => patchRealm({ media_preview_size: v })}
          disabledReason={reason}
        />
        <RealmCheckbox s={s} name="send_channel_events_messages" label="Send notification messages about channel events (creation, renames, description changes)" />
        <RealmCheckbox s={s} name="require_e2ee_push_notifications" label="Require end-to-end encryption for push notification content" />
        <RealmCheckbox s={s} name="want_advertise_in_communities_directory" label="Advertise the organization in the Zulip communities directory" />
        <RealmCheckbox s={s} name="inline_url_embed_preview" label="Show previews of linked websites" />
        <RealmCheckbox s={s} name="message_content_allowed_in_email_notifications" label="Allow message content in message notification emails" />
        <RealmCheckbox s={s} name="enable_guest_user_dm_warning" label="Warn when composing a direct message to a guest" />
        <RealmCheckbox s={s} name="inline_image_preview" label="Show previews of uploaded and linked images and videos" />
        <RealmCheckbox s={s} name="send_welcome_emails" label="Send emails introducing Zulip to new users" />
        <RealmCheckbox s={s} name="enable_read_receipts" label="Allow sending read receipts" />
        <RealmCheckbox s={s} name="name_changes_disabled" label="Prevent users from changing their name" />
        <RealmCheckbox s={s} name="email_changes_disabled" label="Prevent users from changing their email address" />
        <RealmCheckbox s={s} name="avatar_changes_disabled" label="Prevent users from changing their avatar" />
        <RealmCheckbox s={s} name="require_unique_names" label="Require unique names" />
        <RealmCheckbox s={s} name="enable_guest_user_indicator" label="Display “(guest)” after names of guest users" />
        <RealmCheckbox s={s} name="enable_spectator_access" label="Allow creating web-public channels (visible to anyone on the Internet)" />
        <RealmCheckbox s={s} name="digest_emails_enabled" label="Send weekly digest emails to inactive users" />
        <Select
          label="Day of the week to send digests"
          value={r.realm_digest_weekday ?? 1}
          options={['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'].map((d, i) => [i, d] as [number, string])}
          onSave={(v) => patchRealm({ digest_weekday: v })}
          disabledReason={reason}
        />
        <TextSetting label="Custom welcome message" multiline value={r.realm_welcome_message_custom_text ?? ''} onSave={(v) => patchRealm({ welcome_message_custom_text: v })} disabledReason={reason} />
      </Subsection>
      <Subsection title="Automated messages and emails">
        <RealmChannel s={s} name="new_stream_announcements_stream_id" label="New channel announcements" />
        <RealmChannel s={s} name="signup_announcements_stream_id" label="New user announcements" />
        <RealmChannel s={s} name="zulip_update_announcements_stream_id" label="Zulip update announcements" />
        <RealmChannel s={s} name="moderation_request_channel_id" label="Moderation requests" />
      </Subsection>
      <Subsection title="Message retention">
        <Select
          label="Message retention period"
          value={r.realm_message_retention_days ?? -1}
          options={[[-1, 'Retain forever'], ...[30, 90, 365, 730].map((d) => [d, `${d} days`] as [number, string]), ...(![-1, 30, 90, 365, 730].includes(r.realm_message_retention_days) && r.realm_message_retention_days ? [[r.realm_message_retention_days, `${r.realm_message_retention_days} days`] as [number, string]] : [])]}
          onSave={(v) => patchRealm({ message_retention_days: v === -1 ? 'unlimited' : v })}
          disabledReason={realmReason(s, 'message_retention_days')}
        />
      </Subsection>
      <Subsection title="Joining the organization">
        <Select
          label="Waiting period before new members turn into full members"
          value={r.realm_waiting_period_threshold ?? 0}
          options={[[0, 'None'], [3, '3 days'], [7, '7 days'], [30, '30 days'], ...(![0, 3, 7, 30].includes(r.realm_waiting_period_threshold ?? 0) ? [[r.realm_waiting_period_threshold, `${r.realm_waiting_period_threshold} days`] as [number, string]] : [])]}
          onSave={(v) => patchRealm({ waiting_period_threshold: v })}
          disabledReason={realmReason(s, 'waiting_period_threshold')}
        />
        <RealmCheckbox s={s} name="disallow_disposable_email_addresses" label="Don't allow disposable email addresses" />
        <RealmCheckbox s={s} name="invite_required" label="Invitations are required for joining this organization" />
        <RealmCheckbox s={s} name="emails_restricted_to_domains" label="Restrict to a list of domains" />
        <Domains s={s} reason={realmReason(s, 'emails_restricted_to_domains')} />
        <DefaultChannels s={s} />
      </Subsection>
      <AuthenticationMethods s={s} />
      <ChannelFolders s={s} reason={reason} />
    </Section>
  );
}

/** Register's realm_authentication_methods: each backend's state; owners change them. */
function AuthenticationMethods({ s }: { s: State }) {
  const methods = Object.entries((s.reg.realm_authentication_methods ?? {}) as Record<string, { enabled: boolean; available: boolean; unavailable_reason?: string }>);
  return (
    <Subsection title="Authentication methods">
      {methods.map(([name, m]) => (
        <Checkbox
          label={name === 'Email' ? 'Email and password' : name}
          checked={m.enabled}
          onSave={(v) => patchRealm({ authentication_methods: { [name]: v } })}
          disabledReason={!m.available ? m.unavailable_reason ?? 'Not configured on this server.' : realmReason(s, 'authentication_methods')}
        />
      ))}
    </Subsection>
  );
}

interface ChannelFolder {
  id: number;
  name: string;
  description: string;
  /** The description rendered by the server's Markdown processor, as channel descriptions are. */
  rendered_description: string;
  is_archived: boolean;
}

/**
 * The organization's channel folders (GET /channel_folders, archived ones too, in their
 * order), fetched again on channel_folder events. Administrators create, rename, describe,
 * reorder and archive them (each of those endpoints is x-requires-administrator).
 */
function ChannelFolders({ s, reason }: { s: State; reason?: string }) {
  const { data } = useFetched(s, ['channel_folder'], () => api('GET', '/channel_folders', { include_archived: true }).then((r) => r.channel_folders as ChannelFolder[]));
  const saver = useSaver();
  const [editing, setEditing] = useState<number | null>(null);
  // A keyboard keeps its place: after a move, once the list shows the new order, the button
  // pressed has the focus again (its pair at an end of the list); after an edit, its Edit button.
  const [focus, setFocus] = useState<{ id: string; order: string } | null>(null);
  const folders = data ?? [];
  const order = folders.map((f) => f.id).join();
  useEffect(() => {
    if (!focus || order !== focus.order) return;
    document.getElementById(focus.id)?.focus();
    setFocus(null);
  }, [order, focus]);
  const move = (i: number, by: -1 | 1) => {
    const ids = folders.map((f) => f.id);
    const [id] = ids.splice(i, 1);
    ids.splice(i + by, 0, id!);
    const to = i + by;
    const dir = to === 0 ? 'down' : to === ids.length - 1 ? 'up' : by < 0 ? 'up' : 'down';
    setFocus({ id: `folder-${id}-${dir}`, order: ids.join() });
    void saver.run(() => api('PATCH', '/channel_folders', { order: ids })).then((ok) => ok || setFocus(null));
  };
  return (
    <Subsection title="Channel folders">
      {data && folders.length === 0 && <p class="muted">There are no channel folders yet.</p>}
      <ul class="plain settings-list folder-list" aria-label="Channel folders">
        {folders.map((f, i) => (
          <li key={f.id}>
            {editing === f.id ? (
              <EditChannelFolder
                s={s}
                f={f}
                onDone={() => {
                  setEditing(null);
                  setFocus({ id: `folder-${f.id}-edit`, order });
                }}
              />
            ) : (
              <>
                {!reason && (
                  <span class="row-actions">
                    <button type="button" id={`folder-${f.id}-up`} aria-label={`Move channel folder ${f.name} up`} disabled={i === 0} onClick={() => move(i, -1)}>
                      ↑
                    </button>
                    <button type="button" id={`folder-${f.id}-down`} aria-label={`Move channel folder ${f.name} down`} disabled={i === folders.length - 1} onClick={() => move(i, 1)}>
                      ↓
                    </button>
                  </span>
                )}
                <div class="folder-text">
                  <span>
                    {f.name}
                    {f.is_archived && <span class="tag">archived</span>}
                  </span>
                  {f.description && <div class="muted rendered-markdown" dangerouslySetInnerHTML={{ __html: f.rendered_description }} />}
                </div>
                {!reason && (
                  <span class="row-actions">
                    <button type="button" id={`folder-${f.id}-edit`} aria-label={`Edit channel folder ${f.name}`} onClick={() => setEditing(f.id)}>
                      Edit
                    </button>
                    <button type="button" aria-label={`${f.is_archived ? 'Unarchive' : 'Archive'} channel folder ${f.name}`} onClick={() => void saver.run(() => api('PATCH', `/channel_folders/${f.id}`, { is_archived: !f.is_archived }))}>
                      {f.is_archived ? 'Unarchive' : 'Archive'}
                    </button>
                  </span>
                )}
              </>
            )}
          </li>
        ))}
      </ul>
      {!reason && <AddForm label="New channel folder" button="Create" onAdd={(name) => saver.run(() => api('POST', '/channel_folders/create', { name, description: '' }))} />}
      {saver.status}
    </Subsection>
  );
}

/** A channel folder's name and description, changed in place (PATCH /channel_folders/{id}). */
function EditChannelFolder({ s, f, onDone }: { s: State; f: ChannelFolder; onDone: () => void }) {
  const [name, setName] = useState(f.name);
  const [description, setDescription] = useState(f.description);
  const saver = useSaver();
  const ids = { n: useId('cfn'), d: useId('cfd') };
  const nameInput = useRef<HTMLInputElement>(null);
  useEffect(() => nameInput.current?.focus(), []);
  return (
    <form
      class="setting-grid folder-edit"
      aria-label={`Edit channel folder ${f.name}`}
      onSubmit={(e) => {
        e.preventDefault();
        void saver.run(() => api('PATCH', `/channel_folders/${f.id}`, { name: name.trim(), description })).then((ok) => ok && onDone());
      }}
    >
      <label for={ids.n}>Name</label>
      <input id={ids.n} ref={nameInput} required maxLength={s.reg.max_channel_folder_name_length ?? 60} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <label for={ids.d}>Description</label>
      <textarea id={ids.d} rows={2} maxLength={s.reg.max_channel_folder_description_length ?? 1024} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      <FormActions onCancel={onDone} status={saver.status} />
    </form>
  );
}

function Domains({ s, reason }: { s: State; reason?: string }) {
  const domains: { domain: string; allow_subdomains: boolean }[] = s.reg.realm_domains ?? [];
  const saver = useSaver();
  return (
    <div class="setting">
      <h4>Allowed domains</h4>
      <ul class="plain settings-list">
        {domains.map((d) => (
          <li>
            <span>{d.domain}</span>
            {!reason && (
              <button type="button" aria-label={`Remove domain ${d.domain}`} onClick={() => void saver.run(() => api('DELETE', `/realm/domains/${encodeURIComponent(d.domain)}`))}>
                Remove
              </button>
            )}
          </li>
        ))}
      </ul>
      {!reason && <AddForm label="Domain" onAdd={(domain) => saver.run(() => api('POST', '/realm/domains', { domain, allow_subdomains: false }))} />}
      {saver.status}
    </div>
  );
}

function DefaultChannels({ s, reason }: { s: State; reason?: string }) {
  const defaults: { stream_id: number; name: string }[] = s.reg.realm_default_streams ?? [];
  const [adding, setAdding] = useState(0);
  const saver = useSaver();
  const id = useId('defch');
  const candidates = [...s.channelNames.entries()].filter(([sid]) => !defaults.some((d) => d.stream_id === sid));
  return (
    <div class="setting">
      <h4>Default channels</h4>
      <p class="muted">New users are subscribed to these channels when they join.</p>
      <ul class="plain settings-list">
        {defaults.map((d) => (
          <li>
            <span>#{d.name}</span>
            {!reason && (
              <button type="button" aria-label={`Remove default channel ${d.name}`} onClick={() => void saver.run(() => api('DELETE', '/default_streams', { stream_id: d.stream_id }))}>
                Remove
              </button>
            )}
          </li>
        ))}
      </ul>
      {!reason && (
        <form
          class="setting-row"
          onSubmit={(e) => {
            e.preventDefault();
            void saver.run(() => api('POST', '/default_streams', { stream_id: adding })).then((ok) => ok && setAdding(0));
          }}
        >
          <label for={id}>Add default channel</label>
          <select id={id} value={String(adding)} onChange={(e) => setAdding(Number(e.currentTarget.value))}>
            <option value="0"></option>
            {candidates.map(([sid, name]) => (
              <option value={String(sid)}>#{name}</option>
            ))}
          </select>
          <button type="submit" disabled={!adding}>
            Add
          </button>
        </form>
      )}
      {saver.status}
    </div>
  );
}

/** Zulip's organization permissions, each a realm group setting with its settings-page label. */
const REALM_PERMISSIONS: [string, string][] = [
  ['can_invite_users_group', 'Who can send email invitations to new users'],
  ['create_multiuse_invite_group', 'Who can create reusable invitation links'],
  ['can_create_public_channel_group', 'Who can create public channels'],
  ['can_create_private_channel_group', 'Who can create private channels'],
  ['can_create_web_public_channel_group', 'Who can create web-public channels'],
  ['can_add_subscribers_group', 'Who can subscribe others to channels'],
  ['can_create_groups', 'Who can create user groups'],
  ['can_manage_all_groups', 'Who can administer all user groups'],
  ['can_add_custom_emoji_group', 'Who can add custom emoji'],
  ['can_create_bots_group', 'Who can create any bot'],
  ['can_create_write_only_bots_group', 'Who can create bots that send messages into Zulip'],
  ['can_delete_any_message_group', 'Who can delete any message'],
  ['can_delete_own_message_group', 'Who can delete their own messages'],
  ['can_move_messages_between_channels_group', 'Who can move messages to another channel'],
  ['can_move_messages_between_topics_group', 'Who can move messages to another topic'],
  ['can_resolve_topics_group', 'Who can resolve topics'],
  ['can_mention_many_users_group', 'Who can notify a large number of users with a wildcard mention'],
  ['direct_message_permission_group', 'Who can authorize a direct message conversation'],
  ['direct_message_initiator_group', 'Who can start a direct message conversation'],
  ['can_access_all_users_group', 'Who can view all other users in the organization'],
];


export function OrganizationPermissions({ s }: { s: State }) {
  return (
    <Section title="Organization permissions">
      {REALM_PERMISSIONS.filter(([name]) => s.reg[`realm_${name}`] !== undefined).map(([name, label]) => (
        <GroupSettingSelect
          s={s}
          label={label}
          value={s.reg[`realm_${name}`] as GroupSetting}
          onSave={(g) => patchRealm({ [name]: { new: g } })}
          disabledReason={realmReason(s, name)}
        />
      ))}
    </Section>
  );
}

interface ApiUser {
  user_id: number;
  full_name: string;
  email: string;
  delivery_email?: string;
  role: number;
  is_active: boolean;
  is_bot: boolean;
  bot_owner_id?: number;
  avatar_url: string | null;
}

export function Users({ s }: { s: State }) {
  const { data, error } = useFetched(s, ['realm_user', 'realm_bot'], () => api('GET', '/users', { client_gravatar: false }).then((r) => r.members as ApiUser[]));
  const [tab, setTab] = useState<'active' | 'deactivated'>('active');
  const saver = useSaver();
  const users = (data ?? []).filter((u) => !u.is_bot && (tab === 'active' ? u.is_active : !u.is_active)).sort((a, b) => a.full_name.localeCompare(b.full_name));
  const roleOptions = ROLE_NAMES.filter(([r]) => isOwner(s) || r !== ROLE.OWNER);
  return (
    <Section title="Users">
      <div class="settings-tabs" role="tablist" aria-label="Users">
        <button role="tab" aria-selected={tab === 'active'} onClick={() => setTab('active')}>
          Users
        </button>
        <button role="tab" aria-selected={tab === 'deactivated'} onClick={() => setTab('deactivated')}>
          Deactivated users
        </button>
      </div>
      {error && <p role="alert">{error}</p>}
      {saver.status}
      <table class="settings-table" aria-label={tab === 'active' ? 'Users' : 'Deactivated users'}>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
            {isAdmin(s) && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {users.map((u) => {
            const ownerTarget = u.role === ROLE.OWNER && !isOwner(s);
            return (
              <tr>
                <th scope="row">{u.full_name}</th>
                <td>{u.delivery_email ?? u.email}</td>
                <td>
                  {isAdmin(s) && !ownerTarget && u.is_active ? (
                    <select
                      aria-label={`Role of ${u.full_name}`}
                      value={String(u.role)}
                      onChange={(e) => void saver.run(() => api('PATCH', `/users/${u.user_id}`, { role: Number(e.currentTarget.value) }))}
                    >
                      {roleOptions.map(([r, name]) => (
                        <option value={String(r)}>{name}</option>
                      ))}
                    </select>
                  ) : (
                    <span title={ownerTarget ? OWNER_ONLY : undefined}>{roleName(u.role)}</span>
                  )}
                </td>
                {isAdmin(s) && (
                  <td>
                    {u.user_id === s.me.user_id || ownerTarget ? null : u.is_active ? (
                      <button
                        type="button"
                        class="danger"
                        aria-label={`Deactivate ${u.full_name}`}
                        onClick={() => {
                          if (window.confirm(`Deactivate ${u.full_name}? Their bots are deactivated too, and they are logged out everywhere.`)) void saver.run(() => api('DELETE', `/users/${u.user_id}`));
                        }}
                      >
                        Deactivate
                      </button>
                    ) : (
                      <button type="button" aria-label={`Reactivate ${u.full_name}`} onClick={() => void saver.run(() => api('POST', `/users/${u.user_id}/reactivate`))}>
                        Reactivate
                      </button>
                    )}
                  </td>
                )}
              </tr>
            );
          })}
        </tbody>
      </table>
    </Section>
  );
}

const EXPIRY: [string, string][] = [
  ['30', '30 minutes'],
  ['1440', '1 day'],
  ['4320', '3 days'],
  ['14400', '10 days'],
  ['43200', '30 days'],
  ['never', 'Never expires'],
];

export function Invitations({ s }: { s: State }) {
  const canEmail = isAdmin(s) || realmAllows(s, 'can_invite_users_group');
  const canLink = realmAllows(s, 'create_multiuse_invite_group');
  const { data, error } = useFetched(s, ['invites_changed'], () => api('GET', '/invites').then((r) => r.invites as any[]));
  const saver = useSaver();
  return (
    <Section title="Invitations">
      {canEmail || canLink ? <InviteForm s={s} canEmail={canEmail} canLink={canLink} /> : <p class="setting-reason">You do not have permission to invite people to this organization.</p>}
      <Subsection title="Pending invitations">
        {error && <p role="alert">{error}</p>}
        {saver.status}
        {data && data.length === 0 && <p>There are no pending invitations.</p>}
        {data && data.length > 0 && (
          <table class="settings-table" aria-label="Pending invitations">
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Invited by</th>
                <th scope="col">Role</th>
                <th scope="col">Expires</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {data.map((i) => {
                const who = i.is_multiuse ? 'Invite link' : i.email;
                return (
                  <tr>
                    <th scope="row">{i.is_multiuse ? <code>{i.link_url}</code> : i.email}</th>
                    <td>{s.users.get(i.invited_by_user_id)?.full_name ?? ''}</td>
                    <td>{roleName(i.invited_as)}</td>
                    <td>{i.expiry_date ? new Date(i.expiry_date * 1000).toLocaleString() : 'Never'}</td>
                    <td class="row-actions">
                      {!i.is_multiuse && (
                        <button type="button" aria-label={`Resend invitation to ${who}`} onClick={() => void saver.run(() => api('POST', `/invites/${i.id}/resend`))}>
                          Resend
                        </button>
                      )}
                      <button type="button" class="danger" aria-label={`Revoke invitation ${i.is_multiuse ? i.link_url : `to ${who}`}`} onClick={() => void saver.run(() => api('DELETE', i.is_multiuse ? `/invites/multiuse/${i.id}` : `/invites/${i.id}`))}>
                        Revoke
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </Subsection>
    </Section>
  );
}

function InviteForm({ s, canEmail, canLink }: { s: State; canEmail: boolean; canLink: boolean }) {
  const [emails, setEmails] = useState('');
  const [role, setRole] = useState(ROLE.MEMBER as number);
  const [expiry, setExpiry] = useState('14400');
  const [channels, setChannels] = useState<Set<number>>(new Set());
  const [groups, setGroups] = useState<Set<number>>(new Set());
  const [welcome, setWelcome] = useState('');
  const [result, setResult] = useState<{ ok: boolean; text: string; link?: string } | null>(null);
  const ids = { emails: useId('ie'), role: useId('ir'), exp: useId('ix'), welcome: useId('iw') };
  const roles = ROLE_NAMES.filter(([r]) => (r === ROLE.OWNER ? isOwner(s) : r === ROLE.ADMIN ? isAdmin(s) : true));
  const namedGroups = (s.reg.realm_user_groups ?? []).filter((g: any) => !g.is_system_group && !g.deactivated);
  const canCreateChannels = realmAllows(s, 'can_create_public_channel_group') || realmAllows(s, 'can_create_private_channel_group');
  const params = () => ({
    invite_as: role,
    invite_expires_in_minutes: expiry === 'never' ? null : Number(expiry),
    stream_ids: [...channels],
    group_ids: [...groups],
    ...(isAdmin(s) && welcome ? { welcome_message_custom_text: welcome } : {}),
  });
  const toggle = (set: Set<number>, id: number, on: boolean, apply: (s: Set<number>) => void) => {
    const next = new Set(set);
    if (on) next.add(id);
    else next.delete(id);
    apply(next);
  };
  const run = async (f: () => Promise<Record<string, any>>, done: (r: Record<string, any>) => { text: string; link?: string }) => {
    try {
      setResult({ ok: true, ...done(await f()) });
    } catch (e) {
      setResult({ ok: false, text: errorText(e) });
    }
  };
  return (
    <form
      class="setting-grid"
      aria-label="Invite users to organization"
      onSubmit={(e) => {
        e.preventDefault();
        void run(
          () => api('POST', '/invites', { invitee_emails: emails, ...params() }),
          () => {
            setEmails('');
            return { text: 'Invitations sent!' };
          },
        );
      }}
    >
      <h3 class="grid-wide">Invite users to organization</h3>
      {canEmail && (
        <>
          <label for={ids.emails}>Emails (one on each line or comma-separated)</label>
          <textarea id={ids.emails} rows={3} value={emails} onInput={(e) => setEmails(e.currentTarget.value)} />
        </>
      )}
      <label for={ids.role}>User(s) join as</label>
      <select id={ids.role} value={String(role)} onChange={(e) => setRole(Number(e.currentTarget.value))}>
        {roles.map(([r, name]) => (
          <option value={String(r)}>{name}</option>
        ))}
      </select>
      <label for={ids.exp}>Invitation expires after</label>
      <select id={ids.exp} value={expiry} onChange={(e) => setExpiry(e.currentTarget.value)}>
        {EXPIRY.map(([v, t]) => (
          <option value={v}>{t}</option>
        ))}
      </select>
      <fieldset class="grid-wide picker-list">
        <legend>Channels they should join</legend>
        {s.subs.size === 0 ? (
          <p class="muted picker-empty">
            There are no channels to add them to yet.
            {canCreateChannels && (
              <>
                {' '}
                <a href="#channels/new">Create a channel</a>
              </>
            )}
          </p>
        ) : (
          [...s.subs.values()].map((c) => (
            <label class="checkbox">
              <input type="checkbox" checked={channels.has(c.stream_id)} onChange={(e) => toggle(channels, c.stream_id, e.currentTarget.checked, setChannels)} />#{c.name}
            </label>
          ))
        )}
      </fieldset>
      {namedGroups.length > 0 && (
        <fieldset class="grid-wide picker-list">
          <legend>Groups they should join</legend>
          {namedGroups.map((g: any) => (
            <label class="checkbox">
              <input type="checkbox" checked={groups.has(g.id)} onChange={(e) => toggle(groups, g.id, e.currentTarget.checked, setGroups)} />
              {g.name}
            </label>
          ))}
        </fieldset>
      )}
      {isAdmin(s) && (
        <>
          <label for={ids.welcome}>Custom message for the welcome bot</label>
          <textarea id={ids.welcome} rows={2} value={welcome} onInput={(e) => setWelcome(e.currentTarget.value)} />
        </>
      )}
      <div class="setting-actions grid-wide">
        {canEmail && (
          <button class="primary" type="submit" disabled={!emails.trim()}>
            Invite
          </button>
        )}
        {canLink && (
          <button type="button" onClick={() => void run(() => api('POST', '/invites/multiuse', params()), (r) => ({ text: 'Invite link created:', link: r.invite_link }))}>
            Generate invite link
          </button>
        )}
        {result && (
          <span class={`save-status ${result.ok ? 'saved' : 'error'}`} role={result.ok ? 'status' : 'alert'}>
            {result.text} {result.link && <code aria-label="Invite link">{result.link}</code>}
          </span>
        )}
      </div>
    </form>
  );
}
