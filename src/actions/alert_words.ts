import { transaction } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { deleteAlertWords, fetchUserAlertWords, insertAlertWords } from '../db/repos/alert_words.js';
import type { ActionServices } from '../services.js';

/** Zulip's clean_alert_words: surrounding whitespace dropped, empty words ignored. */
export function cleanAlertWords(words: readonly string[]): string[] {
  return words.map((w) => w.trim()).filter((w) => w !== '');
}

/**
 * Zulip's add_user_alert_words: words already present (case-insensitively) are skipped, the
 * first spelling of each new word is kept. Returns the whole new list and sends it to the
 * user's clients as an `alert_words` event.
 */
export async function doAddAlertWords(services: ActionServices, realm: Realm, user: User, words: readonly string[]): Promise<string[]> {
  return transaction(services.db, async (tx, afterCommit) => {
    const existing = new Set((await fetchUserAlertWords(tx, user.id)).map((w) => w.toLowerCase()));
    const fresh = new Map<string, string>();
    for (const w of words) if (!existing.has(w.toLowerCase()) && !fresh.has(w.toLowerCase())) fresh.set(w.toLowerCase(), w);
    await insertAlertWords(tx, user.id, [...fresh.values()]);
    const all = await fetchUserAlertWords(tx, user.id);
    afterCommit(() => services.events.send(realm.id, { type: 'alert_words', alert_words: all }, [user.id]));
    return all;
  });
}

/** Zulip's remove_user_alert_words: case-insensitive; unknown words are ignored. */
export async function doRemoveAlertWords(services: ActionServices, realm: Realm, user: User, words: readonly string[]): Promise<string[]> {
  return transaction(services.db, async (tx, afterCommit) => {
    await deleteAlertWords(tx, user.id, words);
    const all = await fetchUserAlertWords(tx, user.id);
    afterCommit(() => services.events.send(realm.id, { type: 'alert_words', alert_words: all }, [user.id]));
    return all;
  });
}
