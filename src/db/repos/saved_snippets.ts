import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Tx } from '../index.js';
import type { SavedSnippetTable } from '../tables.js';

export type SavedSnippetRow = Selectable<SavedSnippetTable>;

export async function fetchUserSavedSnippets(db: Tx, userId: number): Promise<SavedSnippetRow[]> {
  return db.selectFrom('saved_snippets').selectAll().where('user_id', '=', userId).orderBy('id').execute();
}

export async function fetchUserSavedSnippet(db: Tx, userId: number, id: number): Promise<SavedSnippetRow | undefined> {
  return db.selectFrom('saved_snippets').selectAll().where('user_id', '=', userId).where('id', '=', id).executeTakeFirst();
}

export async function insertSavedSnippet(db: Tx, row: Insertable<SavedSnippetTable>): Promise<SavedSnippetRow> {
  return db.insertInto('saved_snippets').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateSavedSnippetRow(db: Tx, id: number, changes: Updateable<SavedSnippetTable>): Promise<SavedSnippetRow> {
  return db.updateTable('saved_snippets').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function deleteSavedSnippetRow(db: Tx, id: number): Promise<void> {
  await db.deleteFrom('saved_snippets').where('id', '=', id).execute();
}
