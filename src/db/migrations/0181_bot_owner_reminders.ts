import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * When each bot's owner was last told about a misconfigured integration (Zulip keeps it in the
 * bot's UserProfile.last_reminder), so a broken webhook sends its owner at most one notice a
 * minute, whichever process takes the requests. A table of its own keeps the cached user rows
 * out of it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('bot_owner_reminders')
    .addColumn('bot_id', 'bigint', (c) => c.primaryKey())
    .addColumn('last_reminder', 'bigint', (c) => c.notNull())
    .execute();
}
