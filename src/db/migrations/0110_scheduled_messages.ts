import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Scheduled messages and reminders (Zulip's ScheduledMessage, both delivery types in one table).
 * `claimed_until` is the lease a process takes on a due row before it tries to deliver it, so
 * that with several processes only one works on a row; delivery itself marks the row delivered
 * in the same transaction as the message it sends, which is what makes it exactly once.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('scheduled_messages')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('sender_id', 'bigint', (c) => c.notNull())
    .addColumn('delivery_type', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('stream_id', 'bigint')
    .addColumn('topic', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('to_user_ids', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('rendered_content', 'text', (c) => c.notNull())
    .addColumn('scheduled_timestamp', 'bigint', (c) => c.notNull())
    .addColumn('read_by_sender', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('sending_client', 'text', (c) => c.notNull().defaultTo('Internal'))
    .addColumn('delivered', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failure_message', 'text')
    .addColumn('delivered_message_id', 'bigint')
    .addColumn('reminder_target_message_id', 'bigint')
    .addColumn('reminder_note', 'text')
    .addColumn('claimed_until', 'bigint')
    .execute();
  await db.schema.createIndex('scheduled_messages_sender').on('scheduled_messages').columns(['sender_id', 'delivery_type']).execute();
  await db.schema.createIndex('scheduled_messages_due').on('scheduled_messages').columns(['delivered', 'failed', 'scheduled_timestamp']).execute();
}
