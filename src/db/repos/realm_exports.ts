import type { Selectable } from 'kysely';
import type { Tx } from '../index.js';
import type { RealmExportTable } from '../tables.js';

export type RealmExportRow = Selectable<RealmExportTable>;

const num = (v: number | null): number | null => (v === null ? null : Number(v));

function parse(row: RealmExportRow): RealmExportRow {
  return {
    ...row,
    id: Number(row.id),
    realm_id: Number(row.realm_id),
    acting_user_id: num(row.acting_user_id),
    date_requested: Number(row.date_requested),
    date_started: num(row.date_started),
    date_succeeded: num(row.date_succeeded),
    date_failed: num(row.date_failed),
    date_deleted: num(row.date_deleted),
    claimed_until: num(row.claimed_until),
  };
}

export async function insertRealmExport(db: Tx, row: { realm_id: number; acting_user_id: number | null; export_type: string; date_requested: number }): Promise<RealmExportRow> {
  return parse(await db.insertInto('realm_exports').values(row).returningAll().executeTakeFirstOrThrow());
}

export async function fetchRealmExports(db: Tx, realmId: number): Promise<RealmExportRow[]> {
  return (await db.selectFrom('realm_exports').selectAll().where('realm_id', '=', realmId).orderBy('id').execute()).map(parse);
}

export async function fetchRealmExport(db: Tx, realmId: number, id: number): Promise<RealmExportRow | undefined> {
  const row = await db.selectFrom('realm_exports').selectAll().where('realm_id', '=', realmId).where('id', '=', id).executeTakeFirst();
  return row ? parse(row) : undefined;
}

/** Exports requested in the organization since `since` (Zulip's rate limit counts them). */
export async function countRealmExportsSince(db: Tx, realmId: number, since: number): Promise<number> {
  const row = await db
    .selectFrom('realm_exports')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('realm_id', '=', realmId)
    .where('date_requested', '>=', since)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Leases the oldest pending export whose lease is free or lapsed until `until`; undefined when
 * there is none. The conditional update makes the claim atomic across processes.
 */
export async function claimPendingRealmExport(db: Tx, nowSeconds: number, until: number): Promise<RealmExportRow | undefined> {
  for (;;) {
    const candidate = await db
      .selectFrom('realm_exports')
      .select(['id', 'claimed_until'])
      .where('date_succeeded', 'is', null)
      .where('date_failed', 'is', null)
      .where('date_deleted', 'is', null)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', nowSeconds)]))
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    if (!candidate) return undefined;
    const claimed = await db
      .updateTable('realm_exports')
      .set({ claimed_until: until })
      .where('id', '=', candidate.id)
      .where('date_succeeded', 'is', null)
      .where('date_failed', 'is', null)
      .where('date_deleted', 'is', null)
      .where((eb) => (candidate.claimed_until === null ? eb('claimed_until', 'is', null) : eb('claimed_until', '=', candidate.claimed_until)))
      .returningAll()
      .executeTakeFirst();
    if (claimed) return parse(claimed);
  }
}

export async function updateRealmExport(
  db: Tx,
  id: number,
  changes: Partial<Pick<RealmExportRow, 'date_started' | 'date_succeeded' | 'date_failed' | 'date_deleted' | 'export_path' | 'failure_message' | 'claimed_until'>>,
): Promise<void> {
  await db.updateTable('realm_exports').set(changes).where('id', '=', id).execute();
}

/** The pending exports' count, so a worker knows whether to look again soon. */
export async function countPendingRealmExports(db: Tx): Promise<number> {
  const row = await db
    .selectFrom('realm_exports')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('date_succeeded', 'is', null)
    .where('date_failed', 'is', null)
    .where('date_deleted', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Zulip's realm.get_human_admin_users(): the active administrators and owners who are people. */
export async function fetchHumanAdminIds(db: Tx, realmId: number): Promise<number[]> {
  const rows = await db
    .selectFrom('users')
    .select('id')
    .where('realm_id', '=', realmId)
    .where('is_active', '=', 1)
    .where('is_bot', '=', 0)
    .where('role', '<=', 200)
    .orderBy('id')
    .execute();
  return rows.map((r) => Number(r.id));
}

/** Every active person with their settings, for the consent list. */
export async function fetchConsentRows(db: Tx, realmId: number): Promise<{ id: number; settings: string; timezone: string }[]> {
  const rows = await db
    .selectFrom('users')
    .select(['id', 'settings', 'timezone'])
    .where('realm_id', '=', realmId)
    .where('is_active', '=', 1)
    .where('is_bot', '=', 0)
    .where('is_system_bot', '=', 0)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}
