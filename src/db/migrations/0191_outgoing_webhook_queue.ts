import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * The durable outgoing-webhook queue (Zulip's outgoing_webhooks queue): one row per bot a sent
 * message triggers, written in the message's own transaction, deleted in the transaction of the
 * bot's reply (or once the delivery needs none). `failed_tries` counts timeouts and connection
 * errors (Zulip's failed_tries); `claimed_until` is the lease of the process delivering it.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('outgoing_webhook_jobs')
    .addColumn('id', dialect === 'postgres' ? 'bigserial' : 'integer', (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('message_id', 'bigint', (c) => c.notNull())
    .addColumn('bot_id', 'bigint', (c) => c.notNull())
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('message_url', 'text', (c) => c.notNull())
    .addColumn('failed_tries', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('claimed_until', 'bigint')
    .execute();
}
