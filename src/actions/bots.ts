import { adminRequired, badRequest, ownerRequired } from '../errors.js';
import { now, transaction, type Tx } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { fetchUserById, fetchActiveUserRoles, insertAuditLog, updateUserRow, emailInUse } from '../db/repos/users.js';
import { fetchBotServices, insertBotService, updateBotServices } from '../db/repos/bots.js';
import { fetchStreamsByIds } from '../db/repos/streams.js';
import { generateApiKey } from '../lib/secrets.js';
import { BOT_EMBEDDED, BOT_GENERIC, BOT_INCOMING_WEBHOOK, BOT_OUTGOING_WEBHOOK, ROLE_MEMBER, ROLE_OWNER, isAdmin } from '../lib/roles.js';
import { REALM_GROUP_SETTING_CONFIG, realmSettings } from '../lib/realm_settings.js';
import { loadGroupMembership, userHasGroupPermission } from '../lib/group_settings.js';
import { canAdminUser } from '../lib/access/users.js';
import { accessStreamByName, ChannelCaller } from '../lib/access/streams.js';
import { formatBot, formatBotService } from '../lib/format/bots.js';
import { realmUrl } from '../lib/urls.js';
import { checkFullName, doCreateUser, doUpdateUser, isValidEmailAddress, type AfterCommit, type UserUpdate } from './users.js';
import type { ActionServices } from '../services.js';

/** Zulip's Service interface types. */
export const INTERFACE_GENERIC = 1;
export const INTERFACE_SLACK = 2;
const INTERFACE_TYPES = [INTERFACE_GENERIC, INTERFACE_SLACK];

/** The domain of bots' email addresses (register's realm_bot_domain). */
export function botDomain(services: ActionServices, realm: Realm): string {
  return new URL(realmUrl(services.config, realm)).hostname;
}

/** Zulip's require_member_or_admin, which every /bots endpoint has. */
export function requireMemberOrAdmin(user: User): void {
  if (user.role > ROLE_MEMBER) throw badRequest('Not allowed for guest users');
  if (user.is_bot) throw badRequest('This endpoint does not accept bot requests.');
}

/**
 * Zulip's access_bot_by_id: a bot of the caller's organization that the caller administers
 * (its owner, or an administrator); a bot with special permissions needs an owner.
 */
export async function accessBotById(db: Tx, realm: Realm, caller: User, botId: number): Promise<User> {
  const target = Number.isSafeInteger(botId) ? await fetchUserById(db, realm.id, botId) : undefined;
  if (!target || !target.is_bot || target.is_system_bot) throw badRequest('No such bot');
  if (!canAdminUser(caller, target)) throw badRequest('Insufficient permission');
  if (target.can_create_users && caller.role !== ROLE_OWNER) throw ownerRequired();
  return target;
}

/** Zulip's check_bot_name_available for a new bot or a rename. */
async function checkBotNameAvailable(db: Tx, realm: Realm, fullName: string): Promise<void> {
  const taken = await db
    .selectFrom('users')
    .select('id')
    .where('realm_id', '=', realm.id)
    .where('full_name', '=', fullName.trim())
    .where('is_active', '=', 1)
    .executeTakeFirst();
  if (taken) throw badRequest('Name is already in use!');
}

/** Zulip's check_bot_creation_policy: can_create_bots_group, or for incoming webhooks can_create_write_only_bots_group. */
async function checkBotCreationPolicy(db: Tx, realm: Realm, caller: User, botType: number): Promise<void> {
  const m = await loadGroupMembership(db, realm.id);
  const s = realmSettings(realm);
  if (userHasGroupPermission(m, s.can_create_bots_group, caller, REALM_GROUP_SETTING_CONFIG.can_create_bots_group)) return;
  if (
    botType === BOT_INCOMING_WEBHOOK &&
    userHasGroupPermission(m, s.can_create_write_only_bots_group, caller, REALM_GROUP_SETTING_CONFIG.can_create_write_only_bots_group)
  ) {
    return;
  }
  throw badRequest('Insufficient permission');
}

function checkInterfaceType(interfaceType: number): void {
  if (!INTERFACE_TYPES.includes(interfaceType)) throw badRequest('Invalid interface type');
}

/** A default channel named by the caller (Zulip's access_stream_by_name), or null for none. */
async function defaultStreamId(db: Tx, realm: Realm, caller: User, name: string | undefined | null): Promise<number | null | undefined> {
  if (name === undefined || name === null) return undefined;
  if (name === '') return null;
  const { stream } = await accessStreamByName(new ChannelCaller(db, realm, caller), name);
  return stream.id;
}

export interface CreateBotInput {
  fullName: string;
  shortName: string;
  botType: number;
  payloadUrl: string;
  serviceName?: string;
  interfaceType: number;
  defaultSendingStream?: string;
  defaultEventsRegisterStream?: string;
  defaultAllPublicStreams?: boolean;
}

export interface CheckedBot {
  email: string;
  fullName: string;
  botType: number;
  serviceName: string | null;
  payloadUrl: string;
  interfaceType: number;
  sendingStreamId: number | null;
  eventsRegisterStreamId: number | null;
  allPublicStreams: boolean;
}

/** POST /bots (Zulip's add_bot_backend), its checks in Zulip's order. */
export async function checkCreateBot(services: ActionServices, realm: Realm, caller: User, input: CreateBotInput): Promise<CheckedBot> {
  const db = services.db.kysely;
  const shortName = input.shortName.trim();
  if (shortName === '') throw badRequest('Bad name or username');
  const serviceName = input.botType !== BOT_INCOMING_WEBHOOK ? input.serviceName || shortName : (input.serviceName ?? null);
  const fullName = await checkFullName(db, realm, input.fullName);
  const email = `${shortName}-bot@${botDomain(services, realm)}`;
  if (!isValidEmailAddress(email)) throw badRequest('Bad name or username');
  // Zulip's EMBEDDED_BOTS_ENABLED, off by default: embedded bots run inside Zulip's Python server.
  if (input.botType === BOT_EMBEDDED) throw badRequest('Embedded bots are not enabled.');
  if (await emailInUse(db, realm.id, email)) throw badRequest('Username already in use');
  await checkBotNameAvailable(db, realm, fullName);
  await checkBotCreationPolicy(db, realm, caller, input.botType);
  if (![BOT_GENERIC, BOT_INCOMING_WEBHOOK, BOT_OUTGOING_WEBHOOK].includes(input.botType)) throw badRequest('Invalid bot type');
  checkInterfaceType(input.interfaceType);
  const sendingStreamId = (await defaultStreamId(db, realm, caller, input.defaultSendingStream)) ?? null;
  const eventsRegisterStreamId = (await defaultStreamId(db, realm, caller, input.defaultEventsRegisterStream)) ?? null;
  return {
    email,
    fullName,
    botType: input.botType,
    serviceName,
    payloadUrl: input.payloadUrl,
    interfaceType: input.interfaceType,
    sendingStreamId,
    eventsRegisterStreamId,
    allPublicStreams: input.defaultAllPublicStreams ?? false,
  };
}

/**
 * Zulip's bot_owner_user_ids: who gets realm_bot events about a bot. A bot whose default
 * channels are private is announced to its owner only, otherwise also to administrators.
 */
async function botEventRecipients(tx: Tx, realm: Realm, bot: User): Promise<number[]> {
  const streamIds = [bot.default_sending_stream_id, bot.default_events_register_stream_id].filter((id): id is number => id !== null);
  const isPrivate = (await fetchStreamsByIds(tx, realm.id, streamIds)).some((s) => s.invite_only);
  const ids = new Set<number>();
  if (!isPrivate) for (const u of await fetchActiveUserRoles(tx, realm.id)) if (isAdmin(u)) ids.add(u.id);
  if (bot.bot_owner_id !== null) ids.add(bot.bot_owner_id);
  return [...ids].sort((a, b) => a - b);
}

/** realm_bot add's `bot` (Zulip's created_bot_event). */
export async function botDict(tx: Tx, realm: Realm, bot: User): Promise<Record<string, unknown>> {
  const streamIds = [bot.default_sending_stream_id, bot.default_events_register_stream_id].filter((id): id is number => id !== null);
  const names = new Map((await fetchStreamsByIds(tx, realm.id, streamIds)).map((s) => [s.id, s.name]));
  return formatBot(bot, names, await fetchBotServices(tx, [bot.id]));
}

async function notifyCreatedBot(tx: Tx, services: ActionServices, afterCommit: AfterCommit, realm: Realm, bot: User, recipients?: number[]): Promise<void> {
  const event = { type: 'realm_bot', op: 'add', bot: await botDict(tx, realm, bot) };
  const to = recipients ?? (await botEventRecipients(tx, realm, bot));
  afterCommit(() => services.events.send(realm.id, event, to));
}

/** Creates the bot account, its Service row (outgoing webhooks) and announces it (realm_user, then realm_bot add). */
export async function doCreateBot(services: ActionServices, realm: Realm, owner: User, bot: CheckedBot): Promise<User> {
  return doCreateUser(services, realm, {
    email: bot.email,
    fullName: bot.fullName,
    isBot: true,
    botType: bot.botType,
    botOwnerId: owner.id,
    actingUser: owner,
    botDefaults: { sendingStreamId: bot.sendingStreamId, eventsRegisterStreamId: bot.eventsRegisterStreamId, allPublicStreams: bot.allPublicStreams },
    inTransaction: async (tx, afterCommit, user) => {
      if (bot.botType === BOT_OUTGOING_WEBHOOK) {
        await insertBotService(tx, {
          realm_id: realm.id,
          user_id: user.id,
          name: bot.serviceName ?? '',
          base_url: bot.payloadUrl,
          token: generateApiKey(),
          interface: bot.interfaceType,
        });
      }
      await notifyCreatedBot(tx, services, afterCommit, realm, user);
    },
  });
}

export interface BotUpdateInput {
  fullName?: string;
  role?: number;
  botOwnerId?: number;
  serviceInterface: number;
  servicePayloadUrl?: string;
  defaultSendingStream?: string;
  defaultEventsRegisterStream?: string;
  defaultAllPublicStreams?: boolean;
}

export interface CheckedBotUpdate {
  user: UserUpdate;
  owner?: User;
  service?: { base_url: string; interface: number };
  sendingStreamId?: number | null;
  eventsRegisterStreamId?: number | null;
  allPublicStreams?: boolean;
}

/** PATCH /bots/{bot_id} (Zulip's patch_bot_backend), its checks in Zulip's order. */
export async function checkUpdateBot(services: ActionServices, realm: Realm, caller: User, bot: User, input: BotUpdateInput): Promise<CheckedBotUpdate> {
  const db = services.db.kysely;
  const out: CheckedBotUpdate = { user: {} };
  if (input.fullName !== undefined) {
    const name = await checkFullName(db, realm, input.fullName, bot.id);
    if (name !== bot.full_name) {
      await checkBotNameAvailable(db, realm, name);
      out.user.fullName = name;
    }
  }
  if (input.role !== undefined && input.role !== bot.role) {
    if ((input.role === ROLE_OWNER || bot.role === ROLE_OWNER) && caller.role !== ROLE_OWNER) throw ownerRequired();
    if (!isAdmin(caller)) throw adminRequired();
    out.user.role = input.role;
  }
  if (input.botOwnerId !== undefined) {
    const owner = Number.isSafeInteger(input.botOwnerId) ? await fetchUserById(db, realm.id, input.botOwnerId) : undefined;
    if (!owner || owner.is_system_bot) throw badRequest('Failed to change owner, no such user');
    if (!owner.is_active) throw badRequest('Failed to change owner, user is deactivated');
    if (owner.is_bot) throw badRequest("Failed to change owner, bots can't own other bots");
    if (owner.id !== bot.bot_owner_id) out.owner = owner;
  }
  const sending = await defaultStreamId(db, realm, caller, input.defaultSendingStream);
  if (sending !== undefined) out.sendingStreamId = sending;
  const events = await defaultStreamId(db, realm, caller, input.defaultEventsRegisterStream);
  if (events !== undefined) out.eventsRegisterStreamId = events;
  if (input.defaultAllPublicStreams !== undefined) out.allPublicStreams = input.defaultAllPublicStreams;
  if (input.servicePayloadUrl !== undefined) {
    checkInterfaceType(input.serviceInterface);
    out.service = { base_url: input.servicePayloadUrl, interface: input.serviceInterface };
  }
  return out;
}

/**
 * Applies a checked bot update with Zulip's events: realm_user updates for the name, role and
 * owner (the owner change also realm_bot delete/add for owners who are not administrators),
 * realm_bot update for the default channels and the outgoing-webhook service.
 */
export async function doUpdateBot(services: ActionServices, realm: Realm, bot: User, update: CheckedBotUpdate, actingUser: User): Promise<User> {
  await doUpdateUser(services, realm, bot, update.user, actingUser);
  await transaction(services.db, async (tx, afterCommit) => {
    let current = (await fetchUserById(tx, realm.id, bot.id))!;
    const sendUpdate = async (fields: Record<string, unknown>) => {
      const to = await botEventRecipients(tx, realm, current);
      afterCommit(() => services.events.send(realm.id, { type: 'realm_bot', op: 'update', bot: { user_id: bot.id, ...fields } }, to));
    };
    if (update.owner) {
      const previousOwnerId = current.bot_owner_id;
      await updateUserRow(tx, bot.id, { bot_owner_id: update.owner.id });
      await insertAuditLog(tx, {
        realm_id: realm.id,
        acting_user_id: actingUser.id,
        modified_user_id: bot.id,
        event_type: 'bot_owner_changed',
        event_time: now(),
        extra_data: JSON.stringify({ bot_owner_user_id: previousOwnerId }),
      });
      current = { ...current, bot_owner_id: update.owner.id };
      const previous = previousOwnerId === null ? undefined : await fetchUserById(tx, realm.id, previousOwnerId);
      if (previous && !isAdmin(previous)) {
        afterCommit(() => services.events.send(realm.id, { type: 'realm_bot', op: 'delete', bot: { user_id: bot.id } }, [previous.id]));
      }
      if (!isAdmin(update.owner)) await notifyCreatedBot(tx, services, afterCommit, realm, current, [update.owner.id]);
      const everyone = (await fetchActiveUserRoles(tx, realm.id)).map((u) => u.id);
      afterCommit(() => services.events.send(realm.id, { type: 'realm_user', op: 'update', person: { user_id: bot.id, bot_owner_id: update.owner!.id } }, everyone));
    }
    const names = async (id: number | null) => (id === null ? null : ((await fetchStreamsByIds(tx, realm.id, [id]))[0]?.name ?? null));
    if (update.sendingStreamId !== undefined) {
      await updateUserRow(tx, bot.id, { default_sending_stream_id: update.sendingStreamId });
      current = { ...current, default_sending_stream_id: update.sendingStreamId };
      await sendUpdate({ default_sending_stream: await names(update.sendingStreamId) });
    }
    if (update.eventsRegisterStreamId !== undefined) {
      await updateUserRow(tx, bot.id, { default_events_register_stream_id: update.eventsRegisterStreamId });
      current = { ...current, default_events_register_stream_id: update.eventsRegisterStreamId };
      await sendUpdate({ default_events_register_stream: await names(update.eventsRegisterStreamId) });
    }
    if (update.allPublicStreams !== undefined) {
      await updateUserRow(tx, bot.id, { default_all_public_streams: update.allPublicStreams ? 1 : 0 });
      current = { ...current, default_all_public_streams: update.allPublicStreams ? 1 : 0 };
      await sendUpdate({ default_all_public_streams: update.allPublicStreams });
    }
    if (update.service && current.bot_type === BOT_OUTGOING_WEBHOOK) {
      await updateBotServices(tx, bot.id, update.service);
      await sendUpdate({ services: (await fetchBotServices(tx, [bot.id])).map(formatBotService) });
    }
  });
  return (await fetchUserById(services.db.kysely, realm.id, bot.id))!;
}
