import { sql } from 'kysely';
import type { Tx } from '../index.js';
import type { NewUser, User, UserUpdate } from '../tables.js';

export async function fetchUserById(db: Tx, realmId: number, userId: number): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('realm_id', '=', realmId).where('id', '=', userId).executeTakeFirst();
}

/** Matches the API email or the real (delivery) email, case-insensitively. */
export async function fetchUserByEmail(db: Tx, realmId: number, email: string): Promise<User | undefined> {
  const lc = email.toLowerCase();
  return db
    .selectFrom('users')
    .selectAll()
    .where('realm_id', '=', realmId)
    .where((eb) => eb.or([eb('email_lc', '=', lc), eb(sql`lower(delivery_email)`, '=', lc)]))
    .executeTakeFirst();
}

export async function fetchUsersByIds(db: Tx, realmId: number, ids: readonly number[]): Promise<User[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('users').selectAll().where('realm_id', '=', realmId).where('id', 'in', [...ids]).execute();
}

export async function fetchRealmUsers(db: Tx, realmId: number): Promise<User[]> {
  return db.selectFrom('users').selectAll().where('realm_id', '=', realmId).orderBy('id').execute();
}

export async function insertUser(db: Tx, row: NewUser): Promise<User> {
  return db.insertInto('users').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateUserRow(db: Tx, userId: number, changes: UserUpdate): Promise<void> {
  await db.updateTable('users').set(changes).where('id', '=', userId).execute();
}

export async function countActiveOwners(db: Tx, realmId: number): Promise<number> {
  const r = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('realm_id', '=', realmId)
    .where('role', '=', 100)
    .where('is_active', '=', 1)
    .where('is_bot', '=', 0)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
