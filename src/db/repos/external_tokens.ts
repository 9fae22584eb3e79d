import type { Tx } from '../index.js';

export async function fetchExternalToken(db: Tx, userId: number, provider: string): Promise<string | undefined> {
  const row = await db.selectFrom('external_tokens').select('token').where('user_id', '=', userId).where('provider', '=', provider).executeTakeFirst();
  return row?.token;
}

export async function upsertExternalToken(db: Tx, row: { user_id: number; provider: string; token: string; date_created: number }): Promise<void> {
  await db
    .insertInto('external_tokens')
    .values(row)
    .onConflict((oc) => oc.columns(['user_id', 'provider']).doUpdateSet({ token: row.token, date_created: row.date_created }))
    .execute();
}

export async function deleteExternalToken(db: Tx, userId: number, provider: string): Promise<void> {
  await db.deleteFrom('external_tokens').where('user_id', '=', userId).where('provider', '=', provider).execute();
}
