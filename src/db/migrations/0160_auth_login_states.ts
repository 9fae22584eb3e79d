import type { Kysely } from 'kysely';
import type { Dialect } from '../index.js';

/**
 * Logins in progress that span several requests, so any process can finish them: an OpenID
 * Connect authorization request (its state, nonce and PKCE verifier until the provider calls
 * back) and a password login waiting for its second factor. Rows are taken (deleted) when used.
 * `id` is the SHA-256 of the token the browser holds, so a database leak finishes no login.
 */
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('auth_login_states')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('realm_id', 'bigint', (c) => c.notNull())
    .addColumn('user_id', 'bigint')
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('expires', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('auth_login_states_expires').on('auth_login_states').column('expires').execute();
}
