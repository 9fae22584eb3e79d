import { fetchRealmEmojiCached } from '../../db/cached.js';
import { formatRealmEmojiMap } from '../../lib/format/realm_emoji.js';
import type { StateFetcher } from './types.js';

/** POST /register key for realm_emoji: every custom emoji, deactivated ones included, by ID. */
export const fetchEmojiState: StateFetcher = async ({ services, realm, want }) => {
  if (!want('realm_emoji')) return {};
  return { realm_emoji: formatRealmEmojiMap(await fetchRealmEmojiCached(services.db.kysely, realm.id)) };
};
