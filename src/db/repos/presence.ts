import { sql } from 'kysely';
import { transaction, type Database, type Tx } from '../index.js';

export interface PresenceRow {
  user_id: number;
  last_active_time: number | null;
  last_connected_time: number | null;
  last_update_id: number;
}

/** A presence row with what formatting needs from its user. */
export interface RealmPresenceRow extends PresenceRow {
  email: string;
  date_joined: number;
}

export async function fetchPresence(db: Tx, userId: number): Promise<PresenceRow | undefined> {
  return db
    .selectFrom('presence')
    .select(['user_id', 'last_active_time', 'last_connected_time', 'last_update_id'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/** Takes the organization's next presence update ID (creating its counter on first use). */
export async function nextPresenceUpdateId(db: Tx, realmId: number): Promise<number> {
  const row = await db
    .insertInto('presence_sequences')
    .values({ realm_id: realmId, last_update_id: 1 })
    .onConflict((oc) => oc.column('realm_id').doUpdateSet({ last_update_id: sql<number>`presence_sequences.last_update_id + 1` }))
    .returning('last_update_id')
    .executeTakeFirstOrThrow();
  return Number(row.last_update_id);
}

export async function upsertPresence(
  db: Tx,
  row: { user_id: number; realm_id: number; last_active_time: number | null; last_connected_time: number; last_update_id: number },
): Promise<void> {
  await db
    .insertInto('presence')
    .values(row)
    .onConflict((oc) =>
      oc.column('user_id').doUpdateSet({
        last_active_time: row.last_active_time,
        last_connected_time: row.last_connected_time,
        last_update_id: row.last_update_id,
      }),
    )
    .execute();
}

/**
 * Presence of the organization's active human users: those changed after `afterUpdateId`
 * when given, and (for an initial fetch) only those connected since `connectedSince`.
 */
type PresenceWrite = { user_id: number; realm_id: number; last_active_time: number | null; last_connected_time: number };

/**
 * Writes a user's presence under the organization's next presence update ID. The ID is taken
 * under the organization's presence-sequence row, so changes commit in update-ID order (what
 * readers of "changes since N" rely on); every report of the organization waits for that
 * row lock. On PostgreSQL both writes are one statement, so the lock is held only for that
 * statement and its commit, not across round trips (with 2,000 people reporting, lock waits
 * had filled the connection pool and every other request queued behind them).
 */
export async function recordPresence(db: Database, row: PresenceWrite): Promise<number> {
  if (db.dialect === 'postgres') {
    const { rows } = await sql<{ last_update_id: number }>`
      WITH seq AS (
        INSERT INTO presence_sequences (realm_id, last_update_id) VALUES (${row.realm_id}, 1)
        ON CONFLICT (realm_id) DO UPDATE SET last_update_id = presence_sequences.last_update_id + 1
        RETURNING last_update_id
      )
      INSERT INTO presence (user_id, realm_id, last_active_time, last_connected_time, last_update_id)
      SELECT ${row.user_id}::bigint, ${row.realm_id}::bigint, ${row.last_active_time}::bigint, ${row.last_connected_time}::bigint, last_update_id FROM seq
      ON CONFLICT (user_id) DO UPDATE SET last_active_time = excluded.last_active_time,
        last_connected_time = excluded.last_connected_time, last_update_id = excluded.last_update_id
      RETURNING last_update_id`.execute(db.kysely);
    return Number(rows[0]!.last_update_id);
  }
  return transaction(db, async (tx) => {
    const updateId = await nextPresenceUpdateId(tx, row.realm_id);
    await upsertPresence(tx, { ...row, last_update_id: updateId });
    return updateId;
  });
}

export async function fetchRealmPresences(
  db: Tx,
  realmId: number,
  opts: { afterUpdateId?: number; connectedSince?: number },
): Promise<RealmPresenceRow[]> {
  let q = presenceRows(db)
    .where('presence.realm_id', '=', realmId)
    .where('users.is_active', '=', 1)
    .where('users.is_bot', '=', 0);
  if (opts.afterUpdateId !== undefined) q = q.where('presence.last_update_id', '>', opts.afterUpdateId);
  if (opts.connectedSince !== undefined) q = q.where('presence.last_connected_time', '>=', opts.connectedSince);
  return q.orderBy('presence.user_id').execute();
}

/** Presence rows of an organization's people (bots never report) changed after `afterUpdateId`, whatever their user's state. */
export async function fetchPresenceChangesSince(db: Tx, realmId: number, afterUpdateId: number): Promise<RealmPresenceRow[]> {
  return presenceRows(db)
    .where('presence.realm_id', '=', realmId)
    .where('presence.last_update_id', '>', afterUpdateId)
    .where('users.is_bot', '=', 0)
    .execute();
}

export async function fetchUserPresenceRow(db: Tx, userId: number): Promise<RealmPresenceRow | undefined> {
  return presenceRows(db).where('presence.user_id', '=', userId).executeTakeFirst();
}

/** Presence rows with the user fields a RealmPresenceRow carries. */
function presenceRows(db: Tx) {
  return db
    .selectFrom('presence')
    .innerJoin('users', 'users.id', 'presence.user_id')
    .select([
      'presence.user_id',
      'presence.last_active_time',
      'presence.last_connected_time',
      'presence.last_update_id',
      'users.email',
      'users.date_joined',
    ]);
}
