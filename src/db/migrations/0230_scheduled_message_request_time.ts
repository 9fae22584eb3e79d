import type { Kysely } from 'kysely';

/**
 * When a scheduled message or reminder was asked for (Zulip's ScheduledMessage.request_timestamp),
 * which data exports carry; rows from before this migration have none.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('scheduled_messages').addColumn('request_timestamp', 'bigint').execute();
}
