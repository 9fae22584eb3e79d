import type { Tx, Dialect } from '../index.js';
import type { Realm, User } from '../tables.js';

/**
 * Reads the realm row inside a transaction that is about to rewrite its settings JSON;
 * on PostgreSQL the row is locked so concurrent updates do not lose each other's changes
 * (SQLite serializes writers already).
 */
export async function fetchRealmForUpdate(tx: Tx, dialect: Dialect, realmId: number): Promise<Realm> {
  let q = tx.selectFrom('realms').selectAll().where('id', '=', realmId);
  if (dialect === 'postgres') q = q.forUpdate();
  return q.executeTakeFirstOrThrow();
}

export async function fetchUserForUpdate(tx: Tx, dialect: Dialect, userId: number): Promise<User> {
  let q = tx.selectFrom('users').selectAll().where('id', '=', userId);
  if (dialect === 'postgres') q = q.forUpdate();
  return q.executeTakeFirstOrThrow();
}

export async function fetchInactiveUserIds(db: Tx, realmId: number): Promise<number[]> {
  const rows = await db.selectFrom('users').select('id').where('realm_id', '=', realmId).where('is_active', '=', 0).execute();
  return rows.map((r) => r.id);
}

export async function fetchLinkifiers(db: Tx, realmId: number): Promise<{ id: number; pattern: string; url_template: string }[]> {
  return db
    .selectFrom('linkifiers')
    .select(['id', 'pattern', 'url_template'])
    .where('realm_id', '=', realmId)
    .orderBy('order')
    .orderBy('id')
    .execute();
}

/** Whether the realm has an active web-public channel (for realm_web_public_access_enabled). */
export async function hasWebPublicStreams(db: Tx, realmId: number): Promise<boolean> {
  const row = await db
    .selectFrom('streams')
    .select('id')
    .where('realm_id', '=', realmId)
    .where('is_web_public', '=', 1)
    .where('deactivated', '=', 0)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
