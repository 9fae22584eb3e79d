import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { unzipSync } from 'fflate';
import { emojiCodeToName } from './markdown/index.js';
import { FLAG_BITS } from './message_flags.js';
import { newUploadPathId, uploadContentType } from './uploads.js';
import { ROLE_ADMINISTRATOR, ROLE_GUEST, ROLE_MEMBER, ROLE_OWNER } from './roles.js';
import { ExportFormatError, type Rec, type ZulipExport } from './zulip_export/archive.js';
import { toZulipFlagsMask } from './zulip_export/flags.js';
import { RECIPIENT_DIRECT_MESSAGE_GROUP, RECIPIENT_PERSONAL, RECIPIENT_STREAM } from './zulip_export/export.js';

/**
 * Zulip's Slack importer (zerver/data_import/slack.py and slack_message_conversion.py): a
 * Slack export zip becomes an export in Zulip's format (lib/zulip_export), which the import
 * then reads like any other. The realm ID used inside is a placeholder (0): the import
 * rewrites upload paths to the new organization's.
 */

type SlackObj = Record<string, any>;

// slack_message_conversion.py's patterns (Python's `regex` module; \p classes need /u here).
const LINK_REGEX = /(<)(http:\/\/www\.|https:\/\/www\.|http:\/\/|https:\/\/|ftp:\/\/)?([a-z0-9]+([-.]{1}[a-z0-9]+)*)(\.)([a-z]{2,63}(:[0-9]{1,5})?)(\/[^>]*)?(\|)?(?:\|([^>]+))?(>)/g;
const SLACK_MAILTO_REGEX = /<((mailto:)?([\w.-]+@[\w.-]+(\.[\w]+)+))(\|)?([\w.-]+@[\w.-]+(\.[\w]+)+)?>/g;
const SLACK_USERMENTION_REGEX = /(<@)([a-zA-Z0-9]+)(\|)?([a-zA-Z0-9]+)?(>)/;
const formatRegex = (c: string): RegExp => {
  // A /u pattern escapes only syntax characters: `*` needs it, `~` and `_` must not have it.
  const m = c === '*' ? '\\*' : c;
  return new RegExp(`((?![${c}\`@\\\\\\p{Pf}\\p{Pe}])[\\p{P}\\p{Zs}\\p{S}]|^)(${m})([^${c}]+)(${m})((?![${c}\`@\\\\\\p{Pi}\\p{Ps}])(?=[\\p{P}\\p{Zs}\\p{S}]|$))`, 'gmu');
};
const SLACK_BOLD_REGEX = formatRegex('*');
const SLACK_STRIKETHROUGH_REGEX = formatRegex('~');
const SLACK_ITALIC_REGEX = formatRegex('_');

/** Zulip's get_user_full_name. */
export function slackUserFullName(user: SlackObj): string {
  if (user.deleted === false) return user.real_name || user.name;
  if (user.is_mirror_dummy) return user.profile?.real_name ?? user.name;
  return user.name;
}

/**
 * Zulip's convert_to_zulip_markdown: Slack's mrkdwn as Zulip Markdown, the Zulip IDs of the
 * users it mentions, and whether it has a link.
 */
export function convertSlackMarkdown(
  text: string,
  users: readonly SlackObj[],
  channels: ReadonlyMap<string, string>,
  userIds: ReadonlyMap<string, number>,
): { content: string; mentioned: number[]; hasLink: boolean } {
  const mentioned: number[] = [];
  const format = (t: string, re: RegExp, kw: string) => t.replace(re, (_m, g1: string, _g2, g3: string) => `${g1}${kw}${g3}${kw}`);
  text = format(text, SLACK_BOLD_REGEX, '**');
  text = format(text, SLACK_STRIKETHROUGH_REGEX, '~~');
  text = format(text, SLACK_ITALIC_REGEX, '*');
  text = text.replaceAll('<!everyone>', '@**all**').replaceAll('<!channel>', '@**all**').replaceAll('<!here>', '@**all**');
  for (const [name, id] of channels) text = text.replaceAll(`<#${id}|${name}>`, `#**${name}**`);
  text = text
    .split(' ')
    .map((token) => {
      const m = SLACK_USERMENTION_REGEX.exec(token);
      if (!m) return token;
      const user = users.find((u) => u.id === m[2] && (m[4] === undefined || u.name === m[4]));
      if (!user) return token;
      const zulipId = userIds.get(m[2]!);
      if (zulipId !== undefined) mentioned.push(zulipId);
      return token.replace(new RegExp(SLACK_USERMENTION_REGEX.source, 'g'), `@**${slackUserFullName(user)}**`);
    })
    .join(' ');
  let hasLink = false;
  for (const m of [...text.matchAll(LINK_REGEX)]) {
    const slackUrl = m[0];
    const parts = slackUrl.slice(1, -1).split('|');
    const converted = parts.length >= 2 ? `[${parts.slice(1).join('|')}](${parts[0]})` : parts[0]!;
    hasLink = true;
    text = text.replace(slackUrl, converted);
  }
  for (const m of [...text.matchAll(SLACK_MAILTO_REGEX)]) {
    hasLink = true;
    text = text.replace(m[0], m[1]!);
  }
  return { content: text, mentioned, hasLink };
}

/** Slack's emoji names (iamcal's emoji-datasource short names) to emoji codes, as Zulip's slack_emoji_name_to_codepoint. */
let slackEmoji: Map<string, string> | null = null;
function slackEmojiCode(name: string): string | undefined {
  if (!slackEmoji) {
    slackEmoji = new Map();
    const data = createRequire(import.meta.url)('emoji-datasource/emoji.json') as { short_name: string; short_names: string[]; unified: string; non_qualified: string | null }[];
    for (const e of data) {
      const code = (e.non_qualified || e.unified).toLowerCase();
      slackEmoji.set(e.short_name, code);
      for (const n of e.short_names) if (!slackEmoji.has(n)) slackEmoji.set(n, code);
    }
  }
  return slackEmoji.get(name);
}

/** Zulip's get_user_timezone. */
function slackTimezone(user: SlackObj): string {
  const tz = user.tz;
  return typeof tz === 'string' && tz.includes('/') ? tz : 'America/New_York';
}

const MESSAGE_SKIPPED_SUBTYPES = ['pinned_item', 'unpinned_item', 'channel_join', 'channel_leave', 'channel_name'];

/** Reads a Slack export zip and converts it; `skipped` lists what could not come along. */
export function convertSlackExport(zipPath: string): { data: ZulipExport; skipped: string[] } {
  let entries: Record<string, Uint8Array>;
  try {
    entries = unzipSync(readFileSync(zipPath));
  } catch (e) {
    throw new ExportFormatError(`${zipPath} is not a readable zip file: ${e instanceof Error ? e.message : String(e)}`);
  }
  // Exports made by zipping a folder have it as the top directory.
  const prefix = Object.keys(entries).find((n) => n === 'users.json' || n.endsWith('/users.json'))?.slice(0, -'users.json'.length);
  if (prefix === undefined) throw new ExportFormatError(`${zipPath} has no users.json: not a Slack export`);
  const file = (name: string): Uint8Array | undefined => entries[prefix + name];
  const json = (name: string, required = false): SlackObj[] => {
    const body = file(name);
    if (!body) {
      if (required) throw new ExportFormatError(`${zipPath} has no ${name}: not a Slack export`);
      return [];
    }
    try {
      const parsed = JSON.parse(Buffer.from(body).toString('utf8')) as unknown;
      return Array.isArray(parsed) ? (parsed as SlackObj[]) : [];
    } catch {
      throw new ExportFormatError(`${name} in ${zipPath} is not valid JSON`);
    }
  };
  const skipped: string[] = [];
  const users = json('users.json', true);
  const channelsJson = json('channels.json', true);
  const now = Math.floor(Date.now() / 1000);

  // Users (users_to_zerver_userprofile): the primary owner gets the first ID.
  const userIds = new Map<string, number>();
  const zUsers: Rec[] = [];
  const emails = new Map<string, number>();
  const customFields = new Map<string, number>();
  const fieldRows: Rec[] = [];
  const fieldValues: Rec[] = [];
  let nextUserId = 2;
  const teamDomain = users.find((u) => u.team_domain)?.team_domain ?? 'slack';
  for (const u of users) {
    const profile: SlackObj = u.profile ?? {};
    let email: string;
    if (profile.email) email = profile.email;
    else if (u.is_bot || profile.bot_id) email = `${String(profile.real_name_normalized ?? profile.first_name ?? u.name).replace('Bot', '').replace(/ /g, '').toLowerCase()}-bot@${teamDomain}.slack.com`;
    else {
      email = `${u.name}@${teamDomain}.slack.com`;
      skipped.push(`Slack user ${u.id} (${u.name}) has no email address: imported as ${email}`);
    }
    const existing = emails.get(email.toLowerCase());
    if (existing !== undefined) {
      userIds.set(u.id, existing);
      continue;
    }
    const id = u.is_primary_owner ? 1 : nextUserId++;
    emails.set(email.toLowerCase(), id);
    userIds.set(u.id, id);
    let role = ROLE_MEMBER;
    if (u.is_owner || u.is_primary_owner) role = ROLE_OWNER;
    else if (u.is_admin) role = ROLE_ADMINISTRATOR;
    if (u.is_restricted || u.is_ultra_restricted) role = ROLE_GUEST;
    zUsers.push({
      id, realm: 0, email, delivery_email: email, full_name: slackUserFullName(u), is_active: !u.deleted && !u.is_mirror_dummy, is_mirror_dummy: !!u.is_mirror_dummy,
      is_bot: !!u.is_bot, bot_type: u.is_bot ? 1 : null, role, date_joined: now, last_login: now, timezone: slackTimezone(u), avatar_source: 'G', avatar_version: 1,
    });
    if (profile.avatar_hash) skipped.push(`avatar of ${email} (on Slack's servers, not in the export)`);
    const fields: Record<string, { value: string }> = { ...(profile.fields ?? {}) };
    for (const f of ['phone', 'skype']) if (f in profile) fields[f] = { value: String(profile[f]) };
    for (const [name, value] of Object.entries(fields)) {
      if (!value || typeof value.value !== 'string' || value.value === '') continue;
      let fieldId = customFields.get(name);
      if (fieldId === undefined) {
        fieldId = customFields.size + 1;
        customFields.set(name, fieldId);
        fieldRows.push({ id: fieldId, realm: 0, name: ['phone', 'skype'].includes(name) ? name : `Slack custom field ${fieldId}`, field_type: 1, hint: '', field_data: '', order: fieldId });
      }
      fieldValues.push({ id: fieldValues.length + 1, user_profile: id, field: fieldId, value: value.value });
    }
  }
  for (const f of fieldRows) if (fieldValues.some((v) => v.field === f.id && String(v.value).length > 50)) f.field_type = 2;

  // Channels, private channels, group DMs and their recipients (channels_to_zerver_stream).
  const recipients: Rec[] = [];
  const subscriptions: Rec[] = [];
  const streams: Rec[] = [];
  const defaultStreams: Rec[] = [];
  const huddles: Rec[] = [];
  const recipientByName = new Map<string, number>();
  const channelIds = new Map<string, string>();
  const subscribe = (members: unknown, recipient: number) => {
    for (const m of Array.isArray(members) ? members : []) {
      const uid = userIds.get(String(m));
      if (uid !== undefined) subscriptions.push({ id: subscriptions.length + 1, user_profile: uid, recipient, active: true, is_muted: false, pin_to_top: false, color: '#c2c2c2' });
    }
  };
  const addChannels = (list: SlackObj[], inviteOnly: boolean) => {
    for (const c of list) {
      const id = streams.length + 1;
      const recipient = recipients.length + 1;
      streams.push({
        id, realm: 0, name: c.name, description: c.purpose?.value ?? '', invite_only: inviteOnly, history_public_to_subscribers: true, is_web_public: false,
        date_created: Math.floor(Number(c.created) || now), deactivated: !!c.is_archived, recipient,
      });
      recipients.push({ id: recipient, type: RECIPIENT_STREAM, type_id: id });
      if (['general', 'random'].includes(c.name) && !c.is_archived) defaultStreams.push({ id: defaultStreams.length + 1, realm: 0, stream: id });
      recipientByName.set(c.name, recipient);
      channelIds.set(c.name, c.id);
      subscribe(c.members, recipient);
    }
  };
  addChannels(channelsJson, false);
  addChannels(json('groups.json'), true);
  const mpimNames = new Set<string>();
  for (const g of json('mpims.json')) {
    const recipient = recipients.length + 1;
    huddles.push({ id: huddles.length + 1, huddle_hash: g.id, group_size: Array.isArray(g.members) ? g.members.length : 0, recipient });
    recipients.push({ id: recipient, type: RECIPIENT_DIRECT_MESSAGE_GROUP, type_id: huddles.length });
    recipientByName.set(g.name, recipient);
    mpimNames.add(g.name);
    subscribe(g.members, recipient);
  }
  const personal = new Map<number, number>();
  for (const uid of new Set(userIds.values())) {
    const recipient = recipients.length + 1;
    recipients.push({ id: recipient, type: RECIPIENT_PERSONAL, type_id: uid });
    personal.set(uid, recipient);
    subscriptions.push({ id: subscriptions.length + 1, user_profile: uid, recipient, active: true, is_muted: false, pin_to_top: false, color: '#c2c2c2' });
  }
  const dmMembers = new Map<string, [string, string]>();
  for (const d of json('dms.json')) if (Array.isArray(d.members) && d.members.length >= 2) dmMembers.set(d.id, [d.members[0], d.members[1]]);
  const subscribers = new Map<number, Set<number>>();
  for (const s of subscriptions) {
    const set = subscribers.get(s.recipient as number) ?? new Set<number>();
    set.add(s.user_profile as number);
    subscribers.set(s.recipient as number, set);
  }

  // Messages (get_messages_iterator): day files in name order, each day's messages by time.
  const dirs = new Map<string, { kind: 'channel' | 'mpim' | 'dm'; name: string }>();
  for (const name of recipientByName.keys()) dirs.set(name, { kind: mpimNames.has(name) ? 'mpim' : 'channel', name });
  for (const id of dmMembers.keys()) dirs.set(id, { kind: 'dm', name: id });
  const byDay = new Map<string, SlackObj[]>();
  for (const path of Object.keys(entries)) {
    if (!path.startsWith(prefix)) continue;
    const m = /^([^/]+)\/([^/]+\.json)$/.exec(path.slice(prefix.length));
    const dir = m ? dirs.get(m[1]!) : undefined;
    if (!m || !dir) continue;
    let list: SlackObj[];
    try {
      list = JSON.parse(Buffer.from(entries[path]!).toString('utf8')) as SlackObj[];
    } catch {
      throw new ExportFormatError(`${m[1]}/${m[2]} in ${zipPath} is not valid JSON`);
    }
    const day = byDay.get(m[2]!) ?? [];
    for (const msg of Array.isArray(list) ? list : []) {
      if (msg.user === 'U00' || msg.mimetype === 'application/vnd.slack-docs') continue;
      day.push({ ...msg, __dir: dir });
    }
    byDay.set(m[2]!, day);
  }
  const messages: Rec[] = [];
  const userMessages: Rec[] = [];
  const reactions: Rec[] = [];
  const attachments: Rec[] = [];
  const uploads = { records: [] as Rec[], data: new Map<string, Buffer>() };
  const threadCounter = new Map<string, number>();
  const threadMap = new Map<string, string>();
  const fileContent = (dir: string, f: SlackObj): Uint8Array | undefined =>
    file(`__uploads/${f.id}/${f.name}`) ?? file(`${dir}/attachments/${f.id}-${f.name}`) ?? file(`attachments/${f.id}-${f.name}`);
  const pad = (n: number) => String(n).padStart(2, '0');
  for (const dayName of [...byDay.keys()].sort()) {
    const day = byDay.get(dayName)!.sort((a, b) => Number(a.ts) - Number(b.ts));
    for (const msg of day) {
      const slackUser: string | undefined = msg.user ?? msg.file?.user;
      if (!slackUser) continue;
      const subtype = msg.subtype;
      if (MESSAGE_SKIPPED_SUBTYPES.includes(subtype)) continue;
      const sender = userIds.get(slackUser);
      if (sender === undefined) {
        skipped.push(`message ${String(msg.ts)} in ${msg.__dir.name}: sender ${slackUser} is not in users.json`);
        continue;
      }
      if (typeof msg.text !== 'string') {
        skipped.push(`message ${String(msg.ts)} in ${msg.__dir.name}: no text`);
        continue;
      }
      let { content, mentioned, hasLink } = convertSlackMarkdown(msg.text, users, channelIds, userIds);
      const dir = msg.__dir as { kind: string; name: string };
      let recipient: number;
      let senderRecipient: number | null = null;
      if (dir.kind === 'dm') {
        const [a, b] = dmMembers.get(dir.name)!;
        const ua = userIds.get(a);
        const ub = userIds.get(b);
        if (ua === undefined || ub === undefined) continue;
        recipient = personal.get(slackUser === a ? ub : ua)!;
        senderRecipient = personal.get(slackUser === a ? ua : ub)!;
      } else recipient = recipientByName.get(dir.name)!;
      const id = messages.length + 1;
      if (Array.isArray(msg.reactions)) {
        const merged = new Map<string, Set<string>>();
        for (const r of msg.reactions) {
          const name = String(r.name).split('::')[0]!;
          const set = merged.get(name) ?? new Set<string>();
          for (const u of Array.isArray(r.users) ? r.users : []) set.add(String(u));
          merged.set(name, set);
        }
        for (const [name, who] of merged) {
          const code = slackEmojiCode(name);
          const zulipName = code ? emojiCodeToName(code) : undefined;
          if (!code || !zulipName) {
            skipped.push(`reaction :${name}: on message ${String(msg.ts)} (no such emoji)`);
            continue;
          }
          for (const u of who) {
            const uid = userIds.get(u);
            if (uid !== undefined) reactions.push({ id: reactions.length + 1, message: id, user_profile: uid, emoji_name: zulipName, emoji_code: code, reaction_type: 'unicode_emoji' });
          }
        }
      }
      if (['bot_add', 'sh_room_created', 'me_message'].includes(subtype)) content = `/me ${content}`;
      // Files (process_message_files): content in the zip becomes an upload, else a link to Slack.
      const links: string[] = [];
      let hasAttachment = false;
      let hasImage = false;
      const files: SlackObj[] = subtype === 'file_share' && msg.file ? [msg.file] : Array.isArray(msg.files) ? msg.files : [];
      for (const f of files) {
        if (['tombstone', 'hidden_by_limit'].includes(f.mode) || ['access_denied', 'file_not_found'].includes(f.file_access)) continue;
        const title = f.title ?? f.name;
        const body = f.id && f.name ? fileContent(dir.name, f) : undefined;
        hasLink = true;
        if (body) {
          const pathId = newUploadPathId(0, String(f.name));
          hasAttachment = true;
          hasImage ||= String(f.mimetype ?? '').includes('image');
          links.push(`[${title}](/user_uploads/${pathId})`);
          const contentType = uploadContentType(String(f.name), String(f.mimetype ?? ''));
          uploads.data.set(pathId, Buffer.from(body));
          uploads.records.push({ path: pathId, s3_path: pathId, realm_id: 0, user_profile_id: sender, size: body.length, content_type: contentType, last_modified: Math.floor(Number(msg.ts)) });
          attachments.push({ id: attachments.length + 1, owner: sender, realm: 0, path_id: pathId, file_name: f.name, size: body.length, create_time: Math.floor(Number(msg.ts)), content_type: contentType, messages: [id] });
        } else {
          links.push(`[${title}](${f.url_private})`);
          if (typeof f.url_private === 'string' && /^https?:\/\/files\.slack\.com\//.test(f.url_private)) skipped.push(`file ${String(f.name)} (${String(f.id)}): not in the export; linked to ${f.url_private}`);
        }
      }
      content = [content, links.join('\n')].filter((p) => p !== '').join('\n');
      let topic = 'imported from Slack';
      if (msg.thread_ts !== undefined) {
        const t = new Date(Number(msg.thread_ts) * 1000);
        const date = `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}`;
        const key = `${date} ${pad(t.getUTCHours())}:${pad(t.getUTCMinutes())}:${pad(t.getUTCSeconds())}`;
        let name = threadMap.get(key);
        if (name === undefined) {
          const n = (threadCounter.get(date) ?? 0) + 1;
          threadCounter.set(date, n);
          name = `${date} Slack thread ${n}`;
          threadMap.set(key, name);
        }
        topic = name;
      }
      messages.push({
        id, sender, recipient, realm: 0, subject: dir.kind === 'channel' ? topic : '', content, rendered_content: null, date_sent: Math.floor(Number(msg.ts)),
        sending_client: 1, last_edit_time: null, edit_history: null, has_attachment: hasAttachment, has_image: hasImage, has_link: hasLink, type: 1,
      });
      const isPrivate = dir.kind !== 'channel';
      const wildcard = /@\*\*all\*\*/.test(content);
      const receive = (r: number) => {
        for (const uid of subscribers.get(r) ?? []) {
          let flags: number = FLAG_BITS.read;
          if (mentioned.includes(uid)) flags |= FLAG_BITS.mentioned;
          if (wildcard) flags |= FLAG_BITS.stream_wildcard_mentioned;
          if (isPrivate) flags |= FLAG_BITS.is_private;
          userMessages.push({ id: userMessages.length + 1, user_profile: uid, message: id, flags_mask: toZulipFlagsMask(flags) });
        }
      };
      receive(recipient);
      if (senderRecipient !== null && senderRecipient !== recipient) receive(senderRecipient);
    }
  }

  const realm: Record<string, Rec[]> = {
    zerver_realm: [{ id: 0, string_id: 'slack', name: 'Slack import', description: 'Organization imported from Slack!', date_created: now }],
    zerver_userprofile: zUsers,
    zerver_recipient: recipients,
    zerver_huddle: huddles,
    zerver_stream: streams,
    zerver_subscription: subscriptions,
    zerver_defaultstream: defaultStreams,
    zerver_reaction: reactions,
    zerver_client: [{ id: 1, name: 'populate_db' }],
    zerver_customprofilefield: fieldRows,
    zerver_customprofilefieldvalue: fieldValues,
  };
  return { data: { realm, messages, userMessages, attachment: { zerver_attachment: attachments }, files: { uploads } }, skipped };
}
