import { INVALID_LINK_TEXT, LINK_TEXT_ESCAPES, encodeChannel, encodeHashComponent, silentMention } from './reminders.js';
import { RESOLVED_TOPIC_PREFIX } from './narrow/terms.js';

/**
 * The Notification Bot's breadcrumbs for moved messages and resolved topics, in the words of
 * Zulip's zerver/actions/message_edit.py (send_message_moved_breadcrumbs,
 * maybe_send_resolve_topic_notifications), in English, the default organization language.
 */

/** Zulip's RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS: undoing a resolve this soon deletes its notice instead. */
export const RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS = 60;

type Person = { id: number; full_name: string };
type Channel = { id: number; name: string };

/** Zulip's topic_resolved / topic_unresolved of build_message_edit_request; `requested` is the stripped topic before truncation. */
export function resolveToggle(from: string, to: string, requested: string): 'resolved' | 'unresolved' | null {
  if (to.startsWith(RESOLVED_TOPIC_PREFIX) && !from.startsWith(RESOLVED_TOPIC_PREFIX) && requested.slice(RESOLVED_TOPIC_PREFIX.length) === from) {
    return 'resolved';
  }
  // Python's str.lstrip takes a set of characters: every leading "✔" and space goes.
  if (from.startsWith(RESOLVED_TOPIC_PREFIX) && !to.startsWith(RESOLVED_TOPIC_PREFIX) && from.replace(/^[\u2714 ]+/u, '') === to) return 'unresolved';
  return null;
}

/** Zulip's get_stream_topic_link_syntax: `#**channel>topic**`, or a plain link where that syntax would break. */
export function topicLinkSyntax(channel: Channel, topic: string): string {
  const breaks = (s: string) => new RegExp(INVALID_LINK_TEXT.source).test(s);
  if (!breaks(topic) && !breaks(channel.name)) return `#**${channel.name}>${topic}**`;
  const escape = (t: string) => t.replace(INVALID_LINK_TEXT, (c) => LINK_TEXT_ESCAPES[c] ?? c);
  const link = `#narrow/channel/${encodeChannel(channel.id, channel.name)}/topic/${encodeHashComponent(topic)}`;
  return `[#${escape(channel.name)} > ${escape(topic === '' ? 'general chat' : topic)}](${link})`;
}

/** "@_**Name|id** has marked this topic as resolved." (or unresolved). */
export function resolveNotificationContent(user: Person, toggle: 'resolved' | 'unresolved'): string {
  return `${silentMention(user)} has marked this topic as ${toggle}.`;
}

/** Whether a message is one of the Notification Bot's resolve notices (Zulip's RESOLVE_TOPIC_NOTIFICATION type). */
export function isResolveNotificationContent(content: string): boolean {
  return /^@_\*\*[^\n]*\|\d+\*\* has marked this topic as (un)?resolved\.$/.test(content);
}

export interface MoveSummary {
  user: Person;
  from: { channel: Channel; topic: string };
  to: { channel: Channel; topic: string };
  /** The message the request named (linked when it moved alone). */
  messageId: number;
  count: number;
  /** No message of the old topic the mover can read is left there. */
  movedAll: boolean;
  /** The new topic already had messages the mover can read. */
  preexisting: boolean;
  realmUrl: string;
}

/** The notice posted in the old topic. */
export function oldThreadNotificationContent(s: MoveSummary): string {
  const where = topicLinkSyntax(s.to.channel, s.to.topic);
  const user = silentMention(s.user);
  if (s.movedAll) return `This topic was moved to ${where} by ${user}.`;
  if (s.count === 1) return `A message was moved from this topic to ${where} by ${user}.`;
  return `${s.count} messages were moved from this topic to ${where} by ${user}.`;
}

/** The notice posted in the new topic. */
export function newThreadNotificationContent(s: MoveSummary): string {
  const where = topicLinkSyntax(s.from.channel, s.from.topic);
  const user = silentMention(s.user);
  if (!s.preexisting && s.movedAll) return `This topic was moved here from ${where} by ${user}.`;
  if (s.count === 1) {
    const url = `${s.realmUrl}/#narrow/channel/${encodeChannel(s.to.channel.id, s.to.channel.name)}/topic/${encodeHashComponent(s.to.topic)}/near/${s.messageId}`;
    return `[A message](${url}) was moved here from ${where} by ${user}.`;
  }
  return `${s.count} messages were moved here from ${where} by ${user}.`;
}
