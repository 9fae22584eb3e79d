import type { Tx } from '../index.js';
import type { AuthLoginStateTable } from '../tables.js';

export async function insertAuthLoginState(db: Tx, row: AuthLoginStateTable): Promise<void> {
  await db.deleteFrom('auth_login_states').where('expires', '<', row.expires - 86_400).execute();
  await db.insertInto('auth_login_states').values(row).execute();
}

export async function fetchAuthLoginState(db: Tx, id: string, kind: string): Promise<AuthLoginStateTable | undefined> {
  return db.selectFrom('auth_login_states').selectAll().where('id', '=', id).where('kind', '=', kind).executeTakeFirst();
}

/** Deletes the row and returns it, so that of two concurrent callers only one finishes the login. */
export async function takeAuthLoginState(db: Tx, id: string, kind: string): Promise<AuthLoginStateTable | undefined> {
  return db.deleteFrom('auth_login_states').where('id', '=', id).where('kind', '=', kind).returningAll().executeTakeFirst();
}
