import type { Realm, User } from '../db/tables.js';
import type { ActionServices } from '../services.js';
import { missingParam } from '../errors.js';
import { fetchUserById } from '../db/repos/users.js';
import { claimBotOwnerReminder } from '../db/repos/bots.js';
import { now } from '../db/index.js';
import { fetchSystemBot } from '../lib/system_bots.js';
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

/** Zulip's UserProfile.BOT_OWNER_STREAM_ALERT_WAITPERIOD (one minute). */
const BOT_OWNER_ALERT_WAIT_SECONDS = 60;

/** Zulip's INVALID_JSON_MESSAGE (zerver/lib/webhooks/common.py). */
export function invalidJsonNotice(webhookName: string): string {
  return (
    `Hi there! It looks like you tried to set up the Zulip ${webhookName} integration,\n` +
    "but didn't correctly configure the webhook to send data in the JSON format\n" +
    'that this integration expects!'
  );
}

/** Zulip's MISSING_EVENT_HEADER_MESSAGE. */
export function missingEventHeaderNotice(botName: string, requestPath: string, header: string, integrationName: string, supportEmail: string): string {
  return (
    `Hi there!  Your bot ${botName} just sent an HTTP request to ${requestPath} that\n` +
    `is missing the HTTP ${header} header.  Because this header is how\n` +
    `${integrationName} indicates the event type, this usually indicates a configuration\n` +
    "issue, where you either entered the URL for a different integration, or are running\n" +
    "an older version of the third-party service that doesn't provide that header.\n" +
    `Contact ${supportEmail} if you need help debugging!`
  );
}

/**
 * Zulip's send_rate_limited_pm_notification_to_bot_owner: a direct message from Notification
 * Bot to the owner of the bot that made a bad request, at most once a minute per bot. Nothing
 * for accounts that are not bots with an owner.
 */
export async function doNotifyBotOwnerRateLimited(services: ActionServices, realm: Realm, bot: User, content: string): Promise<void> {
  if (!bot.is_bot || bot.bot_owner_id === null || realm.deactivated) return;
  const db = services.db.kysely;
  const owner = await fetchUserById(db, realm.id, bot.bot_owner_id);
  if (!owner || !owner.is_active) return;
  if (!(await claimBotOwnerReminder(db, bot.id, now(), BOT_OWNER_ALERT_WAIT_SECONDS))) return;
  const notificationBot = await fetchSystemBot(db, services.config, realm, 'notification');
  const prepared = await checkSendMessage(services, realm, notificationBot, { type: 'private', to: JSON.stringify([owner.id]), topic: undefined, content, client: 'Internal' });
  await doSendMessage(services, prepared);
}
