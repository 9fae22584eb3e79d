import type { Tx } from '../index.js';
import type { UserTotpDeviceTable } from '../tables.js';

export async function fetchTotpDevice(db: Tx, userId: number): Promise<UserTotpDeviceTable | undefined> {
  return db.selectFrom('user_totp_devices').selectAll().where('user_id', '=', userId).executeTakeFirst();
}

/** Replaces any device the user had (an unconfirmed enrolment started again, or a new phone). */
export async function replaceTotpDevice(db: Tx, row: UserTotpDeviceTable): Promise<void> {
  await db.deleteFrom('user_totp_devices').where('user_id', '=', row.user_id).execute();
  await db.insertInto('user_totp_devices').values(row).execute();
}

/**
 * Records a code's time step as used, only if it is later than the last one: false when another
 * request used this step (or a later one) first, so a code never works twice.
 */
export async function advanceTotpTimeStep(db: Tx, userId: number, timeStep: number, confirm: boolean): Promise<boolean> {
  const r = await db
    .updateTable('user_totp_devices')
    .set(confirm ? { last_time_step: timeStep, confirmed: 1 } : { last_time_step: timeStep })
    .where('user_id', '=', userId)
    .where('last_time_step', '<', timeStep)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function deleteTwoFactor(db: Tx, userId: number): Promise<void> {
  await db.deleteFrom('user_totp_devices').where('user_id', '=', userId).execute();
  await db.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
}

export async function replaceRecoveryCodes(db: Tx, userId: number, hashes: string[]): Promise<void> {
  await db.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
  if (hashes.length) await db.insertInto('user_recovery_codes').values(hashes.map((code_hash) => ({ user_id: userId, code_hash }))).execute();
}

export async function countRecoveryCodes(db: Tx, userId: number): Promise<number> {
  const r = await db.selectFrom('user_recovery_codes').select((eb) => eb.fn.countAll<string | number>().as('n')).where('user_id', '=', userId).executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Uses up a recovery code: true only for the one caller that deleted it. */
export async function takeRecoveryCode(db: Tx, userId: number, hash: string): Promise<boolean> {
  const r = await db.deleteFrom('user_recovery_codes').where('user_id', '=', userId).where('code_hash', '=', hash).executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}
