import type { Realm, User } from '../db/tables.js';
import type { ActionServices } from '../services.js';
import { missingParam } from '../errors.js';
import { fetchUserById } from '../db/repos/users.js';
import { checkSendMessage, doSendMessage } from './messages.js';
import type { WebhookMessage } from '../integrations/types.js';

/** Python's fnmatch (case-sensitive, as on POSIX): `*`, `?`, `[seq]` and `[!seq]`. */
export function fnmatch(name: string, pattern: string): boolean {
  let re = '';
  const n = pattern.length;
  let i = 0;
  while (i < n) {
    const c = pattern[i++]!;
    if (c === '*') re += '[\\s\\S]*';
    else if (c === '?') re += '[\\s\\S]';
    else if (c === '[') {
      let j = i;
      if (pattern[j] === '!') j++;
      if (pattern[j] === ']') j++;
      while (j < n && pattern[j] !== ']') j++;
      if (j >= n) {
        re += '\\[';
      } else {
        let stuff = pattern.slice(i, j).replaceAll('\\', '\\\\');
        i = j + 1;
        if (stuff.startsWith('!')) stuff = '^' + stuff.slice(1);
        else if (stuff.startsWith('^') || stuff.startsWith('[')) stuff = '\\' + stuff;
        re += `[${stuff}]`;
      }
    } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${re}$`).test(name);
}

export interface WebhookTarget {
  /** The query's `stream`: a channel name, or its ID when all digits; absent means a DM to the bot's owner. */
  stream: string | undefined;
  /** The query's `topic`, which overrides the integration's. */
  topic: string | undefined;
  onlyEvents: string[] | undefined;
  excludeEvents: string[] | undefined;
}

/**
 * Zulip's check_send_webhook_message: drops an event the `only_events` / `exclude_events`
 * patterns filter out, then posts through the normal send path to the channel and topic the
 * URL names, or as a DM to the bot's owner when the URL names no channel. As in Zulip, a
 * channel that does not exist is not an error for the service calling us (the message is
 * dropped and the request succeeds).
 */
export async function checkSendWebhookMessage(
  services: ActionServices,
  realm: Realm,
  sender: User,
  client: string,
  message: WebhookMessage,
  target: WebhookTarget,
): Promise<void> {
  const event = message.eventType;
  if (event !== undefined) {
    if (target.onlyEvents && target.onlyEvents.every((p) => !fnmatch(event, p))) return;
    if (target.excludeEvents && target.excludeEvents.some((p) => fnmatch(event, p))) return;
  }
  if (target.stream === undefined) {
    // Zulip asserts that the sender is a bot with an owner; anyone else must name a channel.
    const owner = sender.bot_owner_id === null ? undefined : await fetchUserById(services.db.kysely, realm.id, sender.bot_owner_id);
    if (!owner) throw missingParam('stream');
    const prepared = await checkSendMessage(services, realm, sender, { type: 'private', to: JSON.stringify([owner.id]), topic: undefined, content: message.body, client });
    await doSendMessage(services, prepared);
    return;
  }
  const to = /^[0-9]+$/.test(target.stream) ? target.stream : JSON.stringify(target.stream);
  let prepared;
  try {
    prepared = await checkSendMessage(services, realm, sender, { type: 'stream', to, topic: target.topic ?? message.topic, content: message.body, client });
  } catch (e) {
    if (e instanceof Error && 'code' in e && e.code === 'STREAM_DOES_NOT_EXIST') return;
    throw e;
  }
  await doSendMessage(services, prepared);
}
