import type { DraftRow } from '../../db/repos/drafts.js';

export type DraftType = '' | 'stream' | 'private';

export interface DraftDict {
  id: number;
  type: DraftType;
  to: number[];
  topic: string;
  content: string;
  timestamp: number;
}

/** A Draft object (GET /drafts, register's `drafts`, drafts events). */
export function formatDraft(row: DraftRow): DraftDict {
  return {
    id: row.id,
    type: row.type as DraftType,
    to: JSON.parse(row.to) as number[],
    topic: row.topic,
    content: row.content,
    timestamp: row.last_edit_time,
  };
}
