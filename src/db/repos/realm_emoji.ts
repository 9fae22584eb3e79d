import type { Selectable } from 'kysely';
import type { Tx } from '../index.js';
import type { RealmEmojiTable } from '../tables.js';

export type RealmEmojiRow = Selectable<RealmEmojiTable>;

/** Every custom emoji of the realm, deactivated ones included, oldest first. */
export async function fetchRealmEmoji(db: Tx, realmId: number): Promise<RealmEmojiRow[]> {
  return db.selectFrom('realm_emoji').selectAll().where('realm_id', '=', realmId).orderBy('id').execute();
}

/** The realm's active custom emoji, for rendering and reactions. */
export async function fetchActiveRealmEmoji(db: Tx, realmId: number): Promise<RealmEmojiRow[]> {
  return db.selectFrom('realm_emoji').selectAll().where('realm_id', '=', realmId).where('deactivated', '=', 0).orderBy('id').execute();
}

export async function fetchActiveRealmEmojiByName(db: Tx, realmId: number, name: string): Promise<RealmEmojiRow | undefined> {
  return db
    .selectFrom('realm_emoji')
    .selectAll()
    .where('realm_id', '=', realmId)
    .where('name', '=', name)
    .where('deactivated', '=', 0)
    .executeTakeFirst();
}

export async function insertRealmEmoji(
  db: Tx,
  row: { realm_id: number; name: string; file_name: string; author_id: number },
): Promise<RealmEmojiRow> {
  return db.insertInto('realm_emoji').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function deactivateRealmEmojiRow(db: Tx, id: number): Promise<void> {
  await db.updateTable('realm_emoji').set({ deactivated: 1 }).where('id', '=', id).execute();
}
