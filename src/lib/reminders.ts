import type { Message } from '../db/tables.js';
import { MAX_MESSAGE_LENGTH } from '../version.js';
import { badRequest } from '../errors.js';
import { codePointLength, truncateCodePoints } from './topics.js';
import { MAX_REMINDER_NOTE_LENGTH } from './format/settings.js';

/** Zulip's normalize_note_text: trailing whitespace and leading newlines go; then the length limit. */
export function normalizeReminderNote(note: string): string {
  const body = note.trimEnd().replace(/^\n+/, '');
  if (codePointLength(body) > MAX_REMINDER_NOTE_LENGTH) throw badRequest(`Maximum reminder note length: ${MAX_REMINDER_NOTE_LENGTH} characters`);
  return body;
}

/** Zulip's encode_hash_component: percent-encoding (keeping `*`), then "%" -> "." and "." -> ".2E". */
export function encodeHashComponent(s: string): string {
  const quoted = encodeURIComponent(s).replace(/[!'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return quoted.replace(/[.%]/g, (c) => (c === '.' ? '.2E' : '.'));
}

/** Zulip's encode_channel: `<id>-<name with dashes, hash-encoded>`. */
export function encodeChannel(id: number, name: string): string {
  return `${id}-${encodeHashComponent(name.replace(/ /g, '-'))}`;
}

/** Zulip's silent_mention_syntax_for_user. */
export function silentMention(user: { id: number; full_name: string }): string {
  return `@_**${user.full_name}|${user.id}**`;
}

/** Zulip's get_unused_fence: a backtick fence longer than any fence inside `content`. */
export function unusedFence(content: string): string {
  let length = 3;
  for (const m of content.matchAll(/^ {0,3}(`{3,})/gm)) length = Math.max(length, m[1]!.length + 1);
  return '`'.repeat(length);
}

/** Characters that break `#**channel>topic**` syntax (Zulip's invalid_stream_topic_regex). */
export const INVALID_LINK_TEXT = /[`>*&[\]]|(\$\$)/g;
export const LINK_TEXT_ESCAPES: Record<string, string> = { '`': '&#96;', '>': '&gt;', '*': '&#42;', '&': '&amp;', $$: '&#36;&#36;', '[': '&#91;', ']': '&#93;' };

/** "A", "A and B", "A, B, and C", as Zulip lists the people a direct message went to. */
function listForDisplay(items: string[]): string {
  if (items.length <= 2) return items.join(' and ');
  return `${items.slice(0, -1).join(', ')}, and ${items[items.length - 1]}`;
}

export interface ReminderSubject {
  message: Pick<Message, 'id' | 'type' | 'content' | 'topic' | 'dm_key'>;
  sender: { id: number; full_name: string };
  /** The channel of a channel message. */
  stream?: { id: number; name: string };
  /** A direct message's participants other than its sender (empty for a message to oneself). */
  otherRecipients: { id: number; full_name: string }[];
  realmUrl: string;
  emptyTopicDisplayName: string;
}

/**
 * The Notification Bot's reminder text (Zulip's get_reminder_formatted_content): the request,
 * the note if any, who said it where, and the message quoted, truncated to fit a message.
 */
export function reminderContent(s: ReminderSubject, note: string | null): string {
  const { message } = s;
  const mention = silentMention(s.sender);
  const widget = message.content.startsWith('/poll') ? 'poll' : message.content.startsWith('/todo') ? 'todo list' : null;
  let content: string;
  let context: string;
  if (message.type === 'stream' && s.stream) {
    content = note ? `You requested a reminder for the following message. Note:\n > ${note}` : 'You requested a reminder for the following message.';
    const slug = encodeChannel(s.stream.id, s.stream.name);
    const topicPath = `channel/${slug}/topic/${encodeHashComponent(message.topic)}`;
    const escape = (t: string) => t.replace(INVALID_LINK_TEXT, (c) => LINK_TEXT_ESCAPES[c] ?? c);
    const topicName = message.topic === '' ? s.emptyTopicDisplayName : message.topic;
    const conversation = `[#${escape(s.stream.name)} > ${escape(topicName)}](#narrow/${topicPath}/with/${message.id})`;
    const url = `${s.realmUrl}/#narrow/${topicPath}/near/${message.id}`;
    context = widget ? `${mention} [sent](${url}) a ${widget} in ${conversation}.` : `${mention} [said](${url}) in ${conversation}:`;
  } else {
    content = note
      ? `You requested a reminder for the following direct message. Note:\n > ${note}`
      : 'You requested a reminder for the following direct message.';
    const ids = (message.dm_key ?? String(s.sender.id)).split(',').map(Number).sort((a, b) => a - b);
    const slug = ids.join(',') + (ids.length >= 3 ? '-group' : '');
    const recipients = s.otherRecipients.length ? s.otherRecipients : [s.sender];
    const url = `${s.realmUrl}/#narrow/dm/${slug}/near/${message.id}`;
    const to = listForDisplay(recipients.map(silentMention));
    context = widget ? `${mention} [sent](${url}) a ${widget} to ${to}.` : `${mention} [said](${url}) to ${to}:`;
  }
  // Widgets (polls, todo lists) are named rather than quoted.
  if (widget) return `${content}\n\n${context}`;
  content += `\n\n${context}\n`;
  const fence = unusedFence(message.content);
  const room = MAX_MESSAGE_LENGTH - codePointLength(`${content}${fence}quote\n\n${fence}`);
  return `${content}${fence}quote\n${truncateCodePoints(message.content, room, '\n[message truncated]')}\n${fence}`;
}
