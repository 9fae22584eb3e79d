import { sql } from 'kysely';
import type { Tx } from '../index.js';

export interface UserMessageRow {
  user_id: number;
  message_id: number;
  flags: number;
}

/** Rows are inserted in chunks so huge channels stay under the databases' parameter limits. */
const INSERT_CHUNK = 5000;

/** One multi-row INSERT per chunk of 5000 recipients. */
export async function bulkInsertUserMessages(db: Tx, rows: readonly UserMessageRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    await db.insertInto('user_messages').values(rows.slice(i, i + INSERT_CHUNK)).execute();
  }
}

/** The caller's flag bits for each of these messages that they have a row for. */
export async function fetchUserMessageFlags(db: Tx, userId: number, messageIds: readonly number[]): Promise<Map<number, number>> {
  if (messageIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('user_messages')
    .select(['message_id', 'flags'])
    .where('user_id', '=', userId)
    .where('message_id', 'in', [...messageIds])
    .execute();
  return new Map(rows.map((r) => [r.message_id, Number(r.flags)]));
}

/** Every recipient row of one message. */
export async function fetchMessageRecipients(db: Tx, messageId: number): Promise<UserMessageRow[]> {
  const rows = await db.selectFrom('user_messages').select(['user_id', 'message_id', 'flags']).where('message_id', '=', messageId).execute();
  return rows.map((r) => ({ ...r, flags: Number(r.flags) }));
}

/**
 * Sets (op 'add') or clears (op 'remove') `bit` on the caller's rows for these messages and
 * returns the IDs whose flag actually changed.
 */
export async function updateUserMessageFlag(
  db: Tx,
  userId: number,
  messageIds: readonly number[],
  bit: number,
  op: 'add' | 'remove',
): Promise<number[]> {
  if (messageIds.length === 0) return [];
  const changed: number[] = [];
  for (let i = 0; i < messageIds.length; i += INSERT_CHUNK) {
    const chunk = messageIds.slice(i, i + INSERT_CHUNK);
    const rows = await db
      .updateTable('user_messages')
      .set({ flags: op === 'add' ? sql<number>`flags | ${bit}` : sql<number>`flags & ${~bit}` })
      .where('user_id', '=', userId)
      .where('message_id', 'in', chunk)
      .where(op === 'add' ? sql<boolean>`(flags & ${bit}) = 0` : sql<boolean>`(flags & ${bit}) <> 0`)
      .returning('message_id')
      .execute();
    for (const r of rows) changed.push(r.message_id);
  }
  return changed.sort((a, b) => a - b);
}
