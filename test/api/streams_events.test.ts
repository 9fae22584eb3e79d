import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { assertConforms } from '../helpers/openapi.js';
import { registerQueue, type ZEvent } from '../helpers/events.js';
import type { ApiClient } from '../helpers/client.js';

type Dict = Record<string, any>;
interface ChannelState {
  subscriptions: Dict[];
  unsubscribed: Dict[];
  never_subscribed: Dict[];
  streams: Dict[];
}

const TYPES = ['subscription', 'stream'];

/**
 * What a client does with channel events (modelled on Zulip's apply_event): the register state
 * it keeps, updated event by event. A stale state updated this way must equal a fresh register.
 */
function applyEvent(state: ChannelState, e: ZEvent, selfId: number): void {
  const lists = [state.subscriptions, state.unsubscribed, state.never_subscribed, state.streams];
  const entries = (id: number): Dict[] => lists.flatMap((l) => l.filter((x) => x.stream_id === id));
  const drop = (list: Dict[], id: number): Dict | undefined => {
    const i = list.findIndex((x) => x.stream_id === id);
    return i >= 0 ? list.splice(i, 1)[0] : undefined;
  };
  if (e.type === 'stream' && e.op === 'create') {
    for (const st of e.streams) {
      if (!state.streams.some((x) => x.stream_id === st.stream_id)) state.streams.push({ ...st });
      const known = [state.subscriptions, state.unsubscribed, state.never_subscribed].some((l) => l.some((x) => x.stream_id === st.stream_id));
      if (!known) state.never_subscribed.push({ ...st, subscribers: [] });
    }
  } else if (e.type === 'stream' && e.op === 'delete') {
    for (const id of e.stream_ids) for (const l of lists) drop(l, id);
  } else if (e.type === 'stream' && e.op === 'update') {
    for (const x of entries(e.stream_id)) {
      x[e.property] = e.value;
      if (e.property === 'description') x.rendered_description = e.rendered_description;
      if (e.property === 'invite_only') {
        x.history_public_to_subscribers = e.history_public_to_subscribers;
        x.is_web_public = e.is_web_public;
      }
    }
  } else if (e.type === 'subscription' && e.op === 'add') {
    for (const sub of e.subscriptions) {
      drop(state.unsubscribed, sub.stream_id);
      drop(state.never_subscribed, sub.stream_id);
      state.subscriptions.push({ ...sub });
      // Clients keep one object per channel (zulip-flutter replaces the channel by its
      // subscription), so the channel entry takes the subscription's channel fields.
      const st = state.streams.find((x) => x.stream_id === sub.stream_id);
      if (st) for (const k of Object.keys(st)) st[k] = sub[k];
    }
  } else if (e.type === 'subscription' && e.op === 'remove') {
    // No peer_remove comes for oneself: the client takes itself out of the subscribers.
    for (const { stream_id } of e.subscriptions) {
      const sub = drop(state.subscriptions, stream_id);
      if (sub) state.unsubscribed.push(sub);
      for (const x of entries(stream_id)) {
        x.subscriber_count -= 1;
        if (x.subscribers) x.subscribers = x.subscribers.filter((u: number) => u !== selfId);
      }
    }
  } else if (e.type === 'subscription' && e.op === 'update') {
    const sub = state.subscriptions.find((x) => x.stream_id === e.stream_id)!;
    sub[e.property] = e.value;
    if (e.property === 'in_home_view') sub.is_muted = !e.value;
  } else if (e.type === 'subscription' && (e.op === 'peer_add' || e.op === 'peer_remove')) {
    for (const id of e.stream_ids) {
      for (const x of entries(id)) {
        const before: Set<number> = new Set(x.subscribers ?? []);
        const changed = (e.user_ids as number[]).filter((u) => (e.op === 'peer_add' ? !before.has(u) : before.has(u)));
        for (const u of changed) (e.op === 'peer_add' ? before.add(u) : before.delete(u));
        if (x.subscribers) x.subscribers = [...before].sort((a, b) => a - b);
        x.subscriber_count += (e.op === 'peer_add' ? 1 : -1) * (x.subscribers ? changed.length : e.user_ids.length);
      }
    }
  } else {
    assert.fail(`unexpected event ${JSON.stringify(e)}`);
  }
}

function normalized(state: ChannelState): ChannelState {
  const byId = (l: Dict[]): Dict[] => [...l].sort((a, b) => a.stream_id - b.stream_id);
  return {
    subscriptions: byId(state.subscriptions),
    unsubscribed: byId(state.unsubscribed),
    never_subscribed: byId(state.never_subscribed),
    streams: byId(state.streams),
  };
}

async function channelState(client: ApiClient): Promise<ChannelState> {
  const body = ok(await client.post('/register', { fetch_event_types: TYPES, event_types: TYPES, include_subscribers: true }));
  return normalized(body);
}

/** Channel state and events as real clients see them: POST /register, then GET /events. */

forEachDatabase('channel state and events through event queues', (server) => {
  test('POST /register returns channel state that conforms to zulip.yaml', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Reg e2e' }], principals: [hamlet.user.id, othello.user.id] }));
    // Only the channel event types, so that the check covers exactly the channel keys.
    const types = ['subscription', 'stream', 'default_streams', 'default_stream_groups'];
    const res = await hamlet.client.post('/register', { include_subscribers: true, fetch_event_types: types });
    assertConforms(res, 'POST', '/register');
    const body = ok(res);
    const sub = body.subscriptions.find((x: { name: string }) => x.name === 'Reg e2e');
    assert.deepEqual(sub.subscribers, [hamlet.user.id, othello.user.id].sort((a, b) => a - b));
    assert.match(sub.color, /^#[0-9a-f]{6}$/);
    assert.equal(sub.in_home_view, true);
    assert.equal(sub.stream_post_policy, 1);
    for (const key of ['unsubscribed', 'never_subscribed', 'streams', 'realm_default_streams']) assert.ok(Array.isArray(body[key]), key);
    assert.equal(body.max_stream_name_length, 60);
    assert.equal(body.max_stream_description_length, 1024);
    // zulip-terminal's registration: subscriptions with subscribers, no client capabilities.
    const terminal = await hamlet.client.post('/register', {
      event_types: ['message', 'subscription'],
      fetch_event_types: ['subscription'],
      include_subscribers: true,
      client_gravatar: true,
      apply_markdown: true,
    });
    assertConforms(terminal, 'POST', '/register');
  });

  test('subscription and stream events reach queues; archiving follows the archived_channels capability', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const legacy = await registerQueue(othello.client, { event_types: ['stream', 'subscription'] });
    const modern = await registerQueue(othello.client, { event_types: ['stream', 'subscription'], client_capabilities: { archived_channels: true } });

    ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Queue events' }], principals: [hamlet.user.id, othello.user.id] }));
    const id = ok(await hamlet.client.get('/get_stream_id', { stream: 'Queue events' })).stream_id;
    for (const q of [legacy, modern]) {
      const created = await q.next((e) => e.type === 'stream' && e.op === 'create');
      assert.equal(created.streams[0].stream_id, id);
      const added = await q.next((e) => e.type === 'subscription' && e.op === 'add');
      assert.equal(added.subscriptions[0].stream_id, id);
    }

    ok(await hamlet.client.delete(`/streams/${id}`));
    // A new channel marks the end of what the deletion sent.
    ok(await hamlet.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Queue events marker' }] }));
    const marker = (e: ZEvent) => e.type === 'stream' && e.op === 'create' && e.streams[0].name === 'Queue events marker';
    const isArchive = (e: ZEvent) => e.type === 'stream' && ((e.op === 'update' && e.property === 'is_archived') || e.op === 'delete');
    const legacyEvents = (await legacy.upTo(marker)).filter(isArchive);
    const modernEvents = (await modern.upTo(marker)).filter(isArchive);
    assert.deepEqual(legacyEvents.map((e) => e.op), ['delete']);
    assert.deepEqual(modernEvents.map((e) => [e.op, e.property, e.value]), [['update', 'is_archived', true]]);
    await legacy.delete();
    await modern.delete();
  });

  test('a stale register state updated by the channel events equals a fresh register', async () => {
    const s = server();
    const { hamlet, othello, admin, owner } = s.cast;
    const queue = await registerQueue(othello.client, { fetch_event_types: TYPES, event_types: TYPES, include_subscribers: true });
    const state: ChannelState = {
      subscriptions: queue.state.subscriptions,
      unsubscribed: queue.state.unsubscribed,
      never_subscribed: queue.state.never_subscribed,
      streams: queue.state.streams,
    };
    const subscribe = async (client: ApiClient, name: string, extra: Record<string, unknown> = {}) =>
      ok(await client.post('/users/me/subscriptions', { subscriptions: [{ name }], ...extra }));
    const id = async (client: ApiClient, name: string): Promise<number> => ok(await client.get('/get_stream_id', { stream: name })).stream_id;
    const groups = ok(await owner.client.get('/user_groups')).user_groups;
    const moderators = groups.find((g: Dict) => g.name === 'role:moderators').id;

    await subscribe(hamlet.client, 'Stale one', { principals: [hamlet.user.id, othello.user.id] });
    await subscribe(hamlet.client, 'Stale private', { invite_only: true });
    await subscribe(hamlet.client, 'Stale private', { principals: [othello.user.id] });
    await subscribe(hamlet.client, 'Stale two');
    await subscribe(hamlet.client, 'Stale hidden', { invite_only: true, principals: [hamlet.user.id, admin.user.id] });
    const one = await id(hamlet.client, 'Stale one');
    const two = await id(hamlet.client, 'Stale two');
    const priv = await id(hamlet.client, 'Stale private');
    const hidden = await id(hamlet.client, 'Stale hidden');
    ok(await othello.client.post('/users/me/subscriptions/properties', {
      subscription_data: [
        { stream_id: one, property: 'color', value: '#123456' },
        { stream_id: one, property: 'in_home_view', value: false },
        { stream_id: one, property: 'pin_to_top', value: true },
      ],
    }));
    ok(await hamlet.client.patch(`/streams/${one}`, { new_name: 'Stale renamed', description: 'Now **described**' }));
    ok(await hamlet.client.patch(`/streams/${two}`, { is_private: true }));
    ok(await hamlet.client.patch(`/streams/${hidden}`, { is_private: false }));
    ok(await hamlet.client.patch(`/streams/${priv}`, { can_send_message_group: { new: moderators } }));
    ok(await admin.client.post('/users/me/subscriptions', { subscriptions: [{ name: 'Stale renamed' }], principals: [admin.user.id, s.cast.moderator.user.id] }));
    ok(await othello.client.delete('/users/me/subscriptions', { subscriptions: ['Stale private'] }));
    ok(await admin.client.delete('/users/me/subscriptions', { subscriptions: ['Stale renamed'], principals: [s.cast.moderator.user.id] }));
    await subscribe(hamlet.client, 'Stale left', { principals: [hamlet.user.id, othello.user.id] });
    ok(await othello.client.delete('/users/me/subscriptions', { subscriptions: ['Stale left'] }));
    await subscribe(hamlet.client, 'Stale doomed', { principals: [hamlet.user.id, othello.user.id] });
    ok(await hamlet.client.delete(`/streams/${await id(hamlet.client, 'Stale doomed')}`));
    // Othello's own last change marks the end of the events to apply.
    ok(await othello.client.post('/users/me/subscriptions/properties', { subscription_data: [{ stream_id: one, property: 'color', value: '#654321' }] }));

    const marker = (e: ZEvent) => e.type === 'subscription' && e.op === 'update' && e.property === 'color' && e.value === '#654321';
    for (const e of await queue.through(marker)) applyEvent(state, e, othello.user.id);
    assert.deepEqual(normalized(state), await channelState(othello.client));
    await queue.delete();
  });
});
