import type { Selectable } from 'kysely';
import type { Dialect, Tx } from '../index.js';
import type { ImageAttachmentTable } from '../tables.js';

export type ImageAttachmentRow = Selectable<ImageAttachmentTable>;

export async function insertImageAttachment(
  db: Tx,
  row: Pick<ImageAttachmentRow, 'realm_id' | 'path_id' | 'original_width_px' | 'original_height_px' | 'frames' | 'content_type'>,
): Promise<ImageAttachmentRow> {
  return db.insertInto('image_attachments').values({ ...row, thumbnail_metadata: '[]', pending: 1 }).returningAll().executeTakeFirstOrThrow();
}

export async function fetchImageAttachmentByPathId(db: Tx, pathId: string): Promise<ImageAttachmentRow | undefined> {
  return db.selectFrom('image_attachments').selectAll().where('path_id', '=', pathId).executeTakeFirst();
}

export async function fetchImageAttachmentById(db: Tx, id: number): Promise<ImageAttachmentRow | undefined> {
  return db.selectFrom('image_attachments').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The realm's images among these path ids (what a message being rendered links to). */
export async function fetchImageAttachmentsByPathIds(db: Tx, realmId: number, pathIds: readonly string[]): Promise<ImageAttachmentRow[]> {
  if (pathIds.length === 0) return [];
  return db.selectFrom('image_attachments').selectAll().where('realm_id', '=', realmId).where('path_id', 'in', [...pathIds]).orderBy('id').execute();
}

/**
 * The same rows, locked until the transaction ends on PostgreSQL (the thumbnail worker updates
 * a row before it looks for the messages to rewrite, so it waits for this transaction). A
 * SQLite writing transaction excludes every other one already.
 */
export async function lockImageAttachmentsByPathIds(db: Tx, dialect: Dialect, realmId: number, pathIds: readonly string[]): Promise<ImageAttachmentRow[]> {
  if (pathIds.length === 0) return [];
  const query = db.selectFrom('image_attachments').selectAll().where('realm_id', '=', realmId).where('path_id', 'in', [...pathIds]).orderBy('id');
  return (dialect === 'postgres' ? query.forUpdate() : query).execute();
}

/** Ids of rows still waiting for thumbnails that no live process holds, oldest first. */
export async function fetchClaimableImageAttachmentIds(db: Tx, nowSeconds: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('image_attachments')
    .select('id')
    .where('pending', '=', 1)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', nowSeconds)]))
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/** Takes the row for `until` (Unix seconds) if no other process holds it; whether it did. */
export async function claimImageAttachment(db: Tx, id: number, nowSeconds: number, until: number): Promise<boolean> {
  const r = await db
    .updateTable('image_attachments')
    .set({ claimed_until: until })
    .where('id', '=', id)
    .where('pending', '=', 1)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', nowSeconds)]))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function releaseImageAttachment(db: Tx, id: number): Promise<void> {
  await db.updateTable('image_attachments').set({ claimed_until: null }).where('id', '=', id).execute();
}

export async function saveThumbnailMetadata(db: Tx, id: number, metadata: string): Promise<void> {
  await db.updateTable('image_attachments').set({ thumbnail_metadata: metadata, pending: 0, claimed_until: null }).where('id', '=', id).execute();
}

export async function deleteImageAttachment(db: Tx, id: number): Promise<void> {
  await db.deleteFrom('image_attachments').where('id', '=', id).execute();
}

export async function deleteImageAttachmentByPathId(db: Tx, pathId: string): Promise<void> {
  await db.deleteFrom('image_attachments').where('path_id', '=', pathId).execute();
}

/** Messages (id, sender, rendered content) linking to an upload, by its attachment row. */
export async function fetchMessagesLinkingUpload(db: Tx, realmId: number, pathId: string): Promise<{ id: number; sender_id: number; content: string; rendered_content: string }[]> {
  return db
    .selectFrom('attachments')
    .innerJoin('attachment_messages', 'attachment_messages.attachment_id', 'attachments.id')
    .innerJoin('messages', 'messages.id', 'attachment_messages.message_id')
    .select(['messages.id', 'messages.sender_id', 'messages.content', 'messages.rendered_content'])
    .where('attachments.realm_id', '=', realmId)
    .where('attachments.path_id', '=', pathId)
    .orderBy('messages.id')
    .execute();
}
