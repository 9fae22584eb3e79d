import { join } from 'node:path';
import { Eta } from 'eta';
import { doCreateMissedMessageAddress } from '../actions/email_gateway.js';
import type { NotificationOutboxRow } from '../db/repos/notifications.js';
import { fetchMessagesByIds } from '../db/repos/messages.js';
import { fetchRealmById } from '../db/repos/realms.js';
import { fetchStreamsByIds } from '../db/repos/streams.js';
import { countActiveAccountsByDeliveryEmail, fetchUserById, fetchUsersByIds } from '../db/repos/users.js';
import type { Message, Realm, User } from '../db/tables.js';
import type { Services } from '../services.js';
import { avatarUrl } from './avatar.js';
import type { Mailer } from './email.js';
import { RESOLVED_TOPIC_PREFIX } from './narrow/terms.js';
import { loadGroupMembership, type GroupMembership } from './group_settings.js';
import type { Tx } from '../db/index.js';
import { PROJECT_ROOT } from './project_files.js';
import { realmSettings } from './realm_settings.js';
import { signObject, unsignObject } from './signing.js';
import { realmIconUrl, realmUrl } from './urls.js';
import { userSettings } from './user_settings.js';

/** Every email's templates: templates/email/, one base layout per format (Eta, escaping by default). */
export const eta = new Eta({ views: join(PROJECT_ROOT, 'templates', 'email'), cache: true, autoTrim: false });

const UNSUBSCRIBE_PURPOSE = 'unsubscribe';

/** Zulip's one_click_unsubscribe_link: a signed link that needs no login, for one kind of email (missed_messages, digest). */
export async function unsubscribeUrl(services: Services, realm: Realm, userId: number, type: 'missed_messages' | 'digest' = 'missed_messages'): Promise<string> {
  const token = await signObject(services.db, UNSUBSCRIBE_PURPOSE, { u: userId, t: type });
  return `${realmUrl(services.config, realm)}/accounts/unsubscribe/${type}/${token}`;
}

/** The user an unsubscribe token was made for, or null when it was altered. */
export async function unsubscribeTokenUser(services: Services, type: string, token: string): Promise<number | null> {
  const v = await unsignObject<{ u: number; t: string }>(services.db, UNSUBSCRIBE_PURPOSE, token);
  return v && v.t === type && Number.isInteger(v.u) ? v.u : null;
}

/** Zulip's hash_util_encode for narrow URLs. */
export function encodeHashComponent(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*.]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%/g, '.');
}

/** Non-silent user and user-group mentions in rendered message HTML (lib/markdown's spans). */
function mentionsIn(html: string): { userIds: Set<number>; groupIds: Set<number> } {
  const userIds = new Set<number>();
  const groupIds = new Set<number>();
  for (const [, attrs] of html.matchAll(/<span\b([^>]*)>/g)) {
    const classes = (/\bclass="([^"]*)"/.exec(attrs!)?.[1] ?? '').split(/\s+/);
    if (classes.includes('silent')) continue;
    const user = /\bdata-user-id="(\d+)"/.exec(attrs!)?.[1];
    const group = /\bdata-user-group-id="(\d+)"/.exec(attrs!)?.[1];
    if (classes.includes('user-mention') && user) userIds.add(Number(user));
    if (classes.includes('user-group-mention') && group) groupIds.add(Number(group));
  }
  return { userIds, groupIds };
}

/**
 * Zulip's get_mentioned_user_group: when the user was mentioned in these messages only through
 * groups (a personal mention in any of them takes precedence), the smallest mentioned group
 * that contains them.
 */
export function mentionedUserGroup(messages: readonly Pick<Message, 'rendered_content'>[], userId: number, groups: GroupMembership): { id: number; name: string } | null {
  let best: { id: number; name: string; size: number } | null = null;
  for (const m of messages) {
    const { userIds, groupIds } = mentionsIn(m.rendered_content);
    if (userIds.has(userId)) return null;
    for (const id of groupIds) {
      const members = groups.members(id);
      const name = groups.byId.get(id)?.name;
      if (name !== undefined && members.has(userId) && (best === null || members.size < best.size)) best = { id, name, size: members.size };
    }
  }
  return best && { id: best.id, name: best.name };
}

/** Why the email was sent: the footer of Zulip's missed_message template, its cases in its order (none for direct messages). */
function reasonText(triggers: ReadonlySet<string>, groupName: string | null, channel: string, topic: string): string {
  const because = 'You are receiving this because';
  if (triggers.has('mentioned') && groupName === null) return `${because} you were personally mentioned.`;
  if (groupName !== null) return `${because} @${groupName} was mentioned.`;
  if (triggers.has('topic_wildcard_mentioned_in_followed_topic') || triggers.has('topic_wildcard_mentioned')) return `${because} all topic participants were mentioned in #${channel} > ${topic}.`;
  if (triggers.has('stream_wildcard_mentioned_in_followed_topic')) return `${because} you have wildcard mention notifications enabled for topics you follow.`;
  if (triggers.has('stream_wildcard_mentioned')) return `${because} everyone was mentioned in #${channel}.`;
  if (triggers.has('followed_topic_email_notify')) return `${because} you have email notifications enabled for topics you follow.`;
  if (triggers.has('stream_email_notify')) return `${because} you have email notifications enabled for #${channel}.`;
  return '';
}

/** Zulip's direct_message_group_display_name: the other participants of a group conversation. */
function groupDisplayName(others: readonly string[]): string {
  if (others.length === 2) return `${others[0]} and ${others[1]}`;
  if (others.length === 3) return `${others[0]}, ${others[1]}, and ${others[2]}`;
  return `${others[0]}, ${others[1]}, and ${others.length - 2} others`;
}

/** Relative links in rendered messages (uploads, emoji, narrows) made absolute for a mail reader. */
function absoluteLinks(html: string, base: string): string {
  return html.replace(/\b(href|src)="\//g, `$1="${base}/`);
}

/**
 * Zulip's include_realm_name_in_missedmessage_emails_subject: always (2), never (3), or
 * automatically (1) when the address has accounts in more than one organization here.
 */
async function includeRealmNameInSubject(db: Tx, user: User, policy: number): Promise<boolean> {
  if (policy !== 1) return policy === 2;
  return (await countActiveAccountsByDeliveryEmail(db, user.delivery_email)) > 1;
}

interface Conversation {
  key: string;
  messages: Message[];
  rows: NotificationOutboxRow[];
}

/**
 * Zulip's handle_missedmessage_emails: one email per conversation (a channel topic, or a
 * direct-message conversation) with the messages that notified the user, each with its sender,
 * a link to the conversation, a Reply-To address of the email gateway when one is configured,
 * and the unsubscribe link. Precondition: the rows are the user's, for messages still unread.
 */
export async function sendMissedMessageEmails(services: Services, mailer: Mailer, userId: number, rows: readonly NotificationOutboxRow[]): Promise<void> {
  const db = services.db.kysely;
  const owner = await db.selectFrom('users').select('realm_id').where('id', '=', userId).executeTakeFirst();
  if (!owner) return;
  const realm = await fetchRealmById(db, owner.realm_id);
  const user = realm && (await fetchUserById(db, realm.id, userId));
  if (!realm || !user || !user.is_active || realm.deactivated || !user.delivery_email) return;
  const messages = await fetchMessagesByIds(db, realm.id, rows.map((r) => r.message_id));
  const conversations = new Map<string, Conversation>();
  for (const m of messages) {
    const key = m.type === 'stream' ? `s:${m.stream_id}:${m.topic_lc}` : `d:${m.dm_key}`;
    const c = conversations.get(key) ?? { key, messages: [], rows: [] };
    c.messages.push(m);
    c.rows.push(rows.find((r) => r.message_id === m.id)!);
    conversations.set(key, c);
  }
  const peopleIds = new Set<number>();
  for (const m of messages) {
    peopleIds.add(m.sender_id);
    for (const id of (m.dm_key ?? '').split(',').filter(Boolean)) peopleIds.add(Number(id));
  }
  const people = new Map((await fetchUsersByIds(db, realm.id, [...peopleIds])).map((u) => [u.id, u]));
  const streams = new Map((await fetchStreamsByIds(db, realm.id, [...new Set(messages.map((m) => m.stream_id).filter((id): id is number => id !== null))])).map((s) => [s.id, s]));
  const base = realmUrl(services.config, realm);
  const settings = userSettings(user);
  const showContent = settings.message_content_in_email_notifications && realmSettings(realm).message_content_allowed_in_email_notifications;
  const realmNameInSubject = await includeRealmNameInSubject(db, user, settings.realm_name_in_email_notifications_policy);
  const unsubscribe = await unsubscribeUrl(services, realm, user.id);
  const realmView = { name: realm.name, url: base, iconUrl: realmIconUrl(services.config, realm) };

  const groups = await loadGroupMembership(db, realm.id);

  for (const c of conversations.values()) {
    const first = c.messages[0]!;
    const last = c.messages[c.messages.length - 1]!;
    const channel = first.stream_id === null ? '' : (streams.get(first.stream_id)?.name ?? '');
    const resolved = first.topic.startsWith(RESOLVED_TOPIC_PREFIX);
    const topic = resolved ? first.topic.slice(RESOLVED_TOPIC_PREFIX.length) : first.topic;
    // Zulip's missed_message.subject.txt; a resolved topic keeps its thread in mail readers.
    let subject: string;
    let narrowUrl: string;
    let header: string | null;
    if (first.type === 'stream') {
      subject = `${resolved ? '[resolved] ' : ''}#${channel} > ${topic}`;
      narrowUrl = `${base}/#narrow/channel/${first.stream_id}-${encodeHashComponent(channel.replace(/ /g, '-'))}/topic/${encodeHashComponent(first.topic)}/near/${last.id}`;
      header = `#${channel} > ${first.topic}`;
    } else {
      const participants = (first.dm_key ?? '').split(',').filter(Boolean).map(Number);
      const others = participants.filter((id) => id !== user.id);
      const names = others.map((id) => people.get(id)?.full_name ?? '');
      subject = others.length > 1 ? `Group DMs with ${groupDisplayName(names)}` : `DMs with ${people.get(last.sender_id)?.full_name ?? names[0] ?? ''}`;
      narrowUrl = `${base}/#narrow/dm/${others.join(',')}-${others.length > 1 ? 'group' : 'dm'}/near/${last.id}`;
      header = others.length > 1 ? subject : null;
    }
    if (!showContent) subject = 'New messages';
    if (realmNameInSubject) subject = `${subject} [${realm.name}]`;
    const senders = [...new Set(c.messages.map((m) => m.sender_id))].map((id) => people.get(id)).filter((u): u is User => !!u);
    const intro = showContent
      ? `${senders.map((u) => u.full_name).join(', ')} sent you ${c.messages.length === 1 ? 'a message' : `${c.messages.length} messages`}:`
      : `You have ${c.messages.length === 1 ? 'a new message' : `${c.messages.length} new messages`} from ${senders.map((u) => u.full_name).join(', ')}.`;
    const replyTo = showContent ? await doCreateMissedMessageAddress(services, user, last) : services.config.emailFrom;
    const data = {
      subject,
      realm: realmView,
      intro,
      showContent,
      replyToGateway: showContent && !!services.config.emailGateway.domain,
      narrowUrl,
      settingsUrl: `${base}/#settings/notifications`,
      unsubscribeUrl: unsubscribe,
      reason: reasonText(new Set(c.rows.map((r) => r.trigger)), mentionedUserGroup(c.messages.filter((m) => c.rows.find((r) => r.message_id === m.id)?.trigger === 'mentioned'), user.id, groups)?.name ?? null, channel, topic),
      groups: [
        {
          header,
          narrowUrl,
          messages: c.messages.map((m, i) => {
            const sender = people.get(m.sender_id);
            return {
              // Consecutive messages of one sender are shown under one name, as Zulip does.
              showSender: i === 0 || c.messages[i - 1]!.sender_id !== m.sender_id,
              senderName: sender?.full_name ?? '',
              avatarUrl: sender ? avatarUrl(base, sender) : '',
              html: absoluteLinks(m.rendered_content, base),
              text: m.content,
            };
          }),
        },
      ],
    };
    await mailer.send({
      to: user.delivery_email,
      subject,
      text: eta.render('./missed_message.txt', data).replace(/\n{3,}/g, '\n\n').trim() + '\n',
      html: eta.render('./missed_message.html', data),
      replyTo,
      headers: { 'List-Unsubscribe': `<${unsubscribe}>` },
      // Stable per batch, so a copy sent again after a crash is recognisable as the same email.
      messageId: `<missed-${user.id}-${c.rows[0]!.id}@${new URL(base).hostname}>`,
    });
  }
}
