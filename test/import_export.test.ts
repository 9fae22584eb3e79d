import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabaseUrl, listenApp, testConfig, testDatabases } from './helpers/server.js';
import { ApiClient, type ParamValue } from './helpers/client.js';
import { ok } from './helpers/assert.js';
import { PNG_1X1, basicAuth, fetchRaw, postFiles } from './helpers/uploads.js';
import { cliJson as json, cliRefused, parley } from './helpers/cli.js';
import type { App } from '../src/app.js';
import { fetchRealmByStringId } from '../src/db/repos/realms.js';
import { fetchUserByEmail } from '../src/db/repos/users.js';
import { sendBotDirectMessage } from '../src/actions/signup.js';
import { deliverDueScheduledMessages } from '../src/actions/scheduled_messages.js';
import { markScheduledMessageFailed } from '../src/db/repos/scheduled_messages.js';

/** API calls to an organization on its own subdomain, through inject (fetch cannot set Host). */
class HostClient {
  constructor(
    private readonly app: App,
    readonly host: string,
    readonly email: string,
    readonly apiKey: string,
  ) {}

  private get auth(): string {
    return `Basic ${Buffer.from(`${this.email}:${this.apiKey}`).toString('base64')}`;
  }

  async get(path: string, params: Record<string, ParamValue> = {}): Promise<any> {
    const query = new URLSearchParams(ApiClient.encode(params)).toString();
    const res = await this.app.fastify.inject({ method: 'GET', url: `/api/v1${path}${query ? `?${query}` : ''}`, headers: { host: this.host, authorization: this.auth } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  }

  async post(path: string, params: Record<string, ParamValue> = {}): Promise<any> {
    const res = await this.app.fastify.inject({
      method: 'POST',
      url: `/api/v1${path}`,
      headers: { host: this.host, authorization: this.auth, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(ApiClient.encode(params)).toString(),
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  }

  async raw(url: string): Promise<{ status: number; data: Buffer }> {
    const res = await this.app.fastify.inject({ method: 'GET', url, headers: { host: this.host, authorization: this.auth } });
    return { status: res.statusCode, data: res.rawPayload };
  }
}

interface Side {
  get(path: string, params?: Record<string, ParamValue>): Promise<any>;
  post(path: string, params?: Record<string, ParamValue>): Promise<any>;
  raw(url: string): Promise<{ status: number; data: Buffer }>;
}

const REGISTER = { apply_markdown: true, client_gravatar: false, include_subscribers: true, client_capabilities: { user_settings_object: true, empty_topic_name: true } };

/**
 * One organization's state as its users see it, with every ID (users, channels, groups, the
 * organization in upload paths) replaced by a name, so that an export and its import compare.
 */
async function snapshot(side: Side): Promise<any> {
  const reg = await side.post('/register', REGISTER);
  const userName = new Map<number, string>(reg.realm_users.map((u: any) => [u.user_id, u.full_name]));
  const streamName = new Map<number, string>([...reg.subscriptions, ...reg.unsubscribed, ...reg.never_subscribed].map((s: any) => [s.stream_id, s.name]));
  const groupName = new Map<number, string>(reg.realm_user_groups.map((g: any) => [g.id, g.name]));
  const fieldName = new Map<number, string>(reg.custom_profile_fields.map((f: any) => [f.id, f.name]));
  const emojiName = new Map<string, string>(Object.values(reg.realm_emoji).map((e: any) => [String(e.id), e.name]));
  // Message IDs by position, oldest first: links to messages compare by it.
  const all = (await side.get('/messages', { anchor: 'oldest', num_before: 0, num_after: 1000 })).messages.map((m: any) => m.id);
  const position = new Map<number, number>(all.map((id: number, i: number) => [id, i]));
  const html = (s: string | undefined): string | undefined =>
    s
      ?.replaceAll(reg.realm_url, 'REALM')
      .replace(/(\/(?:near|with)\/)(\d+)(?=["/])/g, (_m, a, id) => `${a}#${position.get(Number(id))}`)
      ?.replace(/(data-user-id=")(\d+)"/g, (_m, a, id) => `${a}${userName.get(Number(id))}"`)
      .replace(/(data-stream-id=")(\d+)"/g, (_m, a, id) => `${a}${streamName.get(Number(id))}"`)
      .replace(/(data-user-group-id=")(\d+)"/g, (_m, a, id) => `${a}${groupName.get(Number(id))}"`)
      .replace(/(#narrow\/(?:channel|stream)\/)(\d+)-/g, (_m, a, id) => `${a}${streamName.get(Number(id))}-`)
      .replace(/\/(user_uploads|user_avatars)\/(thumbnail\/)?\d+\//g, '/$1/$2R/');
  const group = (v: any): any => (typeof v === 'number' ? groupName.get(v) : { members: v.direct_members.map((id: number) => userName.get(id)).sort(), subgroups: v.direct_subgroups.map((id: number) => groupName.get(id)).sort() });
  const streamSettings = (s: any) => ({
    name: s.name, description: s.description, rendered_description: html(s.rendered_description), invite_only: s.invite_only, is_web_public: s.is_web_public,
    history_public_to_subscribers: s.history_public_to_subscribers, is_archived: s.is_archived, date_created: s.date_created, topics_policy: s.topics_policy,
    subscribers: (s.subscribers ?? []).map((id: number) => userName.get(id)).sort(),
    groups: Object.fromEntries(Object.entries(s).filter(([k]) => /^can_\w+_group$/.test(k)).map(([k, v]) => [k, group(v)])),
  });
  // Markdown that names users, channels and messages by ID (a reminder's text).
  const text = (s: string): string =>
    s
      .replaceAll(reg.realm_url, 'REALM')
      .replace(/\|(\d+)\*\*/g, (_m, id) => `|${userName.get(Number(id))}**`)
      .replace(/(channel\/)(\d+)-/g, (_m, a, id) => `${a}${streamName.get(Number(id))}-`)
      .replace(/(\/(?:near|with)\/)(\d+)/g, (_m, a, id) => `${a}#${position.get(Number(id))}`)
      .replace(/\/user_uploads\/\d+\//g, '/user_uploads/R/');
  // A poll's votes and a to-do list's strikes name an option or task by "<user ID>,<index>"
  // and "<index>,<user ID>".
  const widgetEvent = (content: string): unknown => {
    const e = JSON.parse(content);
    if (e.type === 'vote') e.key = e.key.replace(/^\d+/, (id: string) => userName.get(Number(id)));
    if (e.type === 'strike') e.key = e.key.replace(/\d+$/, (id: string) => userName.get(Number(id)));
    return e;
  };
  const to = (type: string, ids: number[]) => (type === 'stream' ? ids.map((id) => streamName.get(id)) : ids.map((id) => userName.get(id)).sort());
  const draft = (d: any) => ({ type: d.type, to: to(d.type, d.to), topic: d.topic, content: d.content, timestamp: d.timestamp });
  const scheduled = (m: any) => ({
    type: m.type, to: to(m.type, m.type === 'stream' ? [m.to] : m.to), topic: m.topic, content: m.content, rendered_content: html(m.rendered_content),
    scheduled_delivery_timestamp: m.scheduled_delivery_timestamp, failed: m.failed,
  });
  const reminder = (r: any) => ({
    type: r.type, to: to(r.type, r.to), content: text(r.content), rendered_content: html(r.rendered_content), scheduled_delivery_timestamp: r.scheduled_delivery_timestamp,
    failed: r.failed, reminder_target_message: position.get(r.reminder_target_message_id),
  });
  const snippet = (x: any) => ({ title: x.title, content: x.content, date_created: x.date_created });
  const drafts = (await side.get('/drafts')).drafts.map(draft);
  const scheduledMessages = (await side.get('/scheduled_messages')).scheduled_messages.map(scheduled);
  const reminders = (await side.get('/reminders')).reminders.map(reminder);
  const savedSnippets = (await side.get('/saved_snippets')).saved_snippets.map(snippet);
  assert.deepEqual(reg.drafts.map(draft), drafts);
  assert.deepEqual(reg.scheduled_messages.map(scheduled), scheduledMessages);
  assert.deepEqual(reg.reminders.map(reminder), reminders);
  assert.deepEqual(reg.saved_snippets.map(snippet), savedSnippets);
  const messages = (await side.get('/messages', { anchor: 'newest', num_before: 1000, num_after: 0, apply_markdown: true })).messages.map((m: any) => ({
    sender: m.sender_full_name,
    type: m.type,
    to: m.type === 'stream' ? m.display_recipient : m.display_recipient.map((u: any) => u.full_name).sort(),
    subject: m.subject,
    content: html(m.content),
    timestamp: m.timestamp,
    last_edit_timestamp: m.last_edit_timestamp,
    last_moved_timestamp: m.last_moved_timestamp,
    client: m.client,
    flags: [...m.flags].sort(),
    is_me_message: m.is_me_message,
    submessages: m.submessages.map((x: any) => {
      assert.equal(x.message_id, m.id);
      return { sender: userName.get(x.sender_id), msg_type: x.msg_type, content: widgetEvent(x.content) };
    }),
    reactions: m.reactions.map((r: any) => ({ user: userName.get(r.user_id), emoji_name: r.emoji_name, reaction_type: r.reaction_type, emoji_code: r.reaction_type === 'realm_emoji' ? emojiName.get(r.emoji_code) : r.emoji_code })),
    edit_history: m.edit_history?.map((e: any) => ({
      ...e, user_id: e.user_id === null ? null : userName.get(e.user_id), prev_rendered_content: html(e.prev_rendered_content),
      stream: e.stream === undefined ? undefined : streamName.get(e.stream), prev_stream: e.prev_stream === undefined ? undefined : streamName.get(e.prev_stream),
    })),
  }));
  return {
    messages,
    drafts,
    scheduled_messages: scheduledMessages,
    reminders,
    saved_snippets: savedSnippets,
    realm: { name: reg.realm_name, description: reg.realm_description, default_language: reg.realm_default_language, allow_message_editing: reg.realm_allow_message_editing, waiting_period_threshold: reg.realm_waiting_period_threshold,
      create_public_channel: group(reg.realm_can_create_public_channel_group), domains: reg.realm_domains, linkifiers: reg.realm_linkifiers.map((l: any) => [l.pattern, l.url_template]),
      default_streams: reg.realm_default_streams.map((id: number) => streamName.get(id)).sort() },
    users: reg.realm_users.map((u: any) => ({
      full_name: u.full_name, email: u.email, role: u.role, is_active: u.is_active, is_bot: u.is_bot, timezone: u.timezone, date_joined: u.date_joined,
      avatar: u.avatar_url.includes('/user_avatars/') ? 'uploaded' : 'gravatar',
      profile: Object.fromEntries(Object.entries(u.profile_data ?? {}).map(([id, v]) => [fieldName.get(Number(id)), v])),
    })).sort((a: any, b: any) => a.full_name.localeCompare(b.full_name)),
    subscriptions: reg.subscriptions.map((s: any) => ({ ...streamSettings(s), color: s.color, pin_to_top: s.pin_to_top, is_muted: s.is_muted, desktop_notifications: s.desktop_notifications })).sort((a: any, b: any) => a.name.localeCompare(b.name)),
    other_streams: [...reg.unsubscribed, ...reg.never_subscribed].map(streamSettings).sort((a: any, b: any) => a.name.localeCompare(b.name)),
    groups: reg.realm_user_groups.map((g: any) => ({
      name: g.name, description: g.description, is_system_group: g.is_system_group, deactivated: g.deactivated,
      members: g.members.map((id: number) => userName.get(id)).sort(), subgroups: g.direct_subgroup_ids.map((id: number) => groupName.get(id)).sort(),
      groups: Object.fromEntries(Object.entries(g).filter(([k]) => /^can_\w+_group$/.test(k)).map(([k, v]) => [k, group(v)])),
    })).sort((a: any, b: any) => a.name.localeCompare(b.name)),
    profile_fields: reg.custom_profile_fields.map((f: any) => ({ ...f, id: undefined })),
    emoji: Object.values(reg.realm_emoji).map((e: any) => ({ name: e.name, deactivated: e.deactivated, source_url: html(e.source_url), author: userName.get(e.author_id) })),
    user_topics: reg.user_topics
      .map((t: any) => ({ channel: streamName.get(t.stream_id), topic: t.topic_name, visibility_policy: t.visibility_policy, last_updated: t.last_updated }))
      .sort((a: any, b: any) => `${a.channel}>${a.topic}`.localeCompare(`${b.channel}>${b.topic}`)),
    unread: {
      count: reg.unread_msgs.count,
      streams: reg.unread_msgs.streams.map((s: any) => [streamName.get(s.stream_id), s.topic, s.unread_message_ids.length]).sort(),
    },
    starred: reg.starred_messages.length,
    recent_private_conversations: reg.recent_private_conversations.map((c: any) => c.user_ids.map((id: number) => userName.get(id)).sort()).sort(),
    user_settings: reg.user_settings,
    alert_words: reg.alert_words,
    muted_users: reg.muted_users.map((m: any) => userName.get(m.id)),
  };
}

for (const kind of testDatabases()) {
  describe(`data export and import [${kind}]`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    let work: string;

    async function server(): Promise<{ app: App; url: string; env: Record<string, string> }> {
      const db = await freshDatabaseUrl(kind);
      const config = testConfig(db.url);
      const { app, url } = await listenApp(config);
      cleanups.push(async () => {
        await app.close();
        await db.drop();
        rmSync(config.dataDir, { recursive: true, force: true });
      });
      return { app, url, env: { DATABASE_URL: db.url, PARLEY_DATA_DIR: config.dataDir, EXTERNAL_URL: config.externalUrl } };
    }

    before(() => {
      work = mkdtempSync(join(tmpdir(), 'parley-export-'));
    });

    after(async () => {
      for (const c of cleanups.reverse()) await c();
      rmSync(work, { recursive: true, force: true });
    });

    test('a Parley export imported into an empty Parley gives the same messages, register and uploads', async () => {
      const a = await server();
      json(await parley(a.env, 'demo'));
      const key = async (env: Record<string, string>, email: string, realm = '') => json(await parley(env, '--realm', realm, 'api-key', '--email', email)).api_key as string;
      const as = async (email: string) => new ApiClient(a.url, email, await key(a.env, email));
      const iago = await as('iago@example.com');
      const hamlet = await as('hamlet@example.com');
      const othello = await as('othello@example.com');

      // Beyond the demo: uploads, a custom emoji, reactions, edits, a move, groups, flags,
      // topic visibility, an avatar, profile fields, alert words and a muted user.
      const notes = Buffer.from('meeting notes\n'.repeat(50));
      const uploaded = ok(await postFiles(iago, '/user_uploads', [{ name: 'notes.txt', data: notes, type: 'text/plain' }]));
      const image = ok(await postFiles(hamlet, '/user_uploads', [{ name: 'pixel.png', data: PNG_1X1, type: 'image/png' }]));
      ok(await postFiles(iago, '/realm/emoji/party', [{ name: 'party.png', data: PNG_1X1, type: 'image/png' }]));
      ok(await postFiles(hamlet, '/users/me/avatar', [{ name: 'me.png', data: PNG_1X1, type: 'image/png' }]));
      const group = ok(await iago.post('/user_groups/create', { name: 'reviewers', description: 'Review things', members: [] }));
      const reg0 = ok(await iago.post('/register', {}));
      const idOf = (name: string) => reg0.realm_users.find((u: any) => u.full_name === name).user_id;
      ok(await iago.post(`/user_groups/${group.group_id}/members`, { add: [idOf('King Hamlet'), idOf('Othello, the Moor of Venice')] }));
      const field = ok(await iago.post('/realm/profile_fields', { name: 'Team', field_type: 1, hint: 'Which team' }));
      ok(await hamlet.patch('/users/me/profile_data', { data: [{ id: field.id, value: 'Elsinore' }] }));
      const general = reg0.never_subscribed.concat(reg0.subscriptions).find((s: any) => s.name === 'general').stream_id;
      const sent = ok(await iago.post('/messages', { type: 'stream', to: 'general', topic: 'files', content: `@**King Hamlet** see [notes](${uploaded.url}) in #**random** for @*reviewers* :party:` }));
      const pic = ok(await hamlet.post('/messages', { type: 'stream', to: 'general', topic: 'files', content: `[pixel](${image.url})` }));
      const moved = ok(await othello.post('/messages', { type: 'stream', to: 'general', topic: 'typo topc', content: 'moving soon' }));
      ok(await iago.patch(`/messages/${sent.id}`, { content: `@**King Hamlet** see [the notes](${uploaded.url}) in #**random** for @*reviewers* :party:` }));
      ok(await othello.patch(`/messages/${moved.id}`, { topic: 'typo topic', propagate_mode: 'change_all' }));
      // A link to an earlier message, and a direct message from a cross-realm bot.
      ok(await othello.post('/messages', { type: 'stream', to: 'general', topic: 'files', content: `about #**general>files@${sent.id}**` }));
      const realmA = (await fetchRealmByStringId(a.app.services.db.kysely, ''))!;
      const othelloRow = (await fetchUserByEmail(a.app.services.db.kysely, realmA.id, 'othello@example.com'))!;
      await sendBotDirectMessage(a.app.services, realmA, 'notification', othelloRow, 'A notice for @**Othello, the Moor of Venice**.');
      ok(await hamlet.post(`/messages/${sent.id}/reactions`, { emoji_name: 'thumbs_up' }));
      ok(await othello.post(`/messages/${sent.id}/reactions`, { emoji_name: 'party' }));
      ok(await hamlet.post('/messages', { type: 'direct', to: JSON.stringify([idOf('Othello, the Moor of Venice'), idOf('Iago')]), content: 'a group DM with /me too' }));
      ok(await hamlet.post('/messages/flags', { messages: [pic.id], op: 'add', flag: 'starred' }));
      ok(await hamlet.post('/mark_topic_as_read', { stream_id: general, topic_name: 'welcome' }));
      ok(await hamlet.post('/user_topics', { stream_id: general, topic: 'typo topic', visibility_policy: 1 }));
      ok(await hamlet.post('/users/me/alert_words', { alert_words: ['elsinore'] }));
      ok(await hamlet.post(`/users/me/muted_users/${idOf('Polonius')}`));
      ok(await hamlet.patch('/settings', { left_side_userlist: true, emojiset: 'text' }));
      ok(await hamlet.post('/users/me/subscriptions/properties', { subscription_data: [{ stream_id: general, property: 'pin_to_top', value: true }, { stream_id: general, property: 'color', value: '#abcdef' }] }));

      // A poll with an added option and votes, and a to-do list with an added, struck task.
      const poll = ok(await hamlet.post('/messages', { type: 'stream', to: 'general', topic: 'lunch', content: '/poll Where to?\nPizza\nSushi' }));
      const todo = ok(await iago.post('/messages', { type: 'stream', to: 'general', topic: 'lunch', content: '/todo Chores\nDishes' }));
      const submessage = async (client: ApiClient, message_id: number, content: unknown) => ok(await client.post('/submessage', { message_id, msg_type: 'widget', content: JSON.stringify(content) }));
      await submessage(othello, poll.id, { type: 'new_option', idx: 1, option: 'Tacos' });
      await submessage(iago, poll.id, { type: 'vote', key: 'canned,1', vote: 1 });
      await submessage(hamlet, poll.id, { type: 'vote', key: `${idOf('Othello, the Moor of Venice')},1`, vote: 1 });
      await submessage(hamlet, todo.id, { type: 'new_task', key: 2, task: 'Laundry', desc: 'whites', completed: false });
      await submessage(iago, todo.id, { type: 'strike', key: `2,${idOf('King Hamlet')}` });
      // Drafts of every kind, saved snippets, a reminder, and scheduled messages: one delivered,
      // one failed, one due in a few seconds and one tomorrow.
      ok(await hamlet.post('/drafts', { drafts: [
        { type: 'stream', to: [general], topic: 'lunch', content: 'Tacos it is', timestamp: 1700000000 },
        { type: 'private', to: [idOf('Othello, the Moor of Venice'), idOf('Iago')], topic: '', content: 'Between us three', timestamp: 1700000100 },
        { type: 'private', to: [idOf('King Hamlet')], topic: '', content: 'Note to self', timestamp: 1700000200 },
        { type: '', to: [], topic: '', content: 'Not addressed yet', timestamp: 1700000300 },
      ] }));
      ok(await othello.post('/drafts', { drafts: [{ type: 'private', to: [idOf('Iago')], topic: '', content: 'Honest Iago', timestamp: 1700000400 }] }));
      ok(await othello.post('/saved_snippets', { title: 'Greeting', content: 'Good morrow!' }));
      ok(await othello.post('/saved_snippets', { title: 'Farewell', content: 'Adieu, **adieu**.' }));
      ok(await iago.post('/reminders', { message_id: sent.id, scheduled_delivery_timestamp: Math.floor(Date.now() / 1000) + 3600, note: 'Read the notes' }));
      const soon = Math.floor(Date.now() / 1000) + 1;
      ok(await othello.post('/scheduled_messages', { type: 'stream', to: String(general), topic: 'lunch', content: 'Sent later', scheduled_delivery_timestamp: soon }));
      const failed = ok(await hamlet.post('/scheduled_messages', { type: 'direct', to: JSON.stringify([idOf('Iago')]), content: 'Will not go', scheduled_delivery_timestamp: soon }));
      await markScheduledMessageFailed(a.app.services.db.kysely, failed.scheduled_message_id, 'Message could not be sent at the scheduled time.');
      while (Date.now() / 1000 <= soon) await new Promise((r) => setTimeout(r, 100));
      assert.equal(await deliverDueScheduledMessages(a.app.services), 1);
      const due = Math.floor(Date.now() / 1000) + 4;
      ok(await hamlet.post('/scheduled_messages', { type: 'stream', to: String(general), topic: 'lunch', content: 'Sent after the move', scheduled_delivery_timestamp: due }));
      ok(await hamlet.post('/scheduled_messages', { type: 'direct', to: JSON.stringify([idOf('Othello, the Moor of Venice'), idOf('Iago')]), content: 'Tomorrow, @**Iago**', scheduled_delivery_timestamp: due + 86400 }));

      const file = join(work, 'export.tar.gz');
      const exported = json(await parley(a.env, 'export', '--to', file));
      assert.equal(exported.file, file);
      assert.equal(exported.export_type, 'full_without_consent');
      cliRefused(await parley(a.env, 'export', '--to', file), `${file} already exists`);

      const b = await server();
      const report = json(await parley(b.env, 'import-zulip', file, '--subdomain', 'imported'));
      assert.equal(report.string_id, 'imported');
      assert.ok(report.counts.messages >= 16, JSON.stringify(report.counts));
      assert.equal(report.counts.uploads, 2);
      assert.equal(report.counts.custom_emoji, 1);
      assert.equal(report.counts.avatars, 1);
      assert.deepEqual(report.skipped, []);
      const reset = report.password_reset_links.find((l: any) => l.email === 'hamlet@example.com');
      assert.match(reset.url, /^http:\/\/imported\.localhost:\d+\/accounts\/password\/reset\/\d+-\d+-[A-Za-z0-9_-]{43}$/);
      cliRefused(await parley(b.env, 'import-zulip', file, '--subdomain', 'imported'), "Subdomain 'imported' is already in use. Please choose a different one.");

      const host = `imported.${new URL(b.app.services.config.externalUrl).host}`;
      const bFor = async (email: string) => new HostClient(b.app, host, email, await key(b.env, email, 'imported'));
      const aSide = (c: ApiClient): Side => ({
        get: async (p, q) => ok(await c.get(p, q)),
        post: async (p, q) => ok(await c.post(p, q)),
        raw: (url) => fetchRaw(`${a.url}${url}`, basicAuth(c)),
      });
      for (const email of ['hamlet@example.com', 'iago@example.com', 'othello@example.com']) {
        const before = await snapshot(aSide(await as(email)));
        const afterImport = await snapshot(await bFor(email));
        assert.deepEqual(afterImport, before, `${email} sees the same organization`);
        // The comparison is not of empty lists.
        const files = before.messages.find((m: any) => m.subject === 'files' && m.sender === 'Iago');
        assert.deepEqual(files.reactions.map((r: any) => [r.user, r.emoji_name, r.reaction_type]), [['King Hamlet', 'thumbs_up', 'unicode_emoji'], ['Othello, the Moor of Venice', 'party', 'realm_emoji']]);
        assert.equal(files.edit_history.length, 1);
        assert.match(files.content, /data-user-id="King Hamlet"/);
        assert.match(files.content, /data-user-group-id="reviewers"/);
        assert.match(files.content, /href="\/user_uploads\/R\/[^"]+\/notes\.txt"/);
        assert.ok(before.messages.length >= 10, `${before.messages.length} messages`);
        assert.ok(before.messages.some((m: any) => /\/near\/#\d+"/.test(m.content ?? '')), 'a message link');
        if (email === 'othello@example.com') assert.ok(before.messages.some((m: any) => m.sender === 'Notification Bot'));
        assert.ok(before.groups.length >= 9, `${before.groups.length} groups`);
        assert.ok(before.users.length >= 7, `${before.users.length} users`);
        const counts = Object.fromEntries(['drafts', 'scheduled_messages', 'reminders', 'saved_snippets'].map((k) => [k, before[k].length]));
        const expected: Record<string, Record<string, number>> = {
          'hamlet@example.com': { drafts: 4, scheduled_messages: 3, reminders: 0, saved_snippets: 0 },
          'iago@example.com': { drafts: 0, scheduled_messages: 0, reminders: 1, saved_snippets: 0 },
          'othello@example.com': { drafts: 1, scheduled_messages: 0, reminders: 0, saved_snippets: 2 },
        };
        assert.deepEqual(counts, expected[email]);
        const pollB = before.messages.find((m: any) => m.content?.includes('Where to?'));
        assert.deepEqual(pollB.submessages.map((x: any) => [x.sender, x.content.key ?? x.content.widget_type]), [
          ['King Hamlet', 'poll'], ['Othello, the Moor of Venice', undefined], ['Iago', 'canned,1'], ['King Hamlet', 'Othello, the Moor of Venice,1'],
        ]);
      }
      const reminderB = (await snapshot(await bFor('iago@example.com'))).reminders[0];
      assert.match(reminderB.content, /^You requested a reminder for the following message\. Note:\n > Read the notes\n\n@_\*\*Iago\|Iago\*\* \[said\]\(REALM\/#narrow\/channel\/general-general\/topic\/files\/near\/#\d+\)/);

      // The delivered and the failed scheduled message came along too; the pending one is
      // still sent when it falls due.
      const realmB = (await fetchRealmByStringId(b.app.services.db.kysely, 'imported'))!;
      const rowsB = await b.app.services.db.kysely.selectFrom('scheduled_messages').selectAll().where('realm_id', '=', realmB.id).orderBy('id').execute();
      assert.deepEqual(rowsB.map((r) => [r.delivery_type, r.delivery_type === 2 ? r.reminder_note : r.content, !!r.delivered, !!r.failed, r.failure_message]), [
        [2, 'Read the notes', false, false, null],
        [1, 'Sent later', true, false, null],
        [1, 'Will not go', false, true, 'Message could not be sent at the scheduled time.'],
        [1, 'Sent after the move', false, false, null],
        [1, 'Tomorrow, @**Iago**', false, false, null],
      ]);
      // When each was asked for, too (Zulip's request_timestamp).
      const requested = async (app: App, realmId: number) =>
        (await app.services.db.kysely.selectFrom('scheduled_messages').select('request_timestamp').where('realm_id', '=', realmId).orderBy('id').execute()).map((r) => Number(r.request_timestamp));
      const requestedA = await requested(a.app, realmA.id);
      assert.ok(requestedA.every((t) => t > 1_700_000_000), JSON.stringify(requestedA));
      assert.deepEqual(await requested(b.app, realmB.id), requestedA);
      const deliveredB = (await b.app.services.db.kysely.selectFrom('messages').select('content').where('id', '=', Number(rowsB[1]!.delivered_message_id)).executeTakeFirstOrThrow()).content;
      assert.equal(deliveredB, 'Sent later');
      while (Date.now() / 1000 <= due) await new Promise((r) => setTimeout(r, 100));
      assert.equal(await deliverDueScheduledMessages(b.app.services), 1);
      const hamletAfter = await bFor('hamlet@example.com');
      assert.deepEqual((await hamletAfter.get('/scheduled_messages')).scheduled_messages.map((m: any) => m.content), ['Will not go', 'Tomorrow, @**Iago**']);
      const last = (await hamletAfter.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0 })).messages[0];
      assert.deepEqual([last.sender_full_name, last.display_recipient, last.subject, last.content], ['King Hamlet', 'general', 'lunch', '<p>Sent after the move</p>']);

      // Uploads, avatars and emoji: the same bytes at the imported organization's URLs.
      const hamletB = await bFor('hamlet@example.com');
      const regB = await hamletB.post('/register', REGISTER);
      const importedId = (await b.app.services.db.kysely.selectFrom('realms').select('id').where('string_id', '=', 'imported').executeTakeFirstOrThrow()).id;
      const fetchedNotes = await hamletB.raw(uploaded.url.replace(/^\/user_uploads\/\d+\//, `/user_uploads/${importedId}/`));
      assert.equal(fetchedNotes.status, 200);
      assert.deepEqual(fetchedNotes.data, notes);
      const avatarPath = (reg: any) => new URL(reg.realm_users.find((u: any) => u.full_name === 'King Hamlet').avatar_url, 'http://x').pathname;
      const avatarA = await fetchRaw(`${a.url}${avatarPath(ok(await hamlet.post('/register', REGISTER)))}`);
      const avatarB = await hamletB.raw(avatarPath(regB));
      assert.equal(avatarB.status, 200);
      assert.deepEqual(avatarB.data, avatarA.data);
      const emoji = Object.values(regB.realm_emoji).find((e: any) => e.name === 'party') as any;
      const emojiFile = await hamletB.raw(new URL(emoji.source_url, 'http://x').pathname);
      assert.equal(emojiFile.status, 200);
      assert.deepEqual(emojiFile.data, PNG_1X1);
      const attachments = (await (await bFor('iago@example.com')).get('/attachments')).attachments;
      assert.deepEqual(attachments.map((x: any) => [x.name, x.size, x.message_ids.length, x.create_time]), [['notes.txt', notes.length, 1, ok(await iago.get('/attachments')).attachments[0].create_time]]);
    });
  });
}
