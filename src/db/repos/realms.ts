import type { Tx } from '../index.js';
import type { Realm } from '../tables.js';

export async function fetchRealmByStringId(db: Tx, stringId: string): Promise<Realm | undefined> {
  return db.selectFrom('realms').selectAll().where('string_id', '=', stringId).executeTakeFirst();
}

export async function fetchRealmById(db: Tx, id: number): Promise<Realm | undefined> {
  return db.selectFrom('realms').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertRealm(
  db: Tx,
  row: { string_id: string; name: string; description?: string; date_created: number; settings?: string },
): Promise<Realm> {
  return db.insertInto('realms').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateRealmRow(
  db: Tx,
  realmId: number,
  changes: Partial<
    Pick<
      Realm,
      'name' | 'description' | 'deactivated' | 'settings' | 'icon_source' | 'icon_version' | 'logo_source' | 'logo_version' | 'night_logo_source' | 'night_logo_version'
    >
  >,
): Promise<void> {
  await db.updateTable('realms').set(changes).where('id', '=', realmId).execute();
}

export async function countRealms(db: Tx): Promise<number> {
  const r = await db.selectFrom('realms').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function fetchActiveRealms(db: Tx): Promise<Realm[]> {
  return db.selectFrom('realms').selectAll().where('deactivated', '=', 0).orderBy('id').execute();
}

/** Every organization with its number of active human users, in ID order (`parley list-organizations`). */
export async function fetchRealmsWithUserCounts(db: Tx): Promise<(Realm & { active_users: number })[]> {
  const rows = await db
    .selectFrom('realms')
    .selectAll('realms')
    .select((eb) =>
      eb
        .selectFrom('users')
        .select((e) => e.fn.countAll<number>().as('n'))
        .whereRef('users.realm_id', '=', 'realms.id')
        .where('users.is_active', '=', 1)
        .where('users.is_bot', '=', 0)
        .as('active_users'),
    )
    .orderBy('realms.id')
    .execute();
  return rows.map((r) => ({ ...r, active_users: Number(r.active_users ?? 0) }));
}
