import type { Kysely } from 'kysely';

/**
 * When each user was last sent a digest email (Zulip's USER_DIGEST_EMAIL_CREATED audit rows):
 * the row is claimed with one statement before the email goes out, so that with several
 * processes each user gets one digest per digest day.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('digest_emails_sent')
    .addColumn('user_id', 'bigint', (c) => c.primaryKey())
    .addColumn('sent_at', 'bigint', (c) => c.notNull())
    .execute();
}
