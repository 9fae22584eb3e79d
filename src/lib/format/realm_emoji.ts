import type { RealmEmojiRow } from '../../db/repos/realm_emoji.js';

/** zulip.yaml RealmEmoji: one custom emoji as GET /realm/emoji and `realm_emoji` carry it. */
export interface RealmEmojiDict {
  id: string;
  name: string;
  source_url: string;
  /** Non-null only for animated images; we keep no separate still frame, so always null. */
  still_url: string | null;
  deactivated: boolean;
  author_id: number | null;
}

/** The image's path relative to the organization URL (served by the uploads routes). */
export function realmEmojiSourceUrl(row: Pick<RealmEmojiRow, 'realm_id' | 'file_name'>): string {
  return `/user_avatars/${row.realm_id}/emoji/images/${row.file_name}`;
}

export function formatRealmEmoji(row: RealmEmojiRow): RealmEmojiDict {
  return {
    id: String(row.id),
    name: row.name,
    source_url: realmEmojiSourceUrl(row),
    still_url: null,
    deactivated: row.deactivated === 1,
    author_id: row.author_id,
  };
}

/** The object keyed by emoji ID that GET /realm/emoji, register and `realm_emoji` events use. */
export function formatRealmEmojiMap(rows: readonly RealmEmojiRow[]): Record<string, RealmEmojiDict> {
  return Object.fromEntries(rows.map((r) => [String(r.id), formatRealmEmoji(r)]));
}
