import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Tx } from '../index.js';
import type { ScheduledMessageTable } from '../tables.js';

export type ScheduledMessageRow = Selectable<ScheduledMessageTable>;

/** Zulip's ScheduledMessage.SEND_LATER and REMIND. */
export const SEND_LATER = 1;
export const REMIND = 2;

/** The user's undelivered scheduled messages (or reminders), failed ones included, soonest first. */
export async function fetchUndeliveredScheduledMessages(db: Tx, senderId: number, deliveryType: number): Promise<ScheduledMessageRow[]> {
  return db
    .selectFrom('scheduled_messages')
    .selectAll()
    .where('sender_id', '=', senderId)
    .where('delivery_type', '=', deliveryType)
    .where('delivered', '=', 0)
    .orderBy('scheduled_timestamp')
    .orderBy('id')
    .execute();
}

export async function fetchUserScheduledMessage(db: Tx, senderId: number, id: number, deliveryType: number): Promise<ScheduledMessageRow | undefined> {
  return db
    .selectFrom('scheduled_messages')
    .selectAll()
    .where('id', '=', id)
    .where('sender_id', '=', senderId)
    .where('delivery_type', '=', deliveryType)
    .executeTakeFirst();
}

export async function fetchScheduledMessageById(db: Tx, id: number): Promise<ScheduledMessageRow | undefined> {
  return db.selectFrom('scheduled_messages').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertScheduledMessage(db: Tx, row: Insertable<ScheduledMessageTable>): Promise<ScheduledMessageRow> {
  return db.insertInto('scheduled_messages').values(row).returningAll().executeTakeFirstOrThrow();
}

/** Updates a row that has not been delivered yet; undefined when it has been (or is gone). */
export async function updateUndeliveredScheduledMessage(
  db: Tx,
  id: number,
  changes: Updateable<ScheduledMessageTable>,
): Promise<ScheduledMessageRow | undefined> {
  return db.updateTable('scheduled_messages').set(changes).where('id', '=', id).where('delivered', '=', 0).returningAll().executeTakeFirst();
}

export async function deleteScheduledMessageRow(db: Tx, id: number): Promise<void> {
  await db.deleteFrom('scheduled_messages').where('id', '=', id).execute();
}

/** IDs of rows due at `at` that nobody is working on, oldest first. */
export async function fetchDueScheduledMessageIds(db: Tx, at: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('scheduled_messages')
    .select('id')
    .where('delivered', '=', 0)
    .where('failed', '=', 0)
    .where('scheduled_timestamp', '<=', at)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', at)]))
    .orderBy('scheduled_timestamp')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => Number(r.id));
}

/**
 * When the next pending row falls due after `after` (Unix seconds), or null when none will.
 * Rows already due but still pending (claimed by a process that died, say) are left out: they
 * must not hide a row falling due sooner than the next periodic pass.
 */
export async function fetchNextScheduledTimestamp(db: Tx, after: number): Promise<number | null> {
  const row = await db
    .selectFrom('scheduled_messages')
    .select((eb) => eb.fn.min('scheduled_timestamp').as('next'))
    .where('delivered', '=', 0)
    .where('failed', '=', 0)
    .where('scheduled_timestamp', '>', after)
    .executeTakeFirst();
  return row?.next === null || row?.next === undefined ? null : Number(row.next);
}

/**
 * Takes the lease on a due row for a delivery attempt: one UPDATE that succeeds for exactly one
 * process (PostgreSQL re-checks the WHERE clause after waiting for a concurrent claim's row
 * lock; SQLite has one writer). Returns the row, or undefined when someone else has it.
 */
export async function claimScheduledMessage(db: Tx, id: number, at: number, until: number): Promise<ScheduledMessageRow | undefined> {
  return db
    .updateTable('scheduled_messages')
    .set({ claimed_until: until })
    .where('id', '=', id)
    .where('delivered', '=', 0)
    .where('failed', '=', 0)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', at)]))
    .returningAll()
    .executeTakeFirst();
}

/**
 * Marks the row delivered inside the sending transaction, if the caller's claim still holds:
 * false when it was delivered, failed, edited (which drops the claim), deleted or claimed anew.
 */
export async function markScheduledMessageDelivered(db: Tx, id: number, messageId: number, claimedUntil: number): Promise<boolean> {
  const r = await db
    .updateTable('scheduled_messages')
    .set({ delivered: 1, delivered_message_id: messageId, claimed_until: null })
    .where('id', '=', id)
    .where('delivered', '=', 0)
    .where('failed', '=', 0)
    .where('claimed_until', '=', claimedUntil)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Marks a pending row failed; undefined when it was delivered or failed meanwhile. */
export async function markScheduledMessageFailed(db: Tx, id: number, failureMessage: string): Promise<ScheduledMessageRow | undefined> {
  return db
    .updateTable('scheduled_messages')
    .set({ failed: 1, failure_message: failureMessage, claimed_until: null })
    .where('id', '=', id)
    .where('delivered', '=', 0)
    .where('failed', '=', 0)
    .returningAll()
    .executeTakeFirst();
}
