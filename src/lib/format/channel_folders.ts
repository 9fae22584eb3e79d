import type { ChannelFolderRow } from '../../db/repos/channel_folders.js';

/** Zulip's get_channel_folder_dict. */
export function formatChannelFolder(row: ChannelFolderRow): Record<string, unknown> {
  return {
    id: Number(row.id),
    name: row.name,
    description: row.description,
    rendered_description: row.rendered_description,
    date_created: Number(row.date_created),
    creator_id: row.creator_id === null ? null : Number(row.creator_id),
    is_archived: !!row.is_archived,
    order: Number(row.folder_order),
  };
}
