import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import type { ApiClient } from '../helpers/client.js';

/**
 * Issue 2, item 9: channel and realm permission settings are group-setting values evaluated
 * through nested subgroups; a user in a subgroup of the allowed group passes, and deactivated
 * groups grant nothing.
 */

async function groupIds(s: TestServer): Promise<Record<string, number>> {
  const groups = ok(await s.cast.owner.client.get('/user_groups', { include_deactivated_groups: true })).user_groups;
  return Object.fromEntries(groups.map((g: { name: string; id: number }) => [g.name, g.id]));
}

/** outer ⊃ inner ∋ othello: othello holds any setting naming `outer` only through nesting. */
async function nestedGroups(s: TestServer, tag: string): Promise<{ outer: number; inner: number }> {
  const { owner, othello } = s.cast;
  const inner = ok(await owner.client.post('/user_groups/create', { name: `inner ${tag}`, description: 'inner', members: [othello.user.id] })).group_id;
  const outer = ok(await owner.client.post('/user_groups/create', { name: `outer ${tag}`, description: 'outer', members: [], subgroups: [inner] })).group_id;
  return { outer, inner };
}

async function setDeactivated(s: TestServer, groupId: number, deactivated: boolean): Promise<void> {
  // Zulip refuses to deactivate a group a setting uses; the flag is set directly to prove
  // that evaluation ignores such a group anyway.
  await s.app.services.db.kysely.updateTable('user_groups').set({ deactivated: deactivated ? 1 : 0 }).where('id', '=', groupId).execute();
}

const createChannel = (client: ApiClient, name: string, extra: Record<string, unknown> = {}) =>
  client.post('/users/me/subscriptions', { subscriptions: [{ name }], ...extra });

forEachDatabase('channel permissions through nested groups', (server) => {
  test('realm can_create_public_channel_group: nested members may create, others may not, deactivated groups grant nothing', async () => {
    const s = server();
    const { owner, othello, hamlet, moderator } = s.cast;
    const g = await groupIds(s);
    const { outer } = await nestedGroups(s, 'create');
    ok(await owner.client.patch('/realm', { can_create_public_channel_group: { new: { direct_members: [], direct_subgroups: [outer] } } }));
    try {
      ok(await createChannel(othello.client, 'Nested creation'));
      err(await createChannel(hamlet.client, 'Hamlet creation'), 400, 'BAD_REQUEST', 'Insufficient permission');
      err(await createChannel(moderator.client, 'Moderator creation'), 400, 'BAD_REQUEST', 'Insufficient permission');
      // Subscribing to an existing channel needs no creation right.
      ok(await createChannel(hamlet.client, 'Nested creation'));
      await setDeactivated(s, outer, true);
      err(await createChannel(othello.client, 'After deactivation'), 400, 'BAD_REQUEST', 'Insufficient permission');
    } finally {
      await setDeactivated(s, outer, false);
      ok(await owner.client.patch('/realm', { can_create_public_channel_group: { new: g['role:members'] } }));
    }
  });

  test('channel can_administer_channel_group through a nested subgroup of an anonymous value', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const { outer } = await nestedGroups(s, 'admin');
    ok(await createChannel(hamlet.client, 'Nested admin', { can_administer_channel_group: { direct_members: [hamlet.user.id], direct_subgroups: [outer] } }));
    const id = ok(await hamlet.client.get('/get_stream_id', { stream: 'Nested admin' })).stream_id;
    ok(await othello.client.patch(`/streams/${id}`, { description: 'through nesting' }));
    await setDeactivated(s, outer, true);
    try {
      err(await othello.client.patch(`/streams/${id}`, { description: 'no longer' }), 400, 'CANNOT_ADMINISTER_CHANNEL');
      ok(await hamlet.client.patch(`/streams/${id}`, { description: 'still mine' }));
    } finally {
      await setDeactivated(s, outer, false);
    }
  });

  test('channel can_subscribe_group on a private channel: nested members may join and see it; deactivated groups do not', async () => {
    const s = server();
    const { hamlet, othello, guest } = s.cast;
    const { outer } = await nestedGroups(s, 'subscribe');
    ok(await createChannel(hamlet.client, 'Nested private', { invite_only: true, history_public_to_subscribers: true, can_subscribe_group: outer }));
    const id = ok(await hamlet.client.get('/get_stream_id', { stream: 'Nested private' })).stream_id;
    // Content access through the group: othello sees the channel and may subscribe himself.
    assert.equal(ok(await othello.client.get('/get_stream_id', { stream: 'Nested private' })).stream_id, id);
    assert.ok(ok(await othello.client.get('/streams', { include_all: true })).streams.some((x: { stream_id: number }) => x.stream_id === id));
    await setDeactivated(s, outer, true);
    try {
      err(await othello.client.get(`/streams/${id}`), 400, 'BAD_REQUEST', 'Invalid channel ID');
      err(await createChannel(othello.client, 'Nested private'), 400, 'BAD_REQUEST', 'Unable to access channel (Nested private).');
    } finally {
      await setDeactivated(s, outer, false);
    }
    ok(await createChannel(othello.client, 'Nested private'));
    assert.ok(ok(await hamlet.client.get(`/streams/${id}/members`)).subscribers.includes(othello.user.id));
    // Guests never hold can_subscribe_group, whatever the group contains.
    err(await guest.client.get(`/streams/${id}`), 400, 'BAD_REQUEST', 'Invalid channel ID');
  });

  test('channel can_add_subscribers_group through nesting lets a non-subscriber add others to a private channel', async () => {
    const s = server();
    const { hamlet, othello, moderator } = s.cast;
    const { outer } = await nestedGroups(s, 'add');
    ok(await createChannel(hamlet.client, 'Nested add', { invite_only: true, can_add_subscribers_group: outer }));
    // Moderators are not in the group and cannot read the channel: they may not add anyone.
    err(
      await moderator.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Nested add' }], principals: [s.cast.bot.user.id] }),
      400,
      'BAD_REQUEST',
      'Unable to access channel (Nested add).',
    );
    // othello, unsubscribed, adds someone through the nested group.
    const res = ok(await othello.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Nested add' }], principals: [moderator.user.id] }));
    assert.deepEqual(res.subscribed, { [String(moderator.user.id)]: ['Nested add'] });
  });

  test('channel can_remove_subscribers_group through nesting', async () => {
    const s = server();
    const { hamlet, othello, moderator } = s.cast;
    const { outer } = await nestedGroups(s, 'remove');
    ok(await createChannel(hamlet.client, 'Nested remove', { principals: [hamlet.user.id, moderator.user.id], can_remove_subscribers_group: outer }));
    assert.deepEqual(
      ok(await othello.client.delete('/users/me/subscriptions', { subscriptions: ['Nested remove'], principals: [moderator.user.id] })).removed,
      ['Nested remove'],
    );
    err(
      await moderator.client.delete('/users/me/subscriptions', { subscriptions: ['Nested remove'], principals: [hamlet.user.id] }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
  });
});
