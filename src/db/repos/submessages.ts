import type { Tx } from '../index.js';
import type { SubmessageRow } from './messages.js';

export async function insertSubmessage(db: Tx, row: Omit<SubmessageRow, 'id'>): Promise<SubmessageRow> {
  const r = await db.insertInto('submessages').values(row).returningAll().executeTakeFirstOrThrow();
  return { ...r, id: Number(r.id), message_id: Number(r.message_id), sender_id: Number(r.sender_id) };
}

/** The content of the message's first `widget` submessage (the one sending it created). */
export async function fetchWidgetContent(db: Tx, messageId: number): Promise<string | undefined> {
  const r = await db.selectFrom('submessages').select('content').where('message_id', '=', messageId).where('msg_type', '=', 'widget').orderBy('id').limit(1).executeTakeFirst();
  return r?.content;
}

export async function hasSubmessageFrom(db: Tx, messageId: number, senderId: number): Promise<boolean> {
  const r = await db.selectFrom('submessages').select('id').where('message_id', '=', messageId).where('sender_id', '=', senderId).limit(1).executeTakeFirst();
  return r !== undefined;
}
