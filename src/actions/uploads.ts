import { now, transaction, type Tx } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import {
  deleteAttachmentRow,
  fetchAttachmentById,
  fetchAttachmentMessageIds,
  fetchAttachmentsByPathIds,
  fetchMessageAttachmentIds,
  fetchUploadSpaceUsed,
  fetchUserAttachments,
  insertAttachment,
  linkAttachments,
  unlinkAttachments,
  type AttachmentRow,
} from '../db/repos/attachments.js';
import { deleteImageAttachmentByPathId, fetchImageAttachmentByPathId } from '../db/repos/image_attachments.js';
import { deleteStoredFiles, insertStoredFile } from '../db/repos/stored_files.js';
import { badRequest } from '../errors.js';
import { claimableAttachments } from '../lib/access/attachments.js';
import { formatAttachment } from '../lib/format/attachments.js';
import { signObject, unsignObject } from '../lib/signing.js';
import { storedFormatName, storedFormats, thumbnailPath } from '../lib/thumbnail.js';
import { newUploadPathId, storedPath, uploadContentType } from '../lib/uploads.js';
import type { UploadedFile } from '../plugins/body.js';
import type { ActionServices } from '../services.js';
import { checkUploadedImage, doQueueThumbnails } from './thumbnails.js';
import { MAX_FILE_UPLOAD_SIZE_MIB } from '../version.js';

type AfterCommit = (cb: () => void) => void;

/** Zulip's SIGNED_ACCESS_TOKEN_VALIDITY_IN_SECONDS default. */
export const TEMPORARY_URL_SECONDS = 60;

/** Zulip's upload_file_backend checks: exactly one file, within max_file_upload_size_mib. */
export function checkUploadFile(files: readonly UploadedFile[]): UploadedFile {
  if (files.length === 0) throw badRequest('You must specify a file to upload');
  if (files.length !== 1) throw badRequest('You may only upload one file at a time');
  const file = files[0]!;
  if (file.data.length > MAX_FILE_UPLOAD_SIZE_MIB * 1024 * 1024) {
    throw badRequest(`Uploaded file is larger than the allowed limit of ${MAX_FILE_UPLOAD_SIZE_MIB} MiB`);
  }
  return file;
}

/** The `attachment` event to an upload's owner, with the realm's new total. */
async function notifyAttachment(services: ActionServices, tx: Tx, afterCommit: AfterCommit, realm: Realm, ownerId: number, op: 'add' | 'update' | 'remove', row: AttachmentRow): Promise<void> {
  const used = await fetchUploadSpaceUsed(tx, realm.id);
  const attachment = op === 'remove' ? { id: row.id } : formatAttachment(row, (await fetchAttachmentMessageIds(tx, [row.id])).get(row.id) ?? []);
  afterCommit(() => services.events.send(realm.id, { type: 'attachment', op, attachment, upload_space_used: used }, [ownerId]));
}

/**
 * Stores an upload (bytes in the database, so any process can serve it) and tells the owner's
 * clients. Returns its URL, relative to the organization, and the name it was stored under.
 */
export async function doUploadFile(services: ActionServices, realm: Realm, owner: User, file: UploadedFile): Promise<{ url: string; filename: string }> {
  const fileName = file.filename || 'uploaded-file';
  const pathId = newUploadPathId(realm.id, fileName);
  const contentType = uploadContentType(fileName, file.mimeType);
  const time = now();
  const image = await checkUploadedImage(contentType, file.data);
  await transaction(services.db, async (tx, afterCommit) => {
    await insertStoredFile(tx, { path: storedPath.upload(pathId), realm_id: realm.id, content_type: contentType, size: file.data.length, data: file.data, date_created: time });
    const row = await insertAttachment(tx, {
      realm_id: realm.id,
      owner_id: owner.id,
      path_id: pathId,
      file_name: fileName,
      size: file.data.length,
      content_type: contentType,
      create_time: time,
    });
    if (image) await doQueueThumbnails(services, tx, afterCommit, realm.id, pathId, contentType, image);
    await notifyAttachment(services, tx, afterCommit, realm, owner.id, 'add', row);
  });
  return { url: `/user_uploads/${pathId}`, filename: fileName };
}

/** Path IDs as Markdown found them in links, percent-decoded where clients encoded them. */
function decodePathIds(pathIds: readonly string[]): string[] {
  const out = new Set<string>();
  for (const p of pathIds) {
    out.add(p);
    try {
      out.add(decodeURIComponent(p));
    } catch {
      // A malformed escape is just a link to nothing.
    }
  }
  return [...out];
}

/**
 * The uploads a message's content links to that its sender may claim. Called before the
 * message is written, so `has_attachment` counts only real, claimable uploads (as Zulip's
 * do_claim_attachments decides it).
 */
export async function claimableMessageAttachments(db: Tx, realm: Realm, sender: User, pathIds: readonly string[]): Promise<AttachmentRow[]> {
  if (pathIds.length === 0) return [];
  return claimableAttachments(db, realm, sender, await fetchAttachmentsByPathIds(db, realm.id, decodePathIds(pathIds)));
}

/**
 * Makes a message's attachment links exactly `attachments` (new messages and content edits)
 * and sends `attachment` update events to the owners whose uploads gained or lost it. A new
 * message has no links yet, which saves every send a query.
 */
export async function setMessageAttachments(
  services: ActionServices,
  tx: Tx,
  afterCommit: AfterCommit,
  realm: Realm,
  messageId: number,
  attachments: readonly AttachmentRow[],
  newMessage = false,
): Promise<void> {
  const current = new Set(newMessage ? [] : await fetchMessageAttachmentIds(tx, messageId));
  const wanted = new Map(attachments.map((a) => [a.id, a]));
  const added = [...wanted.keys()].filter((id) => !current.has(id));
  const removed = [...current].filter((id) => !wanted.has(id));
  await linkAttachments(tx, messageId, added);
  await unlinkAttachments(tx, messageId, removed);
  for (const id of added) await notifyAttachment(services, tx, afterCommit, realm, wanted.get(id)!.owner_id, 'update', wanted.get(id)!);
  for (const id of removed) {
    const row = await fetchAttachmentById(tx, realm.id, id);
    if (row) await notifyAttachment(services, tx, afterCommit, realm, row.owner_id, 'update', row);
  }
}

/** GET /attachments: the caller's uploads with the messages linking to each, and the realm's total. */
export async function fetchAttachmentsForUser(services: ActionServices, realm: Realm, user: User): Promise<{ attachments: ReturnType<typeof formatAttachment>[]; upload_space_used: number }> {
  const db = services.db.kysely;
  const rows = await fetchUserAttachments(db, user.id);
  const links = await fetchAttachmentMessageIds(db, rows.map((r) => r.id));
  return { attachments: rows.map((r) => formatAttachment(r, links.get(r.id) ?? [])), upload_space_used: await fetchUploadSpaceUsed(db, realm.id) };
}

/** Zulip's remove_attachment: only one's own uploads; anything else is "Invalid attachment". */
export async function checkDeleteAttachment(services: ActionServices, realm: Realm, user: User, id: number): Promise<AttachmentRow> {
  const row = await fetchAttachmentById(services.db.kysely, realm.id, id);
  if (!row || row.owner_id !== user.id) throw badRequest('Invalid attachment');
  return row;
}

/** Deletes the upload, its thumbnails and their bytes; messages keep their (now broken) links, as in Zulip. */
export async function doDeleteAttachment(services: ActionServices, realm: Realm, row: AttachmentRow): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    const image = await fetchImageAttachmentByPathId(tx, row.path_id);
    const thumbnails = image ? storedFormats(image).map((f) => storedPath.upload(thumbnailPath(row.path_id, storedFormatName(f)))) : [];
    await deleteImageAttachmentByPathId(tx, row.path_id);
    await deleteAttachmentRow(tx, row.id);
    await deleteStoredFiles(tx, [storedPath.upload(row.path_id), ...thumbnails]);
    await notifyAttachment(services, tx, afterCommit, realm, row.owner_id, 'remove', row);
  });
}

/** A URL that serves the upload without credentials for TEMPORARY_URL_SECONDS (GET /user_uploads/{realm}/{file} in the API). */
export async function temporaryUploadUrl(services: ActionServices, pathId: string): Promise<string> {
  const token = await signObject(services.db, 'upload', { p: pathId, e: now() + TEMPORARY_URL_SECONDS });
  const name = pathId.slice(pathId.lastIndexOf('/') + 1);
  return `/user_uploads/temporary/${token}/${encodeURIComponent(name)}`;
}

/** The path ID a temporary URL grants, or null when it was altered or has expired. */
export async function pathIdFromTemporaryToken(services: ActionServices, token: string): Promise<string | null> {
  const v = await unsignObject<{ p: string; e: number }>(services.db, 'upload', token);
  if (!v || typeof v.p !== 'string' || typeof v.e !== 'number' || v.e < now()) return null;
  return v.p;
}
