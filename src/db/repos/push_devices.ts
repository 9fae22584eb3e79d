import type { Selectable } from 'kysely';
import type { Tx } from '../index.js';
import type { PushDeviceTable } from '../tables.js';

export type PushDeviceRow = Selectable<PushDeviceTable>;

/** Registers a device token; registering the same token again is a no-op, as in Zulip. */
export async function insertPushDevice(
  db: Tx,
  row: { user_id: number; kind: string; token: string; app_id: string | null; date_created: number },
): Promise<void> {
  await db
    .insertInto('push_devices')
    .values(row)
    .onConflict((oc) => oc.columns(['user_id', 'kind', 'token']).doNothing())
    .execute();
}

export async function fetchPushDevice(db: Tx, userId: number, kind: string, token: string): Promise<PushDeviceRow | undefined> {
  return db
    .selectFrom('push_devices')
    .selectAll()
    .where('user_id', '=', userId)
    .where('kind', '=', kind)
    .where('token', '=', token)
    .executeTakeFirst();
}

export async function deletePushDevice(db: Tx, id: number): Promise<void> {
  await db.deleteFrom('push_devices').where('id', '=', id).execute();
}

export async function fetchPushDevicesForUsers(db: Tx, userIds: readonly number[]): Promise<PushDeviceRow[]> {
  if (userIds.length === 0) return [];
  return db.selectFrom('push_devices').selectAll().where('user_id', 'in', [...userIds]).orderBy('id').execute();
}

/** Forgets tokens a push service reported invalid, for every account that registered them (as Zulip does). */
export async function deletePushDevicesByToken(db: Tx, tokens: readonly { kind: string; token: string }[]): Promise<void> {
  for (const kind of new Set(tokens.map((t) => t.kind))) {
    await db.deleteFrom('push_devices').where('kind', '=', kind).where('token', 'in', tokens.filter((t) => t.kind === kind).map((t) => t.token)).execute();
  }
}
