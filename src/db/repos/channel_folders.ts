import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Tx } from '../index.js';
import type { ChannelFolderTable } from '../tables.js';

export type ChannelFolderRow = Selectable<ChannelFolderTable>;

/** The realm's folders in display order (then by ID). */
export async function fetchRealmChannelFolders(db: Tx, realmId: number, includeArchived: boolean): Promise<ChannelFolderRow[]> {
  let q = db.selectFrom('channel_folders').selectAll().where('realm_id', '=', realmId);
  if (!includeArchived) q = q.where('is_archived', '=', 0);
  return q.orderBy('folder_order').orderBy('id').execute();
}

export async function fetchChannelFolder(db: Tx, realmId: number, id: number): Promise<ChannelFolderRow | undefined> {
  return db.selectFrom('channel_folders').selectAll().where('realm_id', '=', realmId).where('id', '=', id).executeTakeFirst();
}

export async function channelFolderNameInUse(db: Tx, realmId: number, name: string): Promise<boolean> {
  const row = await db.selectFrom('channel_folders').select('id').where('realm_id', '=', realmId).where('name_lc', '=', name.toLowerCase()).executeTakeFirst();
  return row !== undefined;
}

export async function insertChannelFolder(db: Tx, row: Insertable<ChannelFolderTable>): Promise<ChannelFolderRow> {
  const inserted = await db.insertInto('channel_folders').values(row).returningAll().executeTakeFirstOrThrow();
  // Zulip starts a folder's order at its ID, which puts it after every existing one.
  return db.updateTable('channel_folders').set({ folder_order: inserted.id }).where('id', '=', inserted.id).returningAll().executeTakeFirstOrThrow();
}

export async function updateChannelFolderRow(db: Tx, id: number, changes: Updateable<ChannelFolderTable>): Promise<ChannelFolderRow> {
  return db.updateTable('channel_folders').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function setChannelFolderOrder(db: Tx, id: number, order: number): Promise<void> {
  await db.updateTable('channel_folders').set({ folder_order: order }).where('id', '=', id).execute();
}

/** Whether an active (not archived) channel is in the folder. */
export async function channelFolderHasActiveChannels(db: Tx, folderId: number): Promise<boolean> {
  const row = await db.selectFrom('streams').select('id').where('folder_id', '=', folderId).where('deactivated', '=', 0).executeTakeFirst();
  return row !== undefined;
}
