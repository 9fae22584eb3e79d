import type { Kysely } from 'kysely';

/**
 * The organization's wide logo, for the light and the dark theme: Zulip's logo_source and
 * night_logo_source ('D' the default, 'U' uploaded) and the versions that change their URLs.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const prefix of ['logo', 'night_logo']) {
    await db.schema.alterTable('realms').addColumn(`${prefix}_source`, 'text', (c) => c.notNull().defaultTo('D')).execute();
    await db.schema.alterTable('realms').addColumn(`${prefix}_version`, 'integer', (c) => c.notNull().defaultTo(1)).execute();
  }
}
