import type { Tx } from '../index.js';

export async function fetchSession(db: Tx, id: string): Promise<{ user_id: number; expires: number } | undefined> {
  return db.selectFrom('sessions').select(['user_id', 'expires']).where('id', '=', id).executeTakeFirst();
}

export async function insertSession(db: Tx, row: { id: string; user_id: number; expires: number }): Promise<void> {
  await db.insertInto('sessions').values(row).execute();
}

export async function deleteSession(db: Tx, id: string): Promise<void> {
  await db.deleteFrom('sessions').where('id', '=', id).execute();
}

export async function deleteUserSessions(db: Tx, userId: number): Promise<void> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).execute();
}

/** Deletes a row and returns what it held, so that of two concurrent callers only one gets it. */
export async function takeSession(db: Tx, id: string): Promise<{ user_id: number; expires: number } | undefined> {
  return db.deleteFrom('sessions').where('id', '=', id).returning(['user_id', 'expires']).executeTakeFirst();
}

/** Ends every browser session of an organization's users. */
export async function deleteRealmSessions(db: Tx, realmId: number): Promise<void> {
  await db
    .deleteFrom('sessions')
    .where('user_id', 'in', db.selectFrom('users').select('id').where('realm_id', '=', realmId))
    .execute();
}
