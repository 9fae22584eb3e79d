import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Tx } from '../index.js';
import type { DraftTable } from '../tables.js';

export type DraftRow = Selectable<DraftTable>;

/** A user's drafts in Zulip's order: oldest edit first. */
export async function fetchUserDrafts(db: Tx, userId: number): Promise<DraftRow[]> {
  return db.selectFrom('drafts').selectAll().where('user_id', '=', userId).orderBy('last_edit_time').orderBy('id').execute();
}

export async function fetchUserDraft(db: Tx, userId: number, draftId: number): Promise<DraftRow | undefined> {
  return db.selectFrom('drafts').selectAll().where('user_id', '=', userId).where('id', '=', draftId).executeTakeFirst();
}

export async function insertDrafts(db: Tx, rows: readonly Insertable<DraftTable>[]): Promise<DraftRow[]> {
  if (rows.length === 0) return [];
  const inserted = await db.insertInto('drafts').values([...rows]).returningAll().execute();
  return inserted.sort((a, b) => a.id - b.id);
}

export async function updateDraftRow(db: Tx, draftId: number, changes: Updateable<DraftTable>): Promise<DraftRow> {
  return db.updateTable('drafts').set(changes).where('id', '=', draftId).returningAll().executeTakeFirstOrThrow();
}

export async function deleteDraftRow(db: Tx, draftId: number): Promise<void> {
  await db.deleteFrom('drafts').where('id', '=', draftId).execute();
}

export async function deleteUserDrafts(db: Tx, userId: number): Promise<void> {
  await db.deleteFrom('drafts').where('user_id', '=', userId).execute();
}
