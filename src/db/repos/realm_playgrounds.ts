import type { Insertable, Selectable } from 'kysely';
import type { Tx } from '../index.js';
import type { RealmPlaygroundTable } from '../tables.js';

export type RealmPlaygroundRow = Selectable<RealmPlaygroundTable>;

export async function fetchRealmPlaygrounds(db: Tx, realmId: number): Promise<RealmPlaygroundRow[]> {
  return db.selectFrom('realm_playgrounds').selectAll().where('realm_id', '=', realmId).orderBy('id').execute();
}

export async function fetchRealmPlayground(db: Tx, realmId: number, id: number): Promise<RealmPlaygroundRow | undefined> {
  return db.selectFrom('realm_playgrounds').selectAll().where('realm_id', '=', realmId).where('id', '=', id).executeTakeFirst();
}

/** Zulip's uniqueness: one playground per (realm, language, name). */
export async function realmPlaygroundExists(db: Tx, realmId: number, pygmentsLanguage: string, name: string): Promise<boolean> {
  const row = await db
    .selectFrom('realm_playgrounds')
    .select('id')
    .where('realm_id', '=', realmId)
    .where('pygments_language', '=', pygmentsLanguage)
    .where('name', '=', name)
    .executeTakeFirst();
  return row !== undefined;
}

export async function insertRealmPlayground(db: Tx, row: Insertable<RealmPlaygroundTable>): Promise<RealmPlaygroundRow> {
  return db.insertInto('realm_playgrounds').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function deleteRealmPlaygroundRow(db: Tx, id: number): Promise<void> {
  await db.deleteFrom('realm_playgrounds').where('id', '=', id).execute();
}
