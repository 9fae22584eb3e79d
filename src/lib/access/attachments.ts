import type { Tx } from '../../db/index.js';
import type { Realm, User } from '../../db/tables.js';
import { fetchAttachmentByPathId, fetchAttachmentMessageIds, type AttachmentRow } from '../../db/repos/attachments.js';
import { accessMessages } from './messages.js';

/**
 * Zulip's validate_attachment_request: an upload is readable by its owner and by anyone who
 * may read a message linking to it. Returns the attachment, null when the user may not read
 * it, or undefined when there is no such upload in this realm (404 rather than 403).
 */
export async function accessAttachment(db: Tx, realm: Realm, user: User | null, pathId: string): Promise<AttachmentRow | null | undefined> {
  const attachment = await fetchAttachmentByPathId(db, pathId);
  if (!attachment || attachment.realm_id !== realm.id) return undefined;
  if (!user) return null;
  if (attachment.owner_id === user.id) return attachment;
  const messageIds = (await fetchAttachmentMessageIds(db, [attachment.id])).get(attachment.id) ?? [];
  if (messageIds.length === 0) return null;
  return (await accessMessages(db, realm, user, messageIds)).length > 0 ? attachment : null;
}

/**
 * The uploads a sender may link from a message (Zulip's claim_attachment): their own, and
 * others' uploads they can already read; links to anything else are left unclaimed.
 */
export async function claimableAttachments(db: Tx, realm: Realm, sender: User, candidates: readonly AttachmentRow[]): Promise<AttachmentRow[]> {
  const out: AttachmentRow[] = [];
  for (const a of candidates) {
    if (a.owner_id === sender.id || (await accessAttachment(db, realm, sender, a.path_id))) out.push(a);
  }
  return out;
}
