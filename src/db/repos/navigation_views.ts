import type { Selectable, Updateable } from 'kysely';
import type { Tx } from '../index.js';
import type { NavigationViewTable } from '../tables.js';

export type NavigationViewRow = Selectable<NavigationViewTable>;

export async function fetchUserNavigationViews(db: Tx, userId: number): Promise<NavigationViewRow[]> {
  return db.selectFrom('navigation_views').selectAll().where('user_id', '=', userId).orderBy('fragment').execute();
}

export async function fetchNavigationView(db: Tx, userId: number, fragment: string): Promise<NavigationViewRow | undefined> {
  return db.selectFrom('navigation_views').selectAll().where('user_id', '=', userId).where('fragment', '=', fragment).executeTakeFirst();
}

export async function navigationViewNameExists(db: Tx, userId: number, name: string): Promise<boolean> {
  const row = await db.selectFrom('navigation_views').select('fragment').where('user_id', '=', userId).where('name', '=', name).executeTakeFirst();
  return row !== undefined;
}

export async function insertNavigationView(db: Tx, row: NavigationViewRow): Promise<NavigationViewRow> {
  return db.insertInto('navigation_views').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateNavigationViewRow(
  db: Tx,
  userId: number,
  fragment: string,
  changes: Updateable<NavigationViewTable>,
): Promise<NavigationViewRow> {
  return db
    .updateTable('navigation_views')
    .set(changes)
    .where('user_id', '=', userId)
    .where('fragment', '=', fragment)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteNavigationViewRow(db: Tx, userId: number, fragment: string): Promise<void> {
  await db.deleteFrom('navigation_views').where('user_id', '=', userId).where('fragment', '=', fragment).execute();
}
