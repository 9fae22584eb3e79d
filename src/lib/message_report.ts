import type { Message } from '../db/tables.js';
import { MAX_MESSAGE_LENGTH } from '../version.js';
import { REPORT_MESSAGE_REASONS } from './format/settings.js';
import { INVALID_LINK_TEXT, LINK_TEXT_ESCAPES, encodeChannel, encodeHashComponent, silentMention, unusedFence } from './reminders.js';
import { truncateCodePoints } from './topics.js';

/** Zulip's Realm.MAX_REPORT_MESSAGE_EXPLANATION_LENGTH. */
export const MAX_REPORT_MESSAGE_EXPLANATION_LENGTH = 1000;
/** Room left for the quoted message once the notes and the template fit (Zulip's MAX_REPORT_MESSAGE_SNIPPET_LENGTH). */
const MAX_REPORT_MESSAGE_SNIPPET_LENGTH = MAX_MESSAGE_LENGTH - MAX_REPORT_MESSAGE_EXPLANATION_LENGTH - 500;

type Person = { id: number; full_name: string };

export interface ReportSubject {
  reporter: Person;
  message: Pick<Message, 'id' | 'type' | 'content' | 'topic' | 'dm_key' | 'date_sent'>;
  sender: Person;
  /** The channel of a channel message. */
  stream?: { id: number; name: string };
  /** A direct message's participants, sender included. */
  participants: Person[];
  realmUrl: string;
}

/** Zulip's datetime_to_global_time: a `<time:...>` that every reader sees in their own time zone. */
function globalTime(unixSeconds: number): string {
  return `<time:${new Date(unixSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00')}>`;
}

/** Zulip's get_message_link_syntax: `#**channel>topic@id**`, or a plain link where that syntax would break. */
function messageLinkSyntax(streamId: number, streamName: string, topic: string, messageId: number): string {
  const breaks = (s: string) => new RegExp(INVALID_LINK_TEXT.source).test(s);
  if (!breaks(topic) && !breaks(streamName)) return `#**${streamName}>${topic}@${messageId}**`;
  const escape = (t: string) => t.replace(INVALID_LINK_TEXT, (c) => LINK_TEXT_ESCAPES[c] ?? c);
  const link = `#narrow/channel/${encodeChannel(streamId, streamName)}/topic/${encodeHashComponent(topic)}/near/${messageId}`;
  const topicText = topic === '' ? 'general chat' : topic;
  return `[#${escape(streamName)} > ${escape(topicText)} @ 💬](${link})`;
}

/**
 * The Notification Bot's report (Zulip's send_message_report): who reported whose message,
 * when and where, the reason and notes quoted, and the message itself behind a spoiler.
 */
export function messageReportContent(s: ReportSubject, reportType: string, description: string): string {
  const { message } = s;
  const reporter = silentMention(s.reporter);
  const sender = silentMention(s.sender);
  const when = globalTime(message.date_sent);
  let header: string;
  let original: string;
  if (message.type === 'stream' && s.stream) {
    header = `${reporter} reported a message sent by ${sender} at ${when}.`;
    original = `Original message at ${messageLinkSyntax(s.stream.id, s.stream.name, message.topic, message.id)}`;
  } else {
    const others = s.participants.filter((u) => u.id !== s.sender.id);
    if (s.participants.length <= 2) {
      if (s.sender.id !== s.reporter.id) {
        header = `${reporter} reported a direct message sent by ${sender} at ${when}.`;
      } else {
        const to = others.length ? silentMention(others[0]!) : reporter;
        header = `${reporter} reported a direct message sent by ${sender} to ${to} at ${when}.`;
      }
    } else {
      const mentions = others.map(silentMention).sort();
      const last = mentions.pop()!;
      const rest = mentions.join(', ') + (mentions.length > 1 ? ',' : '');
      header = `${reporter} reported a direct message sent by ${sender} to ${rest} and ${last} at ${when}.`;
    }
    const ids = s.participants.map((u) => u.id).sort((a, b) => a - b);
    const slug = ids.join(',') + (ids.length >= 3 ? '-group' : '');
    original = `[Original message](${s.realmUrl}/#narrow/dm/${slug}/near/${message.id})`;
  }
  const quoted = truncateCodePoints(message.content, MAX_REPORT_MESSAGE_SNIPPET_LENGTH, '\n[message truncated]');
  const fence = unusedFence(quoted);
  const reason = REPORT_MESSAGE_REASONS[reportType];
  return `${header}\n\`\`\`quote\n**${reason}**. ${description}\n\`\`\`\n\n${fence} spoiler ${original}\n${quoted}\n${fence}\n`;
}

/** The topic reports about a user go to (none in a channel that allows only the empty topic). */
export function messageReportTopic(sender: Person, emptyTopicOnly: boolean): string {
  return emptyTopicOnly ? '' : `${sender.full_name} moderation`;
}
