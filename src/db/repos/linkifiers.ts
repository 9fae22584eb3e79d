import { sql } from 'kysely';
import type { Tx } from '../index.js';

export interface LinkifierRow {
  id: number;
  pattern: string;
  url_template: string;
}

export async function fetchLinkifierById(db: Tx, realmId: number, id: number): Promise<LinkifierRow | undefined> {
  return db.selectFrom('linkifiers').select(['id', 'pattern', 'url_template']).where('realm_id', '=', realmId).where('id', '=', id).executeTakeFirst();
}

/** Whether another linkifier of the realm has this exact pattern (Zulip's unique_together). */
export async function linkifierPatternExists(db: Tx, realmId: number, pattern: string, exceptId?: number): Promise<boolean> {
  let q = db.selectFrom('linkifiers').select('id').where('realm_id', '=', realmId).where('pattern', '=', pattern);
  if (exceptId !== undefined) q = q.where('id', '!=', exceptId);
  return (await q.executeTakeFirst()) !== undefined;
}

/** Appends a linkifier after the realm's last one. */
export async function insertLinkifier(db: Tx, realmId: number, pattern: string, urlTemplate: string): Promise<number> {
  const max = await db
    .selectFrom('linkifiers')
    .select(sql<number | string | null>`MAX("order")`.as('m'))
    .where('realm_id', '=', realmId)
    .executeTakeFirst();
  const order = max?.m === null || max?.m === undefined ? 0 : Number(max.m) + 1;
  const row = await db.insertInto('linkifiers').values({ realm_id: realmId, pattern, url_template: urlTemplate, order }).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

export async function updateLinkifierRow(db: Tx, id: number, pattern: string, urlTemplate: string): Promise<void> {
  await db.updateTable('linkifiers').set({ pattern, url_template: urlTemplate }).where('id', '=', id).execute();
}

export async function deleteLinkifierRow(db: Tx, id: number): Promise<void> {
  await db.deleteFrom('linkifiers').where('id', '=', id).execute();
}

export async function setLinkifierOrder(db: Tx, id: number, order: number): Promise<void> {
  await db.updateTable('linkifiers').set({ order }).where('id', '=', id).execute();
}
