import type { Kysely } from 'kysely';

/**
 * Zulip's system bots (Notification Bot, Welcome Bot) live in an internal realm; ours are
 * per-organization bot accounts flagged here, listed as cross_realm_bots, never as members.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('is_system_bot', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}
