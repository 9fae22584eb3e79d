import type { Tx } from '../index.js';

/** Returns the named secret, creating it with `generate()` if no process has yet. */
export async function fetchOrCreateServerSecret(db: Tx, name: string, generate: () => string): Promise<string> {
  const existing = await db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirst();
  if (existing) return existing.value;
  await db.insertInto('server_secrets').values({ name, value: generate() }).onConflict((oc) => oc.column('name').doNothing()).execute();
  const row = await db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}
