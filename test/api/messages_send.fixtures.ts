import type { Stream, User } from '../../src/db/tables.js';
import { now } from '../../src/db/index.js';
import type { TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import type { ApiClient } from '../helpers/client.js';

/** System group IDs of the test realm by name. */
export async function systemGroups(s: TestServer): Promise<Record<string, number>> {
  const rows = await s.app.services.db.kysely
    .selectFrom('user_groups')
    .select(['id', 'name'])
    .where('realm_id', '=', s.realm.id)
    .where('is_system_group', '=', 1)
    .execute();
  return Object.fromEntries(rows.map((r) => [r.name, r.id]));
}

export interface ChannelOptions {
  inviteOnly?: boolean;
  historyPublic?: boolean;
  webPublic?: boolean;
  subscribers?: User[];
  /** Group-setting values by setting name, overriding Zulip's defaults. */
  permissions?: Record<string, unknown>;
  topicsPolicy?: string;
}

let counter = 0;

/**
 * A channel created straight in the database with Zulip's default permissions, so message
 * tests do not depend on the channel endpoints.
 */
export async function createChannel(s: TestServer, name: string, opts: ChannelOptions = {}): Promise<Stream> {
  const g = await systemGroups(s);
  const permissions = {
    can_add_subscribers_group: g['role:nobody'],
    can_administer_channel_group: g['role:nobody'],
    can_create_topic_group: g['role:everyone'],
    can_delete_any_message_group: g['role:nobody'],
    can_delete_own_message_group: g['role:nobody'],
    can_move_messages_out_of_channel_group: g['role:nobody'],
    can_move_messages_within_channel_group: g['role:nobody'],
    can_remove_subscribers_group: g['role:administrators'],
    can_resolve_topics_group: g['role:nobody'],
    can_send_message_group: g['role:everyone'],
    can_subscribe_group: g['role:nobody'],
    ...(opts.permissions ?? {}),
  };
  const db = s.app.services.db.kysely;
  const stream = await db
    .insertInto('streams')
    .values({
      realm_id: s.realm.id,
      name,
      name_lc: name.toLowerCase(),
      date_created: now(),
      invite_only: opts.inviteOnly ? 1 : 0,
      is_web_public: opts.webPublic ? 1 : 0,
      history_public_to_subscribers: (opts.historyPublic ?? !opts.inviteOnly) ? 1 : 0,
      permissions: JSON.stringify(permissions),
      topics_policy: opts.topicsPolicy ?? 'inherit',
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await subscribe(s, stream, opts.subscribers ?? []);
  return stream;
}

export async function subscribe(s: TestServer, stream: Stream, users: User[]): Promise<void> {
  if (users.length === 0) return;
  await s.app.services.db.kysely
    .insertInto('subscriptions')
    .values(users.map((u) => ({ user_id: u.id, stream_id: stream.id, realm_id: s.realm.id })))
    .onConflict((oc) => oc.columns(['user_id', 'stream_id']).doUpdateSet({ active: 1 }))
    .execute();
}

/** A unique channel name per call, so tests sharing one server stay independent. */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix} ${counter}`;
}

export async function sendStream(client: ApiClient, stream: string | number, topic: string, content: string, extra: Record<string, unknown> = {}): Promise<number> {
  const body = ok(await client.post('/messages', { type: 'stream', to: typeof stream === 'number' ? stream : stream, topic, content, ...extra }));
  return body.id as number;
}

export async function sendDirect(client: ApiClient, to: number[] | string[], content: string): Promise<number> {
  const body = ok(await client.post('/messages', { type: 'direct', to, content }));
  return body.id as number;
}

/** The flag bits of one user's copy of a message, or undefined when they have none. */
export async function userMessageFlags(s: TestServer, userId: number, messageId: number): Promise<number | undefined> {
  const row = await s.app.services.db.kysely
    .selectFrom('user_messages')
    .select('flags')
    .where('user_id', '=', userId)
    .where('message_id', '=', messageId)
    .executeTakeFirst();
  return row === undefined ? undefined : Number(row.flags);
}

/** Writes personal settings straight into a user's settings JSON. */
export async function setUserSettings(s: TestServer, user: User, values: Record<string, unknown>): Promise<void> {
  const db = s.app.services.db.kysely;
  const row = await db.selectFrom('users').select('settings').where('id', '=', user.id).executeTakeFirstOrThrow();
  const settings = { ...(JSON.parse(row.settings) as Record<string, unknown>), ...values };
  await db.updateTable('users').set({ settings: JSON.stringify(settings) }).where('id', '=', user.id).execute();
}

/** Writes realm settings straight into the realm's settings JSON. */
export async function setRealmSettings(s: TestServer, values: Record<string, unknown>): Promise<void> {
  const db = s.app.services.db.kysely;
  const row = await db.selectFrom('realms').select('settings').where('id', '=', s.realm.id).executeTakeFirstOrThrow();
  const settings = { ...(JSON.parse(row.settings) as Record<string, unknown>), ...values };
  await db.updateTable('realms').set({ settings: JSON.stringify(settings) }).where('id', '=', s.realm.id).execute();
}
