import { transaction } from '../db/index.js';
import type { User } from '../db/tables.js';
import { deleteBotStorage, fetchBotStorage, upsertBotStorage } from '../db/repos/bot_storage.js';
import { badRequest } from '../errors.js';
import type { ActionServices } from '../services.js';

/** Zulip's USER_STATE_SIZE_LIMIT: characters of keys plus values per user. */
export const BOT_STORAGE_SIZE_LIMIT = 10_000_000;

const entrySize = (key: string, value: string): number => key.length + value.length;

/** Zulip's get_storage: the named keys (all when none are named); a missing one is an error. */
export async function fetchBotStorageValues(services: ActionServices, user: User, keys: readonly string[] | undefined): Promise<Record<string, string>> {
  const wanted = keys && keys.length ? keys : undefined;
  const stored = await fetchBotStorage(services.db.kysely, user.id, wanted);
  if (wanted && wanted.some((k) => !stored.has(k))) throw badRequest('Key does not exist.');
  return Object.fromEntries(stored);
}

/** Zulip's set_bot_storage: all entries or none, within BOT_STORAGE_SIZE_LIMIT. */
export async function doSetBotStorage(services: ActionServices, user: User, entries: readonly [string, string][]): Promise<void> {
  await transaction(services.db, async (tx) => {
    const current = await fetchBotStorage(tx, user.id);
    let size = 0;
    for (const [k, v] of current) size += entrySize(k, v);
    for (const [k, v] of new Map(entries)) size += entrySize(k, v) - (current.has(k) ? entrySize(k, current.get(k)!) : 0);
    if (size > BOT_STORAGE_SIZE_LIMIT) {
      throw badRequest(`Request exceeds storage limit by ${size - BOT_STORAGE_SIZE_LIMIT} characters. The limit is ${BOT_STORAGE_SIZE_LIMIT} characters.`);
    }
    await upsertBotStorage(tx, user.id, entries);
  });
}

/** Zulip's remove_storage: the named keys (all when none are named); any missing key fails the whole request. */
export async function doRemoveBotStorage(services: ActionServices, user: User, keys: readonly string[] | undefined): Promise<void> {
  await transaction(services.db, async (tx) => {
    const current = await fetchBotStorage(tx, user.id);
    const doomed = keys && keys.length ? [...new Set(keys)] : [...current.keys()];
    if (doomed.some((k) => !current.has(k))) throw badRequest('Key does not exist.');
    await deleteBotStorage(tx, user.id, doomed);
  });
}
