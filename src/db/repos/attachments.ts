import { sql, type Selectable } from 'kysely';
import type { Tx } from '../index.js';
import type { AttachmentTable } from '../tables.js';

export type AttachmentRow = Selectable<AttachmentTable>;

export async function insertAttachment(db: Tx, row: Omit<AttachmentRow, 'id'>): Promise<AttachmentRow> {
  return db.insertInto('attachments').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function fetchAttachmentByPathId(db: Tx, pathId: string): Promise<AttachmentRow | undefined> {
  return db.selectFrom('attachments').selectAll().where('path_id', '=', pathId).executeTakeFirst();
}

export async function fetchAttachmentById(db: Tx, realmId: number, id: number): Promise<AttachmentRow | undefined> {
  return db.selectFrom('attachments').selectAll().where('realm_id', '=', realmId).where('id', '=', id).executeTakeFirst();
}

/** The realm's attachments among these path IDs. */
export async function fetchAttachmentsByPathIds(db: Tx, realmId: number, pathIds: readonly string[]): Promise<AttachmentRow[]> {
  if (pathIds.length === 0) return [];
  return db.selectFrom('attachments').selectAll().where('realm_id', '=', realmId).where('path_id', 'in', [...pathIds]).orderBy('id').execute();
}

/** A user's uploads, newest first (as Zulip's user_attachments). */
export async function fetchUserAttachments(db: Tx, ownerId: number): Promise<AttachmentRow[]> {
  return db.selectFrom('attachments').selectAll().where('owner_id', '=', ownerId).orderBy('id', 'desc').execute();
}

/** Messages linking to each of these attachments, ascending. */
export async function fetchAttachmentMessageIds(db: Tx, attachmentIds: readonly number[]): Promise<Map<number, number[]>> {
  const out = new Map<number, number[]>();
  if (attachmentIds.length === 0) return out;
  const rows = await db
    .selectFrom('attachment_messages')
    .select(['attachment_id', 'message_id'])
    .where('attachment_id', 'in', [...attachmentIds])
    .orderBy('message_id')
    .execute();
  for (const r of rows) {
    const list = out.get(r.attachment_id);
    if (list) list.push(r.message_id);
    else out.set(r.attachment_id, [r.message_id]);
  }
  return out;
}

/** Attachments linked from a message. */
export async function fetchMessageAttachmentIds(db: Tx, messageId: number): Promise<number[]> {
  const rows = await db.selectFrom('attachment_messages').select('attachment_id').where('message_id', '=', messageId).execute();
  return rows.map((r) => r.attachment_id);
}

export async function linkAttachments(db: Tx, messageId: number, attachmentIds: readonly number[]): Promise<void> {
  if (attachmentIds.length === 0) return;
  await db
    .insertInto('attachment_messages')
    .values(attachmentIds.map((attachment_id) => ({ attachment_id, message_id: messageId })))
    .onConflict((oc) => oc.columns(['attachment_id', 'message_id']).doNothing())
    .execute();
}

export async function unlinkAttachments(db: Tx, messageId: number, attachmentIds: readonly number[]): Promise<void> {
  if (attachmentIds.length === 0) return;
  await db.deleteFrom('attachment_messages').where('message_id', '=', messageId).where('attachment_id', 'in', [...attachmentIds]).execute();
}

export async function deleteAttachmentRow(db: Tx, id: number): Promise<void> {
  await db.deleteFrom('attachment_messages').where('attachment_id', '=', id).execute();
  await db.deleteFrom('attachments').where('id', '=', id).execute();
}

/** Bytes of every upload in the realm (Zulip's upload_space_used). */
export async function fetchUploadSpaceUsed(db: Tx, realmId: number): Promise<number> {
  const row = await db
    .selectFrom('attachments')
    .select(sql<string | number>`COALESCE(SUM(size), 0)`.as('used'))
    .where('realm_id', '=', realmId)
    .executeTakeFirst();
  return Number(row?.used ?? 0);
}
