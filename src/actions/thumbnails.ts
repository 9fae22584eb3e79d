import { now, transaction, type Tx } from '../db/index.js';
import {
  claimImageAttachment,
  deleteImageAttachment,
  fetchImageAttachmentById,
  fetchMessagesLinkingUpload,
  insertImageAttachment,
  lockImageAttachmentsByPathIds,
  releaseImageAttachment,
  saveThumbnailMetadata,
  type ImageAttachmentRow,
} from '../db/repos/image_attachments.js';
import { fetchRecipientRows, updateMessageRow } from '../db/repos/messages.js';
import { fetchStoredFile, upsertStoredFile } from '../db/repos/stored_files.js';
import type { EventRecipient, ZulipEvent } from '../events/bus.js';
import { sharedFlagsList } from '../lib/message_flags.js';
import {
  THUMBNAIL_ACCEPT_IMAGE_TYPES,
  formatName,
  missingThumbnails,
  rewriteThumbnailedImage,
  storedFormats,
  thumbnailPath,
  uploadPreview,
  type StoredThumbnailFormat,
  type UploadPreview,
} from '../lib/thumbnail.js';
import { makeThumbnail, readImageHeader, type ImageHeader } from '../lib/thumbnail_images.js';
import { storedPath } from '../lib/uploads.js';
import type { ActionServices } from '../services.js';

type AfterCommit = (cb: () => void) => void;

/** How long a process holds an image it is thumbnailing before another may take it over. */
export const THUMBNAIL_CLAIM_SECONDS = 120;

/**
 * The header of an upload that declares an image type Zulip thumbnails, or null (Zulip's
 * maybe_thumbnail reads only this on upload; the resizing is the worker's).
 */
export async function checkUploadedImage(contentType: string, data: Buffer): Promise<ImageHeader | null> {
  if (!THUMBNAIL_ACCEPT_IMAGE_TYPES.has(contentType)) return null;
  return readImageHeader(data);
}

/** Queues an uploaded image for thumbnailing (in the upload's transaction) and wakes this process's worker. */
export async function doQueueThumbnails(
  services: ActionServices,
  tx: Tx,
  afterCommit: AfterCommit,
  realmId: number,
  pathId: string,
  contentType: string,
  header: ImageHeader,
): Promise<void> {
  await insertImageAttachment(tx, {
    realm_id: realmId,
    path_id: pathId,
    original_width_px: header.width,
    original_height_px: header.height,
    frames: header.frames,
    content_type: contentType,
  });
  afterCommit(() => services.thumbnails?.wake());
}

/**
 * Zulip's ThumbnailWorker.consume and ensure_thumbnails for one row: claims it (one process
 * works on an image at a time), makes every missing format, stores them, and rewrites the
 * messages showing a spinner for it with Zulip's rendering-only `update_message` event. An
 * image that does not decode, with nothing made yet, is dropped, and its previews removed from
 * the messages. Returns false when another process holds the row or it needs nothing.
 */
export async function doEnsureThumbnails(services: ActionServices, id: number): Promise<boolean> {
  const db = services.db.kysely;
  const t = now();
  if (!(await claimImageAttachment(db, id, t, t + THUMBNAIL_CLAIM_SECONDS))) return false;
  try {
    const row = await fetchImageAttachmentById(db, id);
    if (!row) return false;
    await makeMissingThumbnails(services, row);
    return true;
  } catch (e) {
    await releaseImageAttachment(db, id);
    throw e;
  }
}

async function makeMissingThumbnails(services: ActionServices, row: ImageAttachmentRow): Promise<void> {
  const needed = missingThumbnails(row);
  const made = storedFormats(row);
  const file = needed.length ? await fetchStoredFile(services.db.kysely, storedPath.upload(row.path_id)) : undefined;
  const header = { width: row.original_width_px, height: row.original_height_px, frames: row.frames };
  const images: { path: string; data: Buffer }[] = [];
  let failed = needed.length > 0 && !file;
  for (const format of needed) {
    if (!file) break;
    try {
      const thumb = await makeThumbnail(file.data, header, format);
      images.push({ path: storedPath.upload(thumbnailPath(row.path_id, formatName(format))), data: thumb.data });
      made.push({
        extension: format.extension,
        max_width: format.maxWidth,
        max_height: format.maxHeight,
        animated: format.animated,
        content_type: `image/${format.extension}`,
        width: thumb.width,
        height: thumb.height,
        byte_size: thumb.data.length,
      } satisfies StoredThumbnailFormat);
    } catch (e) {
      services.log.warn({ err: e, path_id: row.path_id }, 'Failed to thumbnail an uploaded image');
      failed = true;
      break;
    }
  }
  await transaction(services.db, async (tx, afterCommit) => {
    const time = now();
    if (failed && made.length === 0) {
      // Never thumbnailed: most likely not an image after all (Zulip deletes the row too).
      await deleteImageAttachment(tx, row.id);
      await rewriteMessages(services, tx, afterCommit, row, null);
      return;
    }
    for (const image of images) {
      await upsertStoredFile(tx, { path: image.path, realm_id: row.realm_id, content_type: 'image/webp', size: image.data.length, data: image.data, date_created: time });
    }
    const metadata = JSON.stringify(made);
    await saveThumbnailMetadata(tx, row.id, metadata);
    const preview = uploadPreview({ ...row, thumbnail_metadata: metadata });
    await rewriteMessages(services, tx, afterCommit, row, { ...preview, url: preview.url! });
  });
}

/**
 * An uploaded image's link preview, or image shown with the image syntax, still waiting for
 * its thumbnail, with the image's path_id.
 */
const PENDING_PREVIEW =
  /<a href="\/user_uploads\/([^"]+)"[^>]*><img class="image-loading-placeholder"|<img [^>]*class="inline-image image-loading-placeholder"[^>]* data-original-src="\/user_uploads\/([^"]+)"/g;

/**
 * Called once a message rendered with a spinner has committed. Its image may have been
 * thumbnailed between the rendering and the commit, when the worker's search for messages to
 * rewrite could not see it yet, and the spinner would stay. Under a lock on the image rows
 * (which the worker holds from its update to its commit), the previews already made are
 * filled in; the ones still pending are the worker's, which will now see the message.
 * Zulip closes the same gap by locking the rows while it renders.
 */
export async function settlePendingPreviews(services: ActionServices, realmId: number, html: string): Promise<void> {
  const pathIds = [...new Set([...html.matchAll(PENDING_PREVIEW)].map((m) => (m[1] ?? m[2])!))];
  if (pathIds.length === 0) return;
  await transaction(services.db, async (tx, afterCommit) => {
    for (const row of await lockImageAttachmentsByPathIds(tx, services.db.dialect, realmId, pathIds)) {
      const preview = uploadPreview(row);
      if (preview.url !== null) await rewriteMessages(services, tx, afterCommit, row, { ...preview, url: preview.url });
    }
  });
}

/** Zulip's update_message_rendered_content and do_update_embedded_data. */
async function rewriteMessages(services: ActionServices, tx: Tx, afterCommit: AfterCommit, row: ImageAttachmentRow, preview: (UploadPreview & { url: string }) | null): Promise<void> {
  const messages = await fetchMessagesLinkingUpload(tx, row.realm_id, row.path_id);
  const changed: { id: number; content: string; html: string }[] = [];
  for (const m of messages) {
    const html = rewriteThumbnailedImage(m.rendered_content, row.path_id, preview);
    if (html === null) continue;
    await updateMessageRow(tx, m.id, { rendered_content: html });
    changed.push({ id: m.id, content: m.content, html });
  }
  if (changed.length === 0) return;
  const recipients = new Map<number, EventRecipient[]>();
  for (const r of await fetchRecipientRows(tx, changed.map((c) => c.id))) {
    const list = recipients.get(r.message_id) ?? [];
    list.push({ id: r.user_id, flags: sharedFlagsList(r.flags) });
    recipients.set(r.message_id, list);
  }
  const editTimestamp = now();
  afterCommit(() => {
    for (const c of changed) {
      const event: ZulipEvent = {
        type: 'update_message',
        user_id: null,
        edit_timestamp: editTimestamp,
        message_id: c.id,
        message_ids: [c.id],
        content: c.content,
        rendered_content: c.html,
        rendering_only: true,
      };
      services.events.send(row.realm_id, event, recipients.get(c.id) ?? []);
    }
  });
}
