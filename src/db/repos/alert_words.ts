import { sql } from 'kysely';
import type { Tx } from '../index.js';

/** A user's alert words, in a stable (alphabetical) order. */
export async function fetchUserAlertWords(db: Tx, userId: number): Promise<string[]> {
  const rows = await db.selectFrom('alert_words').select('word').where('user_id', '=', userId).orderBy('word').execute();
  return rows.map((r) => r.word);
}

export async function insertAlertWords(db: Tx, userId: number, words: readonly string[]): Promise<void> {
  if (words.length === 0) return;
  await db
    .insertInto('alert_words')
    .values(words.map((word) => ({ user_id: userId, word })))
    .onConflict((oc) => oc.columns(['user_id', 'word']).doNothing())
    .execute();
}

/** Removes words case-insensitively (alert words match regardless of case). */
export async function deleteAlertWords(db: Tx, userId: number, words: readonly string[]): Promise<void> {
  if (words.length === 0) return;
  await db
    .deleteFrom('alert_words')
    .where('user_id', '=', userId)
    .where(sql`lower(word)`, 'in', words.map((w) => w.toLowerCase()))
    .execute();
}
