import type { Kysely } from 'kysely';

/**
 * End-to-end encrypted push (Zulip's PushDevice): the key the device gave for encrypting its
 * notifications (Base64, its first byte naming the cryptosystem) and the kind of the token
 * registered with the push service under `push_token_id` or `pending_push_token_id`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('client_devices').addColumn('push_key', 'text').execute();
  await db.schema.alterTable('client_devices').addColumn('push_token_kind', 'text').execute();
}
