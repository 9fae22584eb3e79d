import type { Selectable } from 'kysely';
import type { Dialect, Tx } from '../index.js';
import type { OutgoingWebhookJobTable } from '../tables.js';

export type OutgoingWebhookJobRow = Selectable<OutgoingWebhookJobTable>;

export async function insertOutgoingWebhookJobs(db: Tx, rows: Omit<OutgoingWebhookJobRow, 'id' | 'failed_tries' | 'claimed_until'>[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto('outgoing_webhook_jobs').values(rows).execute();
}

/**
 * Takes up to `limit` rows no live process holds (oldest first) until `until`, and returns
 * them. On PostgreSQL rows another transaction is taking are skipped; a SQLite writing
 * transaction excludes every other one already.
 */
export async function claimOutgoingWebhookJobs(db: Tx, dialect: Dialect, nowSeconds: number, until: number, limit: number): Promise<OutgoingWebhookJobRow[]> {
  let free = db
    .selectFrom('outgoing_webhook_jobs')
    .select('id')
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', nowSeconds)]))
    .orderBy('id')
    .limit(limit);
  if (dialect === 'postgres') free = free.forUpdate().skipLocked();
  const rows = await db.updateTable('outgoing_webhook_jobs').set({ claimed_until: until }).where('id', 'in', free).returningAll().execute();
  return rows.sort((a, b) => a.id - b.id);
}

/** Deletes the row if this claim still holds it; whether it did. */
export async function deleteClaimedOutgoingWebhookJob(db: Tx, id: number, claimedUntil: number): Promise<boolean> {
  const r = await db.deleteFrom('outgoing_webhook_jobs').where('id', '=', id).where('claimed_until', '=', claimedUntil).executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}

/** Counts a failed try and gives the row up for the next try, if this claim still holds it; whether it did. */
export async function retryClaimedOutgoingWebhookJob(db: Tx, id: number, claimedUntil: number, failedTries: number): Promise<boolean> {
  const r = await db
    .updateTable('outgoing_webhook_jobs')
    .set({ failed_tries: failedTries, claimed_until: null })
    .where('id', '=', id)
    .where('claimed_until', '=', claimedUntil)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}
