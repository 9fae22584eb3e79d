import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import type { ApiClient } from '../helpers/client.js';
import type { User } from '../../src/db/tables.js';
import { JsonableError } from '../../src/errors.js';
import {
  ChannelCaller,
  accessStreamForNarrow,
  accessStreamForSend,
  canAccessStreamHistory,
  canPostToStream,
  checkCanSendMessageGroup,
} from '../../src/lib/access/streams.js';
import { fetchFanoutSubscriptions } from '../../src/db/repos/subscriptions.js';
import { fetchStreamWithSubscription } from '../../src/db/repos/streams.js';

/** The access functions the messages area calls on every send and narrow, against a real database. */

class QueryCounter implements KyselyPlugin {
  count = 0;
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.count++;
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

function caller(s: TestServer, user: User, counter?: QueryCounter): ChannelCaller {
  const db = counter ? s.app.services.db.kysely.withPlugin(counter) : s.app.services.db.kysely;
  return new ChannelCaller(db, s.realm, user);
}

async function failure(p: Promise<unknown>): Promise<JsonableError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof JsonableError, String(e));
    return e;
  }
  assert.fail('expected an error');
}

const create = async (client: ApiClient, name: string, extra: Record<string, unknown> = {}): Promise<number> => {
  ok(await client.post('/users/me/subscriptions', { subscriptions: [{ name }], ...extra }));
  return ok(await client.get('/get_stream_id', { stream: name })).stream_id;
};

forEachDatabase('channel access for sending and reading', (server) => {
  test('accessStreamForSend: public channels, by ID and name, in two queries', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const id = await create(hamlet.client, 'Send public');
    const counter = new QueryCounter();
    const byId = await accessStreamForSend(caller(s, othello.user, counter), { id });
    assert.equal(byId.stream.id, id);
    assert.equal(byId.subscribed, false);
    assert.equal(counter.count, 2);
    const byName = await accessStreamForSend(caller(s, hamlet.user), { name: 'send PUBLIC' });
    assert.equal(byName.stream.id, id);
    assert.equal(byName.subscribed, true);
  });

  test('accessStreamForSend: unknown and invisible channels fail alike; visible ones explain why', async () => {
    const s = server();
    const { hamlet, othello, guest, admin } = s.cast;
    const missingId = await failure(accessStreamForSend(caller(s, othello.user), { id: 999999 }));
    assert.deepEqual(missingId.toJSON(), { result: 'error', msg: "Channel with ID '999999' does not exist", code: 'STREAM_DOES_NOT_EXIST', stream_id: 999999 });
    const missingName = await failure(accessStreamForSend(caller(s, othello.user), { name: 'Nope' }));
    assert.deepEqual(missingName.toJSON(), { result: 'error', msg: "Channel 'Nope' does not exist", code: 'STREAM_DOES_NOT_EXIST', stream: 'Nope' });

    const priv = await create(hamlet.client, 'Send private', { invite_only: true });
    const hidden = await failure(accessStreamForSend(caller(s, othello.user), { id: priv }));
    assert.deepEqual(hidden.toJSON(), { result: 'error', msg: `Channel with ID '${priv}' does not exist`, code: 'STREAM_DOES_NOT_EXIST', stream_id: priv });
    // An administrator sees the channel exists but may not post without subscribing.
    const notMember = await failure(accessStreamForSend(caller(s, admin.user), { id: priv }));
    assert.equal(notMember.message, "Not authorized to send to channel 'Send private'");
    assert.equal((await accessStreamForSend(caller(s, hamlet.user), { id: priv })).subscribed, true);

    const pub = await create(hamlet.client, 'Send guests');
    const guestFail = await failure(accessStreamForSend(caller(s, guest.user), { id: pub }));
    assert.equal(guestFail.code, 'STREAM_DOES_NOT_EXIST');
    ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Send guests' }], principals: [guest.user.id] }));
    await accessStreamForSend(caller(s, guest.user), { id: pub });

    ok(await hamlet.client.delete(`/streams/${pub}`));
    const archived = await failure(accessStreamForSend(caller(s, hamlet.user), { id: pub }));
    assert.deepEqual(archived.toJSON(), { result: 'error', msg: "Not authorized to send to channel 'Send guests'", code: 'BAD_REQUEST' });
  });

  test('can_send_message_group: through nested groups, and bots may post where their owner may', async () => {
    const s = server();
    const { hamlet, othello, owner, bot } = s.cast;
    const groups = ok(await owner.client.get('/user_groups')).user_groups;
    const admins = groups.find((g: { name: string }) => g.name === 'role:administrators').id;
    const id = await create(hamlet.client, 'Announcements', { can_send_message_group: admins, principals: [hamlet.user.id, othello.user.id, owner.user.id] });
    const denied = await failure(accessStreamForSend(caller(s, othello.user), { id }));
    assert.deepEqual(denied.toJSON(), { result: 'error', msg: 'You do not have permission to post in this channel.', code: 'BAD_REQUEST' });
    // Owners are administrators through the nested system groups.
    await accessStreamForSend(caller(s, owner.user), { id });
    const stream = (await fetchStreamWithSubscription(s.app.services.db.kysely, s.realm.id, { id }, othello.user.id))!;
    assert.equal(await canPostToStream(caller(s, othello.user), stream), false);
    await assert.rejects(checkCanSendMessageGroup(caller(s, bot.user), stream.stream));
    ok(await owner.client.patch(`/streams/${id}`, { can_send_message_group: { new: { direct_members: [hamlet.user.id], direct_subgroups: [admins] } } }));
    const updated = (await fetchStreamWithSubscription(s.app.services.db.kysely, s.realm.id, { id }, bot.user.id))!;
    // hamlet's bot posts because its owner may.
    await checkCanSendMessageGroup(caller(s, bot.user), updated.stream);
    assert.equal(await canPostToStream(caller(s, bot.user), updated), true);
  });

  test('a bot may post to a private channel its owner is subscribed to', async () => {
    const s = server();
    const { hamlet, bot } = s.cast;
    const id = await create(hamlet.client, 'Bot private', { invite_only: true });
    const accessed = await accessStreamForSend(caller(s, bot.user), { id });
    assert.equal(accessed.subscribed, false);
  });

  test('history access and narrow lookup', async () => {
    const s = server();
    const { hamlet, othello, guest } = s.cast;
    const pub = await create(hamlet.client, 'History public');
    const prot = await create(hamlet.client, 'History protected', { invite_only: true });
    const shared = await create(hamlet.client, 'History shared', { invite_only: true, history_public_to_subscribers: true, principals: [hamlet.user.id, guest.user.id] });
    const narrow = (user: User, operand: number | string) => accessStreamForNarrow(caller(s, user), operand);
    assert.equal((await narrow(othello.user, pub))!.historyAccess, true);
    assert.equal((await narrow(othello.user, 'history PUBLIC'))!.stream.id, pub);
    assert.equal((await narrow(guest.user, pub))!.historyAccess, false);
    assert.equal((await narrow(hamlet.user, prot))!.historyAccess, false);
    assert.equal((await narrow(othello.user, shared))!.historyAccess, false);
    assert.equal((await narrow(guest.user, shared))!.historyAccess, true);
    assert.equal((await narrow(hamlet.user, shared))!.historyAccess, true);
    assert.equal(await narrow(othello.user, 999999), undefined);
    const accessed = (await narrow(guest.user, shared))!;
    assert.equal(await canAccessStreamHistory(caller(s, guest.user), accessed), true);
  });

  test('fan-out: subscribers of a channel with their notification settings, deactivated users left out', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const id = await create(hamlet.client, 'Fanout', { principals: [hamlet.user.id, othello.user.id] });
    ok(await othello.client.post('/users/me/subscriptions/properties', { subscription_data: [{ stream_id: id, property: 'is_muted', value: true }] }));
    const db = s.app.services.db.kysely;
    const temp = await db
      .insertInto('users')
      .values({
        realm_id: s.realm.id,
        email: 'temp@example.com',
        email_lc: 'temp@example.com',
        delivery_email: 'temp@example.com',
        full_name: 'Temp',
        password_hash: null,
        api_key: 't'.repeat(32),
        date_joined: 0,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Fanout' }], principals: [temp.id] }));
    await db.updateTable('users').set({ is_active: 0 }).where('id', '=', temp.id).execute();
    const rows = await fetchFanoutSubscriptions(db, id);
    assert.deepEqual(rows.map((r) => [r.user_id, r.is_muted]), [[hamlet.user.id, 0], [othello.user.id, 1]].sort((a, b) => a[0]! - b[0]!));
    assert.equal(rows[0]!.push_notifications, null);
    assert.equal(ok(await hamlet.client.get(`/streams/${id}`)).stream.subscriber_count, 2);
  });
});
