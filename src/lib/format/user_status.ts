import type { UserStatusRow } from '../../db/repos/user_status.js';

/** zulip.yaml's user status object: only the parts that are set (Zulip's format_user_status). */
export interface UserStatusDict {
  away?: true;
  status_text?: string;
  emoji_name?: string;
  emoji_code?: string;
  reaction_type?: string;
}

export function formatUserStatus(row: Pick<UserStatusRow, 'status_text' | 'emoji_name' | 'emoji_code' | 'reaction_type'> | undefined, presenceEnabled: boolean): UserStatusDict {
  const out: UserStatusDict = {};
  // `away` is the legacy view of the presence_enabled setting.
  if (!presenceEnabled) out.away = true;
  if (row?.status_text) out.status_text = row.status_text;
  if (row?.emoji_name) {
    out.emoji_name = row.emoji_name;
    out.emoji_code = row.emoji_code;
    out.reaction_type = row.reaction_type;
  }
  return out;
}
