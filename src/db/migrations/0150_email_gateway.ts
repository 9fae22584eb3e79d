import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * The email gateway's addresses: Zulip's ChannelEmailAddress (one token per channel, creator
 * and sender, made by GET /streams/{id}/email_address) and MissedMessageEmailAddress (one
 * token per notification email, replying into the message's conversation).
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('channel_email_addresses')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('channel_id', 'bigint', (c) => c.notNull())
    .addColumn('creator_id', 'bigint')
    .addColumn('sender_id', 'bigint', (c) => c.notNull())
    .addColumn('email_token', 'text', (c) => c.notNull())
    .addColumn('date_created', 'bigint', (c) => c.notNull())
    .addColumn('deactivated', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('channel_email_addresses_token').unique().on('channel_email_addresses').column('email_token').execute();
  await db.schema
    .createIndex('channel_email_addresses_channel_creator_sender')
    .unique()
    .on('channel_email_addresses')
    .columns(['channel_id', 'creator_id', 'sender_id'])
    .execute();
  await db.schema
    .createTable('missed_message_email_addresses')
    .addColumn('id', id, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('message_id', 'bigint', (c) => c.notNull())
    .addColumn('user_id', 'bigint', (c) => c.notNull())
    .addColumn('email_token', 'text', (c) => c.notNull())
    .addColumn('timestamp', 'bigint', (c) => c.notNull())
    .addColumn('times_used', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('missed_message_email_addresses_token').unique().on('missed_message_email_addresses').column('email_token').execute();
}
