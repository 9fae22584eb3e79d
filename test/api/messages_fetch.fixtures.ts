import assert from 'node:assert/strict';
import type { User } from '../../src/db/tables.js';
import type { CastMember, TestServer } from '../helpers/server.js';
import type { ApiClient, ApiResponse, ParamValue } from '../helpers/client.js';
import { ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';

let counter = 0;

/** A unique name per call, so tests sharing one server stay independent. */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix} ${process.pid % 1000}-${counter}`;
}

export interface ChannelSpec {
  inviteOnly?: boolean;
  historyPublic?: boolean;
  members?: User[];
  /** Channel permission settings (group-setting values) by name. */
  permissions?: Record<string, ParamValue>;
}

/** Creates a channel through POST /users/me/subscriptions, subscribing the creator and `members`; returns its ID. */
export async function createChannel(s: TestServer, creator: CastMember, name: string, spec: ChannelSpec = {}): Promise<number> {
  const params: Record<string, ParamValue> = {
    subscriptions: [{ name }],
    invite_only: spec.inviteOnly ?? false,
    principals: [creator.user.id, ...(spec.members ?? []).map((u) => u.id)],
  };
  if (spec.historyPublic !== undefined) params.history_public_to_subscribers = spec.historyPublic;
  Object.assign(params, spec.permissions ?? {});
  ok(await creator.client.post('/users/me/subscriptions', params));
  const row = await s.app.services.db.kysely
    .selectFrom('streams')
    .select('id')
    .where('realm_id', '=', s.realm.id)
    .where('name', '=', name)
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function subscribe(client: ApiClient, name: string, users: User[]): Promise<void> {
  ok(await client.post('/users/me/subscriptions', { subscriptions: [{ name }], principals: users.map((u) => u.id) }));
}

export async function sendToChannel(client: ApiClient, channel: string | number, topic: string, content: string): Promise<number> {
  return ok(await client.post('/messages', { type: 'stream', to: channel, topic, content })).id as number;
}

export async function sendDirect(client: ApiClient, to: number[], content: string): Promise<number> {
  return ok(await client.post('/messages', { type: 'direct', to, content })).id as number;
}

/** GET /messages, asserted successful and conforming to zulip.yaml. */
export async function getMessages(client: ApiClient, params: Record<string, ParamValue>): Promise<any> {
  const res = await client.get('/messages', params);
  const body = ok(res);
  assertConforms(res, 'GET', '/messages');
  return body;
}

export const ids = (body: { messages: { id: number }[] }): number[] => body.messages.map((m) => m.id);

/** The newest `n` messages of a narrow, oldest first. */
export async function newest(client: ApiClient, narrow: ParamValue, n = 100): Promise<number[]> {
  return ids(await getMessages(client, { anchor: 'newest', num_before: n, num_after: 0, narrow }));
}

/** A search within one channel, as `client` sees it: the newest matching message IDs. */
export function searchIn(client: ApiClient, channel: string): (query: string) => Promise<number[]> {
  return (query) => newest(client, [{ operator: 'channel', operand: channel }, { operator: 'search', operand: query }]);
}

/** Sets or clears flag bits on one user's copy of messages, straight in the database. */
export async function setFlagBits(s: TestServer, userId: number, messageIds: number[], bits: number, on: boolean): Promise<void> {
  const rows = await s.app.services.db.kysely
    .selectFrom('user_messages')
    .select(['message_id', 'flags'])
    .where('user_id', '=', userId)
    .where('message_id', 'in', messageIds)
    .execute();
  assert.equal(rows.length, messageIds.length, 'every message needs a user_messages row');
  for (const r of rows) {
    const flags = on ? Number(r.flags) | bits : Number(r.flags) & ~bits;
    await s.app.services.db.kysely
      .updateTable('user_messages')
      .set({ flags })
      .where('user_id', '=', userId)
      .where('message_id', '=', r.message_id)
      .execute();
  }
}

export function assertNarrowError(res: ApiResponse, desc: string): void {
  assert.equal(res.status, 400, JSON.stringify(res.body));
  assert.deepEqual(res.body, { result: 'error', msg: `Invalid narrow operator: ${desc}`, code: 'BAD_NARROW', desc });
}

/** A system group's ID, e.g. "role:moderators". */
export async function systemGroupId(s: TestServer, name: string): Promise<number> {
  const row = await s.app.services.db.kysely
    .selectFrom('user_groups')
    .select('id')
    .where('realm_id', '=', s.realm.id)
    .where('name', '=', name)
    .executeTakeFirstOrThrow();
  return row.id;
}
