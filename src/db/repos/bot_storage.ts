import type { Tx } from '../index.js';

/** A user's stored entries: all, or only these keys (missing keys are simply absent). */
export async function fetchBotStorage(db: Tx, botId: number, keys?: readonly string[]): Promise<Map<string, string>> {
  let q = db.selectFrom('bot_storage').select(['key', 'value']).where('bot_id', '=', botId);
  if (keys) {
    if (keys.length === 0) return new Map();
    q = q.where('key', 'in', [...keys]);
  }
  const rows = await q.orderBy('key').execute();
  return new Map(rows.map((r) => [r.key, r.value]));
}

export async function upsertBotStorage(db: Tx, botId: number, entries: readonly [string, string][]): Promise<void> {
  for (const [key, value] of entries) {
    await db
      .insertInto('bot_storage')
      .values({ bot_id: botId, key, value })
      .onConflict((oc) => oc.columns(['bot_id', 'key']).doUpdateSet({ value }))
      .execute();
  }
}

export async function deleteBotStorage(db: Tx, botId: number, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  await db.deleteFrom('bot_storage').where('bot_id', '=', botId).where('key', 'in', [...keys]).execute();
}
