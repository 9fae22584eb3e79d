import type { Selectable } from 'kysely';
import type { Tx } from '../index.js';
import type { UserStatusTable } from '../tables.js';

export type UserStatusRow = Selectable<UserStatusTable>;

export async function fetchUserStatus(db: Tx, userId: number): Promise<UserStatusRow | undefined> {
  return db.selectFrom('user_status').selectAll().where('user_id', '=', userId).executeTakeFirst();
}

/** Status rows of the realm's active users, with whether each has presence turned off. */
export async function fetchRealmUserStatuses(db: Tx, realmId: number): Promise<(UserStatusRow & { settings: string })[]> {
  return db
    .selectFrom('user_status')
    .innerJoin('users', 'users.id', 'user_status.user_id')
    .selectAll('user_status')
    .select('users.settings')
    .where('users.realm_id', '=', realmId)
    .where('users.is_active', '=', 1)
    .orderBy('user_status.user_id')
    .execute();
}

export async function upsertUserStatus(db: Tx, row: UserStatusRow): Promise<void> {
  const { user_id: _id, ...changes } = row;
  await db
    .insertInto('user_status')
    .values(row)
    .onConflict((oc) => oc.column('user_id').doUpdateSet(changes))
    .execute();
}
