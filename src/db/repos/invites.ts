import type { Insertable, Selectable } from 'kysely';
import type { Tx } from '../index.js';
import type { InviteTable } from '../tables.js';

export type Invite = Selectable<InviteTable>;

export const INVITE_PENDING = 0;
export const INVITE_USED = 1;
export const INVITE_REVOKED = 2;

export async function insertInvites(db: Tx, rows: Insertable<InviteTable>[]): Promise<Invite[]> {
  if (rows.length === 0) return [];
  return db.insertInto('invites').values(rows).returningAll().execute();
}

export async function fetchInvite(db: Tx, realmId: number, id: number, multiuse: boolean): Promise<Invite | undefined> {
  return db
    .selectFrom('invites')
    .selectAll()
    .where('realm_id', '=', realmId)
    .where('id', '=', id)
    .where('multiuse', '=', multiuse ? 1 : 0)
    .executeTakeFirst();
}

export async function fetchInviteByKey(db: Tx, key: string): Promise<Invite | undefined> {
  return db.selectFrom('invites').selectAll().where('key', '=', key).executeTakeFirst();
}

/** Pending, unexpired invitations; only those created by `referredBy` when given. */
export async function fetchPendingInvites(db: Tx, realmId: number, nowSeconds: number, referredBy?: number): Promise<Invite[]> {
  let q = db
    .selectFrom('invites')
    .selectAll()
    .where('realm_id', '=', realmId)
    .where('status', '=', INVITE_PENDING)
    .where((eb) => eb.or([eb('expiry', 'is', null), eb('expiry', '>', nowSeconds)]));
  if (referredBy !== undefined) q = q.where('referred_by', '=', referredBy);
  return q.orderBy('id').execute();
}

export async function countEmailInvitesSince(db: Tx, realmId: number, since: number): Promise<number> {
  const r = await db
    .selectFrom('invites')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('realm_id', '=', realmId)
    .where('multiuse', '=', 0)
    .where('date_created', '>=', since)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function updateInvite(db: Tx, id: number, changes: Partial<Pick<Invite, 'status' | 'date_created'>>): Promise<void> {
  await db.updateTable('invites').set(changes).where('id', '=', id).execute();
}

/** Accepting one email invitation settles every pending one for that address in the realm. */
export async function markEmailInvitesUsed(db: Tx, realmId: number, email: string): Promise<void> {
  await db
    .updateTable('invites')
    .set({ status: INVITE_USED })
    .where('realm_id', '=', realmId)
    .where('multiuse', '=', 0)
    .where('status', '=', INVITE_PENDING)
    .where('email', '=', email.toLowerCase())
    .execute();
}

export async function fetchRealmAdminIds(db: Tx, realmId: number): Promise<number[]> {
  const rows = await db
    .selectFrom('users')
    .select('id')
    .where('realm_id', '=', realmId)
    .where('is_active', '=', 1)
    .where('role', '<=', 200)
    .execute();
  return rows.map((r) => r.id);
}
