import type { Tx } from '../index.js';
import type { BotServiceTable, User } from '../tables.js';
import type { Insertable, Selectable } from 'kysely';
import { cachedRead } from '../cache.js';

export type BotService = Selectable<BotServiceTable>;
const BOT_OUTGOING_WEBHOOK = 3;

/**
 * register's realm_bots (Zulip's get_owned_bot_dicts): every bot of the organization for an
 * administrator, else the bots the caller owns; deactivated ones included, system bots not.
 */
export async function fetchBotsFor(db: Tx, realmId: number, ownerId: number | null): Promise<User[]> {
  let q = db.selectFrom('users').selectAll().where('realm_id', '=', realmId).where('is_bot', '=', 1).where('is_system_bot', '=', 0);
  if (ownerId !== null) q = q.where('bot_owner_id', '=', ownerId);
  return q.orderBy('id').execute();
}


export async function fetchBotServices(db: Tx, userIds: readonly number[]): Promise<BotService[]> {
  if (userIds.length === 0) return [];
  return db.selectFrom('bot_services').selectAll().where('user_id', 'in', [...userIds]).orderBy('id').execute();
}

export async function insertBotService(db: Tx, row: Insertable<BotServiceTable>): Promise<void> {
  await db.insertInto('bot_services').values(row).execute();
}

export async function updateBotServices(db: Tx, userId: number, changes: { base_url: string; interface: number }): Promise<void> {
  await db.updateTable('bot_services').set(changes).where('user_id', '=', userId).execute();
}

async function fetchOutgoingWebhookBotIds(db: Tx, realmId: number): Promise<number[]> {
  const rows = await db
    .selectFrom('users')
    .select('id')
    .where('realm_id', '=', realmId)
    .where('is_bot', '=', 1)
    .where('is_active', '=', 1)
    .where('bot_type', '=', BOT_OUTGOING_WEBHOOK)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * The send path's question "does this message reach an outgoing-webhook bot?": the active such
 * bots of an organization, from the read cache, so messages that reach none cost no query.
 */
export const fetchOutgoingWebhookBotIdsCached = cachedRead('outgoing_webhook_bots', ['users'], (realmId: number) => String(realmId), fetchOutgoingWebhookBotIds);

/**
 * Records a notice to a bot's owner at `now` unless one was recorded after `now - waitSeconds`;
 * whether this call may send it. One statement, so concurrent requests send one notice.
 */
export async function claimBotOwnerReminder(db: Tx, botId: number, now: number, waitSeconds: number): Promise<boolean> {
  const r = await db
    .insertInto('bot_owner_reminders')
    .values({ bot_id: botId, last_reminder: now })
    .onConflict((oc) => oc.column('bot_id').doUpdateSet({ last_reminder: now }).where('bot_owner_reminders.last_reminder', '<', now - waitSeconds))
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
}
