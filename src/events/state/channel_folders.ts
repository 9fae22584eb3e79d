import { fetchRealmChannelFolders } from '../../db/repos/channel_folders.js';
import { formatChannelFolder } from '../../lib/format/channel_folders.js';
import type { StateFetcher } from './types.js';

/** POST /register key channel_folders: every folder of the organization, archived ones included, in order. */
export const fetchChannelFoldersState: StateFetcher = async ({ services, realm, want }) => {
  if (!want('channel_folders')) return {};
  return { channel_folders: (await fetchRealmChannelFolders(services.db.kysely, realm.id, true)).map(formatChannelFolder) };
};
