import type { AttachmentRow } from '../../db/repos/attachments.js';

/** zulip.yaml Attachment (feature level 472: message_ids; 443: create_time in seconds). */
export interface AttachmentDict {
  id: number;
  name: string;
  path_id: string;
  size: number;
  create_time: number;
  message_ids: number[];
}

export function formatAttachment(row: AttachmentRow, messageIds: readonly number[]): AttachmentDict {
  return {
    id: row.id,
    name: row.file_name,
    path_id: row.path_id,
    size: Number(row.size),
    create_time: Number(row.create_time),
    message_ids: [...messageIds],
  };
}
