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
