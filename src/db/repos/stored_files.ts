import type { Tx } from '../index.js';

export interface StoredFileRow {
  path: string;
  realm_id: number;
  content_type: string;
  size: number;
  data: Buffer;
}

export async function insertStoredFile(db: Tx, row: StoredFileRow & { date_created: number }): Promise<void> {
  await db.insertInto('stored_files').values(row).execute();
}

/** Writes the file, replacing any previous one at the same path (avatars keep their path). */
export async function upsertStoredFile(db: Tx, row: StoredFileRow & { date_created: number }): Promise<void> {
  await db
    .insertInto('stored_files')
    .values(row)
    .onConflict((oc) =>
      oc.column('path').doUpdateSet({ content_type: row.content_type, size: row.size, data: row.data, date_created: row.date_created }),
    )
    .execute();
}

export async function fetchStoredFile(db: Tx, path: string): Promise<StoredFileRow | undefined> {
  const row = await db.selectFrom('stored_files').select(['path', 'realm_id', 'content_type', 'size', 'data']).where('path', '=', path).executeTakeFirst();
  // better-sqlite3 (BLOB) and pg (bytea) both return a Buffer.
  return row ? { ...row, size: Number(row.size) } : undefined;
}

export async function deleteStoredFiles(db: Tx, paths: readonly string[]): Promise<void> {
  if (paths.length === 0) return;
  await db.deleteFrom('stored_files').where('path', 'in', [...paths]).execute();
}
