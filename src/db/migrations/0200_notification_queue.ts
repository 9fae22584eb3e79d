import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * The durable notification queue. `notification_jobs` has one row per sent message, written in
 * the message's own transaction; a worker turns it into `notification_outbox` rows (one per user
 * to notify by push or email, Zulip's missedmessage queues and ScheduledMessageNotificationEmail)
 * and deletes the job in one transaction. Outbox rows are delivered when due and then deleted.
 * `claimed_until` is the lease a process holds on a row while it works on it, so that with
 * several processes each row is worked on by one; a process that dies leaves the lease to lapse.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('notification_jobs')
    .addColumn('message_id', 'bigint', (c) => c.primaryKey())
    .addColumn('due_at', 'bigint', (c) => c.notNull())
    .addColumn('claimed_until', 'bigint')
    .execute();
  await db.schema.createIndex('notification_jobs_due').on('notification_jobs').column('due_at').execute();
  await db.schema
    .createTable('notification_outbox')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('user_id', 'bigint', (c) => c.notNull())
    .addColumn('message_id', 'bigint', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('due_at', 'bigint', (c) => c.notNull())
    .addColumn('claimed_until', 'bigint')
    .execute();
  await db.schema.createIndex('notification_outbox_due').on('notification_outbox').columns(['kind', 'due_at']).execute();
  await db.schema.createIndex('notification_outbox_user').on('notification_outbox').columns(['user_id', 'kind']).execute();
}
