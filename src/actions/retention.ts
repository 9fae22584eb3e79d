import { now, transaction } from '../db/index.js';
import { deleteMessagesByIds } from '../db/repos/messages.js';
import { deleteImageAttachmentByPathId, fetchImageAttachmentByPathId } from '../db/repos/image_attachments.js';
import {
  ARCHIVE_RETENTION_POLICY_BASED,
  copyMessagesToArchive,
  deleteArchiveTransactions,
  deleteArchivedAttachments,
  deleteUnlinkedArchivedAttachments,
  fetchArchiveTransactionIdsBefore,
  fetchArchiveTransactions,
  fetchRealmsForRetention,
  fetchStreamsForArchiving,
  fetchUnlinkedArchivedAttachments,
  insertArchiveTransaction,
  lockExpiredMessageIds,
  restoreArchiveTransaction,
  type ArchiveTransactionRow,
  type RetentionRealm,
} from '../db/repos/retention.js';
import { deleteStoredFiles } from '../db/repos/stored_files.js';
import { realmSettings } from '../lib/realm_settings.js';
import { storedFormatName, storedFormats, thumbnailPath } from '../lib/thumbnail.js';
import { storedPath } from '../lib/uploads.js';
import type { ActionServices } from '../services.js';

/** Zulip's TRANSACTION_DELETION_BATCH_SIZE: archive transactions purged per database transaction. */
const TRANSACTION_DELETION_BATCH_SIZE = 100;
const DAY = 86_400;

export interface RetentionPassReport {
  archived_messages: number;
  archive_transactions: number;
  purged_transactions: number;
  deleted_uploads: number;
}

/**
 * One full retention pass, as Zulip's archive_messages then clean_archived_data and the
 * archive half of delete_old_unclaimed_attachments. Safe to run from several processes at
 * once (each message is archived by one of them), though the worker lets one at a time.
 */
export async function doRetentionPass(services: ActionServices, at = now()): Promise<RetentionPassReport> {
  const archived = await doArchiveExpiredMessages(services, at);
  const purged = await doPurgeArchivedData(services, at);
  return { archived_messages: archived.messages, archive_transactions: archived.transactions, ...purged };
}

/**
 * Zulip's archive_messages: for each organization, the messages of each channel past its
 * policy (the channel's message_retention_days; null: the organization's; -1: never), then,
 * when the organization has a policy, its direct messages past it. Each batch (channelBatchSize
 * channel messages, batchSize direct messages) is one archive transaction, moved with its
 * receipts, reactions, submessages and attachment links in one database transaction; the
 * uploads that no live message links any more are removed from use. Zulip sends no events for
 * these deletions: clients stop seeing the messages at their next fetch or register.
 */
export async function doArchiveExpiredMessages(services: ActionServices, at = now()): Promise<{ messages: number; transactions: number }> {
  const db = services.db.kysely;
  const { batchSize, channelBatchSize } = services.config.retention;
  const realms: RetentionRealm[] = (await fetchRealmsForRetention(db)).map((r) => ({ id: r.id, string_id: r.string_id, days: realmSettings(r).message_retention_days }));
  const streams = await fetchStreamsForArchiving(db, realms);
  let messages = 0;
  let transactions = 0;
  const run = async (realmId: number, streamId: number | null, days: number, limit: number): Promise<void> => {
    for (;;) {
      const n = await archiveBatch(services, realmId, streamId, at - days * DAY, limit, at);
      if (n > 0) {
        messages += n;
        transactions += 1;
      }
      if (n < limit) return;
    }
  };
  for (const realm of realms) {
    for (const s of streams) if (s.realm_id === realm.id) await run(realm.id, s.id, s.days, channelBatchSize);
    if (realm.days > 0) await run(realm.id, null, realm.days, batchSize);
  }
  if (messages > 0) services.log.info({ messages, transactions }, 'Archived expired messages');
  return { messages, transactions };
}

async function archiveBatch(services: ActionServices, realmId: number, streamId: number | null, before: number, limit: number, at: number): Promise<number> {
  return transaction(services.db, async (tx) => {
    const ids = await lockExpiredMessageIds(tx, services.db.dialect, { realmId, streamId }, before, limit);
    if (ids.length === 0) return 0;
    const transactionId = await insertArchiveTransaction(tx, realmId, ARCHIVE_RETENTION_POLICY_BASED, at);
    await copyMessagesToArchive(tx, ids, transactionId);
    await deleteMessagesByIds(tx, ids);
    await deleteUnlinkedArchivedAttachments(tx, ids);
    return ids.length;
  });
}

/**
 * Zulip's clean_archived_data and the archive half of delete_old_unclaimed_attachments:
 * archive transactions older than `archiveDays` are deleted with everything they hold, then
 * the archived uploads no archived message links any more go too, with their bytes and
 * thumbnails unless the upload is in use again.
 */
export async function doPurgeArchivedData(services: ActionServices, at = now()): Promise<{ purged_transactions: number; deleted_uploads: number }> {
  const db = services.db.kysely;
  const before = at - services.config.retention.archiveDays * DAY;
  let purged = 0;
  for (;;) {
    const ids = await fetchArchiveTransactionIdsBefore(db, before, TRANSACTION_DELETION_BATCH_SIZE);
    if (ids.length === 0) break;
    await transaction(services.db, (tx) => deleteArchiveTransactions(tx, ids));
    purged += ids.length;
  }
  let deleted = 0;
  for (;;) {
    const rows = await fetchUnlinkedArchivedAttachments(db, TRANSACTION_DELETION_BATCH_SIZE);
    if (rows.length === 0) break;
    await transaction(services.db, async (tx) => {
      for (const row of rows) {
        if (row.live) continue;
        const image = await fetchImageAttachmentByPathId(tx, row.path_id);
        const thumbnails = image ? storedFormats(image).map((f) => storedPath.upload(thumbnailPath(row.path_id, storedFormatName(f)))) : [];
        await deleteImageAttachmentByPathId(tx, row.path_id);
        await deleteStoredFiles(tx, [storedPath.upload(row.path_id), ...thumbnails]);
        deleted += 1;
      }
      await deleteArchivedAttachments(tx, rows.map((r) => r.id));
    });
  }
  if (purged > 0 || deleted > 0) services.log.info({ purged_transactions: purged, deleted_uploads: deleted }, 'Purged archived data');
  return { purged_transactions: purged, deleted_uploads: deleted };
}

/** The archive transactions of an organization (or of one of its channels), newest first. */
export async function fetchArchive(services: ActionServices, realmId: number, streamId?: number): Promise<ArchiveTransactionRow[]> {
  return fetchArchiveTransactions(services.db.kysely, { realmId, ...(streamId === undefined ? {} : { streamId }) });
}

/**
 * Zulip's restore_data_from_archive for one transaction of the organization: its messages come
 * back with their receipts (flags as they were), reactions, submessages and uploads, and no
 * event is sent (as in Zulip; clients see them at their next fetch). A message still past its
 * channel's policy is archived again by the next pass unless the policy is changed first.
 * Precondition: the transaction belongs to the organization and is not restored yet.
 */
export async function doRestoreArchiveTransaction(services: ActionServices, transactionId: number): Promise<number[]> {
  return transaction(services.db, (tx) => restoreArchiveTransaction(tx, transactionId, now()));
}
