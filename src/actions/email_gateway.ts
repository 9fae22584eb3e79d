import type { ParsedMail } from 'mailparser';
import { now } from '../db/index.js';
import type { Message, Realm, User } from '../db/tables.js';
import {
  fetchChannelEmailAddressByToken,
  fetchChannelEmailAddressFor,
  fetchMissedMessageEmailAddressByToken,
  incrementMissedMessageAddressUse,
  insertChannelEmailAddress,
  insertMissedMessageEmailAddress,
  type ChannelEmailAddressRow,
  type MissedMessageEmailAddressRow,
} from '../db/repos/email_gateway.js';
import { fetchMessagesByIds } from '../db/repos/messages.js';
import { fetchRealmById } from '../db/repos/realms.js';
import { fetchStreamById } from '../db/repos/streams.js';
import { fetchUserById } from '../db/repos/users.js';
import { badRequest, JsonableError } from '../errors.js';
import { accessStreamById, accessStreamForSend, ChannelCaller } from '../lib/access/streams.js';
import {
  decodeChannelAddress,
  encodeEmailAddress,
  gatewayLocalPart,
  generateChannelEmailToken,
  generateMissedMessageToken,
  isMissedMessageToken,
  type AddressOptions,
} from '../lib/email_gateway/addresses.js';
import { filterFooter, formatAddressList, htmlToMarkdown, isForwarded, stripFromSubject } from '../lib/email_gateway/body.js';
import { extractReplyFromPlain } from '../lib/email_gateway/quotations.js';
import { isAdmin } from '../lib/roles.js';
import { fetchSystemBot } from '../lib/system_bots.js';
import { removeUnprintable, truncateCodePoints, truncateTopic } from '../lib/topics.js';
import type { ActionServices, Services } from '../services.js';
import { MAX_MESSAGE_LENGTH } from '../version.js';
import { checkSendMessage, doSendMessage } from './messages.js';
import { doUploadFile } from './uploads.js';

/**
 * Mail the gateway will not post, with the SMTP reply it gets: 550 for an address or message
 * it refuses (Zulip's ZulipEmailForwardError and ZulipEmailForwardUserError), 451 for a limit
 * that passes (the realm's mirror rate limit).
 */
export class EmailGatewayError extends Error {
  constructor(
    message: string,
    readonly smtpCode: 550 | 451 = 550,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------
// Channel addresses: GET /streams/{stream_id}/email_address.

/** Zulip's access_bot_by_id: a bot of the realm that the caller administers (its owner, or an administrator). */
async function accessBotById(services: ActionServices, realm: Realm, caller: User, botId: number): Promise<User> {
  const bot = await fetchUserById(services.db.kysely, realm.id, botId);
  if (!bot || !bot.is_bot) throw badRequest('No such bot');
  if (!isAdmin(caller) && bot.bot_owner_id !== caller.id) throw badRequest('Insufficient permission');
  return bot;
}

/**
 * Zulip's get_stream_email_address: the channel's address for mail posted as `senderId` (the
 * Email Gateway bot by default, the caller, or a bot the caller administers), made on first
 * request with a token per channel, creator and sender, always with `show-sender`. Since feature
 * level 448 only when that sender (the caller, for Email Gateway) may post to the channel.
 */
export async function doGetChannelEmailAddress(services: ActionServices, realm: Realm, user: User, streamId: number, senderId: number | undefined): Promise<string> {
  const db = services.db.kysely;
  const caller = new ChannelCaller(db, realm, user);
  const { stream } = await accessStreamById(caller, streamId);
  const gatewayBot = await fetchSystemBot(db, services.config, realm, 'emailGateway');
  let sender: User;
  if (senderId === undefined || senderId === gatewayBot.id) sender = gatewayBot;
  else if (senderId === user.id) sender = user;
  else sender = await accessBotById(services, realm, user, senderId);
  // Checked as mail to the address will be (check_access_for_channel_email_address): a bot the
  // caller owns may have an address where the caller may not post.
  await accessStreamForSend(sender === gatewayBot || sender === user ? caller : new ChannelCaller(db, realm, sender), { id: stream.id });

  const existing = await fetchChannelEmailAddressFor(db, stream.id, user.id, sender.id);
  const row =
    existing ??
    (await insertChannelEmailAddress(db, {
      realm_id: realm.id,
      channel_id: stream.id,
      creator_id: user.id,
      sender_id: sender.id,
      email_token: generateChannelEmailToken(),
      date_created: now(),
    }));
  return encodeEmailAddress(services.config.emailGateway.domain, stream.name, row.email_token, true);
}

// ---------------------------------------------------------------------------------------------
// Missed-message reply addresses.

/**
 * Zulip's create_missed_message_address: a new `mm<token>@<gateway domain>` address through
 * which `user` replies by email into `message`'s conversation (for the notification email's
 * Reply-To). Without a gateway domain, the no-reply sender address, as Zulip answers
 * FromAddress.NOREPLY.
 */
export async function doCreateMissedMessageAddress(services: ActionServices, user: User, message: Pick<Message, 'id' | 'realm_id'>): Promise<string> {
  const domain = services.config.emailGateway.domain;
  if (!domain) return services.config.emailFrom;
  const token = generateMissedMessageToken();
  await insertMissedMessageEmailAddress(services.db.kysely, { realm_id: message.realm_id, message_id: message.id, user_id: user.id, email_token: token, timestamp: now() });
  return `${token}@${domain}`;
}

// ---------------------------------------------------------------------------------------------
// Receiving mail.

interface ChannelTarget {
  kind: 'channel';
  address: ChannelEmailAddressRow;
  options: AddressOptions;
  realm: Realm;
  sender: User;
}

interface MissedMessageTarget {
  kind: 'missed_message';
  address: MissedMessageEmailAddressRow;
  realm: Realm;
  user: User;
  message: Message;
}

export type EmailTarget = ChannelTarget | MissedMessageTarget;

async function resolveMissedMessageAddress(services: ActionServices, token: string): Promise<MissedMessageTarget> {
  const db = services.db.kysely;
  const invalid = (): EmailGatewayError => new EmailGatewayError('Zulip notification reply address is invalid.');
  const address = await fetchMissedMessageEmailAddressByToken(db, token);
  if (!address) throw invalid();
  if (address.timestamp + services.config.emailGateway.missedMessageAddressExpirySeconds < now()) {
    throw new EmailGatewayError('Missed message address expired.');
  }
  const realm = await fetchRealmById(db, address.realm_id);
  const user = realm && (await fetchUserById(db, realm.id, address.user_id));
  const [message] = realm ? await fetchMessagesByIds(db, realm.id, [address.message_id]) : [];
  if (!realm || realm.deactivated || !user || !message) throw invalid();
  return { kind: 'missed_message', address, realm, user, message };
}

/**
 * Zulip's check_access_for_channel_email_address: the sender must be able to post to the
 * channel, or, for the Email Gateway bot, the user who made the address.
 */
async function checkChannelAddressAccess(services: ActionServices, target: ChannelTarget): Promise<void> {
  const db = services.db.kysely;
  const { address, realm, sender } = target;
  const creator = address.creator_id === null ? undefined : await fetchUserById(db, realm.id, address.creator_id);
  const accessUser = sender.is_system_bot && creator ? creator : sender;
  if (!accessUser.is_active || !sender.is_active) throw new EmailGatewayError('The sender of this address is deactivated.');
  try {
    await accessStreamForSend(new ChannelCaller(db, realm, accessUser), { id: address.channel_id });
  } catch (e) {
    if (e instanceof JsonableError) throw new EmailGatewayError(e.message);
    throw e;
  }
}

/**
 * Zulip's validate_to_address, for RCPT TO: the address is a known channel address whose sender
 * (or creator) may post to the channel, within the realm's mirror rate limit, or a missed-message
 * reply address in force whose user may still post to its channel.
 */
export async function checkEmailRecipient(services: Services, recipient: string): Promise<EmailTarget> {
  const domain = services.config.emailGateway.domain;
  const local = domain ? gatewayLocalPart(domain, recipient) : null;
  if (local === null) throw new EmailGatewayError('Address not recognized by gateway.');
  const db = services.db.kysely;
  if (isMissedMessageToken(local)) {
    const target = await resolveMissedMessageAddress(services, local);
    if (target.message.type === 'stream') {
      try {
        await accessStreamForSend(new ChannelCaller(db, target.realm, target.user), { id: target.message.stream_id! });
      } catch (e) {
        if (e instanceof JsonableError) throw new EmailGatewayError(e.message);
        throw e;
      }
    }
    return target;
  }
  const { token, options } = decodeChannelAddress(local);
  const address = await fetchChannelEmailAddressByToken(db, token);
  const realm = address && !address.deactivated ? await fetchRealmById(db, address.realm_id) : undefined;
  const sender = realm && !realm.deactivated ? await fetchUserById(db, realm.id, address!.sender_id) : undefined;
  if (!address || !realm || !sender) throw new EmailGatewayError(`Bad stream token from email recipient ${recipient}`);
  try {
    await services.rateLimiter.checkEmailMirror(realm.id);
  } catch (e) {
    if (e instanceof JsonableError) throw new EmailGatewayError(e.message, 451);
    throw e;
  }
  const target: ChannelTarget = { kind: 'channel', address, options, realm, sender };
  await checkChannelAddressAccess(services, target);
  return target;
}

/** Zulip's extract_body: the plain-text or HTML part (as preferred), quotations trimmed unless asked. */
function extractBody(mail: ParsedMail, includeQuotes: boolean, preferText: boolean): string {
  const plain = typeof mail.text === 'string' ? (includeQuotes ? mail.text : extractReplyFromPlain(mail.text)) : null;
  const html = typeof mail.html === 'string' ? htmlToMarkdown(mail.html, includeQuotes) : null;
  if (plain === null && html === null) throw new EmailGatewayError('Unable to find plaintext or HTML message body');
  if (!plain && !html) throw new EmailGatewayError('Email has no nonempty body sections; ignoring.');
  return preferText ? plain || html! : html || plain!;
}

/** Zulip's extract_and_upload_attachments: every part with a file name, uploaded as the sender, one link a line. */
async function uploadAttachments(services: ActionServices, realm: Realm, sender: User, mail: ParsedMail): Promise<string> {
  const links: string[] = [];
  for (const part of mail.attachments) {
    if (!part.filename) continue;
    const { url, filename } = await doUploadFile(services, realm, sender, { field: 'file', filename: part.filename, mimeType: part.contentType, data: part.content });
    links.push(`[${filename.replace(/[[\]]/g, '')}](${url})`);
  }
  return links.join('\n');
}

/** Zulip's construct_zulip_body. */
async function constructBody(
  services: ActionServices,
  realm: Realm,
  sender: User,
  mail: ParsedMail,
  options: { showSender?: boolean; includeQuotes?: boolean; includeFooter?: boolean; preferText?: boolean },
): Promise<string> {
  let body = extractBody(mail, options.includeQuotes ?? false, options.preferText ?? true).replaceAll('\x00', '');
  if (!options.includeFooter) body = filterFooter(body);
  if (!body.endsWith('\n')) body += '\n';
  if (!body.trimEnd()) body = '(No email body)';
  const preamble = options.showSender ? `From: ${formatAddressList(mail.from?.value ?? [])}\n` : '';
  let postamble = await uploadAttachments(services, realm, sender, mail);
  if (postamble) postamble = `\n${postamble}`;
  body = truncateCodePoints(body, MAX_MESSAGE_LENGTH - [...preamble].length - [...postamble].length, '\n[message truncated]');
  return preamble + body + postamble;
}

/** Zulip's process_stream_message: the subject (less Re:/Fwd:) is the topic, the body the content. */
async function processChannelMail(services: ActionServices, target: ChannelTarget, mail: ParsedMail): Promise<number> {
  const db = services.db.kysely;
  const subjectHeader = mail.subject ?? '';
  // An empty subject is not "(no topic)": that could be refused where topics are required.
  const topic = removeUnprintable(stripFromSubject(subjectHeader)) || 'Email with no subject';
  const { options } = target;
  const content = await constructBody(services, target.realm, target.sender, mail, {
    showSender: options.show_sender,
    includeFooter: options.include_footer,
    // A forwarded message keeps its quotations unless the address says otherwise.
    includeQuotes: options.include_quotes ?? isForwarded(subjectHeader),
    preferText: options.prefer_text,
  });
  const creator = target.address.creator_id === null ? undefined : await fetchUserById(db, target.realm.id, target.address.creator_id);
  const p = await checkSendMessage(services, target.realm, target.sender, {
    type: 'stream',
    to: String(target.address.channel_id),
    topic: truncateTopic(topic),
    content,
    client: 'Internal',
    accessAs: target.sender.is_system_bot && creator ? creator : undefined,
  });
  return (await doSendMessage(services, p)).id;
}

/**
 * Zulip's process_missed_message: the reply goes to the message's channel and (current) topic,
 * to the sender of a one-to-one DM, or to every participant of a group DM. A reply the channel
 * refuses is reported to the user by Notification Bot, as Zulip's send_mm_reply_to_stream.
 */
async function processMissedMessageReply(services: ActionServices, target: MissedMessageTarget, mail: ParsedMail): Promise<number | null> {
  const db = services.db.kysely;
  const { realm, user, message } = target;
  await incrementMissedMessageAddressUse(db, target.address.id);
  if (!user.is_active) throw new EmailGatewayError('Sending user is not active. Ignoring this message notification email.');
  const content = await constructBody(services, realm, user, mail, {});
  if (message.type === 'stream') {
    try {
      const p = await checkSendMessage(services, realm, user, { type: 'stream', to: String(message.stream_id), topic: message.topic, content, client: 'Internal' });
      return (await doSendMessage(services, p)).id;
    } catch (e) {
      if (!(e instanceof JsonableError)) throw e;
      const stream = await fetchStreamById(db, realm.id, message.stream_id!);
      const bot = await fetchSystemBot(db, services.config, realm, 'notification');
      const notice = `Error sending message to channel ${stream?.name ?? ''} via message notification email reply:\n${e.message}`;
      await doSendMessage(services, await checkSendMessage(services, realm, bot, { type: 'private', to: JSON.stringify([user.id]), topic: undefined, content: notice, client: 'Internal' }));
      return null;
    }
  }
  const participants = (message.dm_key ?? String(message.sender_id)).split(',').map(Number);
  const to = participants.length <= 2 ? [message.sender_id] : participants;
  const p = await checkSendMessage(services, realm, user, { type: 'private', to: JSON.stringify(to), topic: undefined, content, client: 'Internal' });
  return (await doSendMessage(services, p)).id;
}

/**
 * Posts one received mail for one recipient the gateway accepted at RCPT TO (Zulip's
 * process_message). Returns the new message's ID (null when a refusal was reported to the user
 * instead); throws EmailGatewayError for mail it will not post.
 */
export async function doProcessEmail(services: ActionServices, target: EmailTarget, mail: ParsedMail): Promise<number | null> {
  try {
    return target.kind === 'channel' ? await processChannelMail(services, target, mail) : await processMissedMessageReply(services, target, mail);
  } catch (e) {
    if (e instanceof JsonableError) throw new EmailGatewayError(e.message);
    throw e;
  }
}
