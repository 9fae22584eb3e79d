import type { Insertable } from 'kysely';
import type { Tx } from '../index.js';
import type { DB } from '../tables.js';

/** Writes for the data import (actions/realm_import.ts), inside its one transaction. */

/** Inserts one row and returns its new ID. */
export async function insertImportedRow<T extends 'users' | 'streams' | 'user_groups' | 'realm_emoji' | 'custom_profile_fields' | 'channel_folders' | 'attachments' | 'messages'>(
  db: Tx,
  table: T,
  row: Insertable<DB[T]>,
): Promise<number> {
  const r = await db.insertInto(table as 'users').values(row as Insertable<DB['users']>).returning('id').executeTakeFirstOrThrow();
  return Number(r.id);
}

/** Inserts rows in statements of at most `per` rows. */
export async function insertImportedRows<T extends keyof DB>(db: Tx, table: T, rows: readonly Insertable<DB[T]>[], per = 200): Promise<void> {
  for (let i = 0; i < rows.length; i += per) {
    await db.insertInto(table).values(rows.slice(i, i + per) as Insertable<DB[T]>[]).execute();
  }
}

export async function updateImportedStream(db: Tx, id: number, changes: { first_message_id?: number | null; permissions?: string }): Promise<void> {
  await db.updateTable('streams').set(changes).where('id', '=', id).execute();
}

export async function updateImportedGroupPermissions(db: Tx, id: number, permissions: string): Promise<void> {
  await db.updateTable('user_groups').set({ permissions }).where('id', '=', id).execute();
}

export async function updateImportedUser(db: Tx, id: number, changes: { bot_owner_id?: number | null; default_sending_stream_id?: number | null; default_events_register_stream_id?: number | null }): Promise<void> {
  await db.updateTable('users').set(changes).where('id', '=', id).execute();
}
