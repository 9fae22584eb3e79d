import type { Selectable } from 'kysely';
import type { Tx } from '../index.js';
import type { RealmDomainTable } from '../tables.js';

export type RealmDomainRow = Selectable<RealmDomainTable>;

/** The realm's allowed domains, oldest first (Zulip lists them in creation order). */
export async function fetchRealmDomains(db: Tx, realmId: number): Promise<RealmDomainRow[]> {
  return db.selectFrom('realm_domains').selectAll().where('realm_id', '=', realmId).orderBy('id').execute();
}

export async function fetchRealmDomain(db: Tx, realmId: number, domain: string): Promise<RealmDomainRow | undefined> {
  return db.selectFrom('realm_domains').selectAll().where('realm_id', '=', realmId).where('domain', '=', domain).executeTakeFirst();
}

export async function insertRealmDomain(db: Tx, row: { realm_id: number; domain: string; allow_subdomains: number }): Promise<RealmDomainRow> {
  return db.insertInto('realm_domains').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateRealmDomainRow(db: Tx, id: number, allowSubdomains: number): Promise<RealmDomainRow> {
  return db.updateTable('realm_domains').set({ allow_subdomains: allowSubdomains }).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function deleteRealmDomainRow(db: Tx, id: number): Promise<void> {
  await db.deleteFrom('realm_domains').where('id', '=', id).execute();
}

export async function countRealmDomains(db: Tx, realmId: number): Promise<number> {
  const r = await db
    .selectFrom('realm_domains')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('realm_id', '=', realmId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
