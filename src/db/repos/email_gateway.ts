import type { Selectable } from 'kysely';
import type { Tx } from '../index.js';
import type { ChannelEmailAddressTable, MissedMessageEmailAddressTable } from '../tables.js';

export type ChannelEmailAddressRow = Selectable<ChannelEmailAddressTable>;
export type MissedMessageEmailAddressRow = Selectable<MissedMessageEmailAddressTable>;

/** The address of a channel for this creator and sender, if one was made. */
export async function fetchChannelEmailAddressFor(db: Tx, channelId: number, creatorId: number, senderId: number): Promise<ChannelEmailAddressRow | undefined> {
  return db
    .selectFrom('channel_email_addresses')
    .selectAll()
    .where('channel_id', '=', channelId)
    .where('creator_id', '=', creatorId)
    .where('sender_id', '=', senderId)
    .executeTakeFirst();
}

/** Inserts the address unless a concurrent request made the same one first; returns the stored row. */
export async function insertChannelEmailAddress(
  db: Tx,
  row: { realm_id: number; channel_id: number; creator_id: number; sender_id: number; email_token: string; date_created: number },
): Promise<ChannelEmailAddressRow> {
  await db
    .insertInto('channel_email_addresses')
    .values(row)
    .onConflict((oc) => oc.columns(['channel_id', 'creator_id', 'sender_id']).doNothing())
    .execute();
  return (await fetchChannelEmailAddressFor(db, row.channel_id, row.creator_id, row.sender_id))!;
}

export async function fetchChannelEmailAddressByToken(db: Tx, token: string): Promise<ChannelEmailAddressRow | undefined> {
  return db.selectFrom('channel_email_addresses').selectAll().where('email_token', '=', token).executeTakeFirst();
}

export async function insertMissedMessageEmailAddress(
  db: Tx,
  row: { realm_id: number; message_id: number; user_id: number; email_token: string; timestamp: number },
): Promise<void> {
  await db.insertInto('missed_message_email_addresses').values(row).execute();
}

export async function fetchMissedMessageEmailAddressByToken(db: Tx, token: string): Promise<MissedMessageEmailAddressRow | undefined> {
  return db.selectFrom('missed_message_email_addresses').selectAll().where('email_token', '=', token).executeTakeFirst();
}

export async function incrementMissedMessageAddressUse(db: Tx, id: number): Promise<void> {
  await db
    .updateTable('missed_message_email_addresses')
    .set((eb) => ({ times_used: eb('times_used', '+', 1) }))
    .where('id', '=', id)
    .execute();
}
