import type { Selectable } from 'kysely';
import type { Tx } from '../index.js';
import type { ClientDeviceTable } from '../tables.js';

export type ClientDeviceRow = Selectable<ClientDeviceTable>;

export async function insertClientDevice(db: Tx, userId: number, dateCreated: number): Promise<ClientDeviceRow> {
  return db.insertInto('client_devices').values({ user_id: userId, date_created: dateCreated }).returningAll().executeTakeFirstOrThrow();
}

export async function fetchClientDevice(db: Tx, userId: number, id: number): Promise<ClientDeviceRow | undefined> {
  return db.selectFrom('client_devices').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
}

export async function fetchUserClientDevices(db: Tx, userId: number): Promise<ClientDeviceRow[]> {
  return db.selectFrom('client_devices').selectAll().where('user_id', '=', userId).orderBy('id').execute();
}

export async function deleteClientDevice(db: Tx, id: number): Promise<void> {
  await db.deleteFrom('client_devices').where('id', '=', id).execute();
}

export type ClientDevicePushUpdate = Partial<
  Pick<ClientDeviceRow, 'push_key' | 'push_key_id' | 'push_token_id' | 'pending_push_token_id' | 'push_token_kind' | 'push_token_last_updated_timestamp' | 'push_registration_error_code'>
>;

export async function updateClientDevicePush(db: Tx, id: number, fields: ClientDevicePushUpdate): Promise<void> {
  await db.updateTable('client_devices').set(fields).where('id', '=', id).execute();
}

/** Devices of these users that receive end-to-end encrypted notifications: a key and a registered token. */
export async function fetchE2eePushDevices(db: Tx, userIds: readonly number[]): Promise<ClientDeviceRow[]> {
  if (userIds.length === 0) return [];
  return db
    .selectFrom('client_devices')
    .selectAll()
    .where('user_id', 'in', [...userIds])
    .where('push_key', 'is not', null)
    .where('push_token_id', 'is not', null)
    .orderBy('id')
    .execute();
}
