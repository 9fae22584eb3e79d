import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { err, ok } from '../helpers/assert.js';
import { assertConforms, assertEventConforms } from '../helpers/openapi.js';
import { captureEvents, recipientIds } from '../helpers/bus.js';
import { registerQueue } from '../helpers/events.js';
import type { ApiClient } from '../helpers/client.js';
import { createChannel, uniqueName } from './messages_send.fixtures.js';

async function channelMessage(s: TestServer, opts: { inviteOnly?: boolean; subscribers?: (keyof TestServer['cast'])[] } = {}) {
  const name = uniqueName('React');
  const subscribers = (opts.subscribers ?? ['hamlet', 'othello']).map((k) => s.cast[k].user);
  const stream = await createChannel(s, name, { inviteOnly: opts.inviteOnly, subscribers });
  const id = ok(await s.cast.hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'reactions', content: 'react to me' })).id as number;
  return { id, stream, name };
}

async function reactionsOf(client: ApiClient, id: number): Promise<unknown[]> {
  return ok(await client.get(`/messages/${id}`)).message.reactions;
}

/**
 * zulip-terminal's handling of a reaction event, step for step: Model._handle_reaction_event
 * (zulipterminal/model.py) stores `event.user` as the added reaction's user, and on removal
 * drops the reaction by emoji and by that user (asserting it is a dict); then
 * MessageBox.reactions_view (zulipterminal/ui_tools/messages.py) renders the message's reaction
 * line from each reaction's user id and full_name, and shows no line at all if any of that
 * fails.
 */
interface TerminalReaction {
  user: unknown;
  reaction_type: string;
  emoji_code: string;
  emoji_name: string;
}

function terminalApplyReactionEvent(message: { id: number; reactions: TerminalReaction[] }, event: Record<string, any>): void {
  assert.equal(event.type, 'reaction');
  if (event.message_id !== message.id) return;
  if (event.op === 'add') {
    message.reactions.push({ user: event.user, reaction_type: event.reaction_type, emoji_code: event.emoji_code, emoji_name: event.emoji_name });
    return;
  }
  assert.ok(event.user !== null && typeof event.user === 'object' && !Array.isArray(event.user), 'zulip-terminal: assert isinstance(event["user"], dict)');
  const i = message.reactions.findIndex((r) => r.emoji_code === event.emoji_code && (r.user as { user_id?: number }).user_id === event.user.user_id);
  if (i >= 0) message.reactions.splice(i, 1);
}

function terminalReactionLine(reactions: readonly TerminalReaction[], myUserId: number): string | null {
  if (reactions.length === 0) return null;
  try {
    const byEmoji = new Map<string, string[]>();
    for (const r of reactions) {
      const user = r.user as { id?: number; user_id?: number; full_name?: string };
      const userId = user.id ?? user.user_id;
      if (userId === undefined || user.full_name === undefined) throw new Error('KeyError');
      const name = userId === myUserId ? 'You' : user.full_name;
      byEmoji.set(r.emoji_name, [...(byEmoji.get(r.emoji_name) ?? []), name]);
    }
    return [...byEmoji].map(([emoji, names]) => ` :${emoji}: ${names.join(', ')} `).join(' ');
  } catch {
    return null;
  }
}

forEachDatabase('emoji reactions', (server) => {
  test('POST adds a reaction by name: the message dict lists it and every recipient gets the event', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const { id } = await channelMessage(s);
    const { result, events } = await captureEvents(s, () => othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'octopus' }));
    ok(result);
    assertConforms(result, 'POST', '/messages/{message_id}/reactions');
    const expected = {
      type: 'reaction',
      op: 'add',
      user_id: othello.user.id,
      user: { user_id: othello.user.id, email: othello.user.email, full_name: othello.user.full_name },
      message_id: id,
      emoji_name: 'octopus',
      emoji_code: '1f419',
      reaction_type: 'unicode_emoji',
    };
    const reaction = events.filter((e) => e.event.type === 'reaction');
    assert.equal(reaction.length, 1);
    assert.deepEqual(reaction[0]!.event, expected);
    assertEventConforms(reaction[0]!.event);
    assert.deepEqual(recipientIds(reaction[0]!), [hamlet.user.id, othello.user.id].sort((a, b) => a - b));
    assert.deepEqual(await reactionsOf(hamlet.client, id), [{ emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji', user_id: othello.user.id }]);

    err(await othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'octopus' }), 400, 'REACTION_ALREADY_EXISTS', 'Reaction already exists.');
    err(
      await othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji' }),
      400,
      'REACTION_ALREADY_EXISTS',
    );
  });

  test('the reaction event arrives through a real queue, in the shape clients parse', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const { id } = await channelMessage(s);
    const q = await registerQueue(hamlet.client, { event_types: ['reaction'] });
    ok(await othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'zulip' }, 'multipart'));
    const e = await q.next('reaction');
    assert.deepEqual(
      { ...e, id: 0 },
      {
        id: 0,
        type: 'reaction',
        op: 'add',
        user_id: othello.user.id,
        user: { user_id: othello.user.id, email: othello.user.email, full_name: othello.user.full_name },
        message_id: id,
        emoji_name: 'zulip',
        emoji_code: 'zulip',
        reaction_type: 'zulip_extra_emoji',
      },
    );
    ok(await othello.client.delete(`/messages/${id}/reactions`, { emoji_name: 'zulip', reaction_type: 'zulip_extra_emoji' }, 'query'));
    const removed = await q.next('reaction');
    assert.equal(removed.op, 'remove');
    assert.equal(removed.emoji_code, 'zulip');
    await q.delete();
  });

  test('zulip-terminal applies reaction events: the reactor is shown, and removal works', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const { id } = await channelMessage(s);
    // zulip-terminal registers without client_capabilities and indexes messages from GET /messages.
    const q = await registerQueue(hamlet.client, {
      event_types: ['message', 'update_message', 'reaction', 'subscription', 'typing', 'update_message_flags', 'user_settings', 'realm_emoji', 'realm_user'],
      apply_markdown: true,
      client_gravatar: true,
    });
    const fetched = ok(await hamlet.client.get('/messages', { anchor: id, num_before: 0, num_after: 0, narrow: '[]' })).messages[0];
    const message = { id: fetched.id as number, reactions: [] as TerminalReaction[] };

    ok(await othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'octopus' }));
    ok(await hamlet.client.post(`/messages/${id}/reactions`, { emoji_name: 'octopus' }));
    terminalApplyReactionEvent(message, await q.next('reaction'));
    terminalApplyReactionEvent(message, await q.next('reaction'));
    assert.equal(terminalReactionLine(message.reactions, hamlet.user.id), ` :octopus: ${othello.user.full_name}, You `);

    ok(await othello.client.delete(`/messages/${id}/reactions`, { emoji_name: 'octopus' }));
    terminalApplyReactionEvent(message, await q.next('reaction'));
    assert.equal(terminalReactionLine(message.reactions, hamlet.user.id), ' :octopus: You ');
    await q.delete();
  });

  test("the reaction event's user email is the reactor's API email, as every recipient sees it", async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const { id } = await channelMessage(s, { subscribers: ['hamlet', 'othello', 'admin'] });
    ok(await othello.client.patch('/settings', { email_address_visibility: 3 }));
    try {
      const shown = ok(await hamlet.client.get(`/users/${othello.user.id}`)).user.email as string;
      assert.notEqual(shown, othello.user.delivery_email);
      const { result, events } = await captureEvents(s, () => othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'octopus' }));
      ok(result);
      const event = events.find((e) => e.event.type === 'reaction')!;
      // As Zulip's notify_reaction_update (user_profile.email): one event for every recipient,
      // admins included; the real address stays in delivery_email, for those allowed to see it.
      assert.deepEqual(event.event.user, { user_id: othello.user.id, email: shown, full_name: othello.user.full_name });
      assert.equal(ok(await admin.client.get(`/users/${othello.user.id}`)).user.email, shown);
      assert.deepEqual(recipientIds(event), [hamlet.user.id, othello.user.id, admin.user.id].sort((a, b) => a - b));
    } finally {
      ok(await othello.client.patch('/settings', { email_address_visibility: 1 }));
    }
  });

  test('reacting with an emoji already on the message is a vote: the first name is kept', async () => {
    const s = server();
    const { hamlet, othello, admin } = s.cast;
    const { id } = await channelMessage(s, { subscribers: ['hamlet', 'othello', 'admin'] });
    ok(await hamlet.client.post(`/messages/${id}/reactions`, { emoji_name: 'grinning' }));
    // "happy" is another name of U+1F600.
    const { result, events } = await captureEvents(s, () => othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'happy' }));
    ok(result);
    assert.equal(events.find((e) => e.event.type === 'reaction')!.event.emoji_name, 'grinning');
    ok(await admin.client.post(`/messages/${id}/reactions`, { emoji_name: 'anything_goes', emoji_code: '1f600', reaction_type: 'unicode_emoji' }));
    const names = (await reactionsOf(hamlet.client, id)).map((r: any) => [r.emoji_name, r.emoji_code, r.user_id]);
    assert.deepEqual(names, [
      ['grinning', '1f600', hamlet.user.id],
      ['grinning', '1f600', othello.user.id],
      ['grinning', '1f600', admin.user.id],
    ]);
  });

  test('emoji validation follows Zulip: names, codes and types', async () => {
    const s = server();
    const c = s.cast.othello.client;
    const { id } = await channelMessage(s);
    const post = (params: Record<string, string>) => c.post(`/messages/${id}/reactions`, params);
    err(await post({ emoji_name: 'no_such_emoji' }), 400, 'BAD_REQUEST', "Emoji 'no_such_emoji' does not exist");
    err(await post({}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'emoji_name' argument");
    err(await post({ emoji_name: 'octopus', emoji_code: 'zzzz', reaction_type: 'unicode_emoji' }), 400, 'BAD_REQUEST', 'Invalid emoji code.');
    err(await post({ emoji_name: 'smile', emoji_code: '1f419', reaction_type: 'unicode_emoji' }), 400, 'BAD_REQUEST', 'Invalid emoji name.');
    err(await post({ emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'bogus' }), 400, 'BAD_REQUEST', 'Invalid emoji type.');
    err(await post({ emoji_name: 'zulip', emoji_code: 'other', reaction_type: 'zulip_extra_emoji' }), 400, 'BAD_REQUEST', 'Invalid emoji code.');
    err(await post({ emoji_name: 'other', emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji' }), 400, 'BAD_REQUEST', 'Invalid emoji name.');
    err(await post({ emoji_name: 'x', emoji_code: '999999', reaction_type: 'realm_emoji' }), 400, 'BAD_REQUEST', 'Invalid custom emoji.');
    // A valid code with a name this server does not know (Zulip curates more names) is accepted.
    ok(await post({ emoji_name: 'some_zulip_only_name', emoji_code: '1f419', reaction_type: 'unicode_emoji' }));
    err(await c.post('/messages/abc/reactions', { emoji_name: 'smile' }), 400, 'BAD_REQUEST', 'message_id is not an integer');
  });

  test('DELETE removes by name or by code; a missing reaction is REACTION_DOES_NOT_EXIST', async () => {
    const s = server();
    const { hamlet, othello } = s.cast;
    const { id } = await channelMessage(s);
    ok(await othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'octopus' }));
    ok(await othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'smile' }));
    const { result, events } = await captureEvents(s, () => othello.client.delete(`/messages/${id}/reactions`, { emoji_name: 'octopus' }));
    ok(result);
    assertConforms(result, 'DELETE', '/messages/{message_id}/reactions');
    const event = events.find((e) => e.event.type === 'reaction')!;
    assert.deepEqual(event.event, {
      type: 'reaction',
      op: 'remove',
      user_id: othello.user.id,
      user: { user_id: othello.user.id, email: othello.user.email, full_name: othello.user.full_name },
      message_id: id,
      emoji_name: 'octopus',
      emoji_code: '1f419',
      reaction_type: 'unicode_emoji',
    });
    assertEventConforms(event.event);
    assert.deepEqual(recipientIds(event), [hamlet.user.id, othello.user.id].sort((a, b) => a - b));
    ok(await othello.client.delete(`/messages/${id}/reactions`, { emoji_code: '1f642' }));
    assert.deepEqual(await reactionsOf(hamlet.client, id), []);

    const gone = await othello.client.delete(`/messages/${id}/reactions`, { emoji_name: 'octopus' });
    // (zulip.yaml's oneOf of two identical error schemas cannot validate any error body.)
    err(gone, 400, 'REACTION_DOES_NOT_EXIST', "Reaction doesn't exist.");
    err(await hamlet.client.delete(`/messages/${id}/reactions`, { emoji_code: '1f419' }), 400, 'REACTION_DOES_NOT_EXIST');
    err(
      await othello.client.delete(`/messages/${id}/reactions`, {}),
      400,
      'BAD_REQUEST',
      'At least one of the following arguments must be present: emoji_name, emoji_code',
    );
    err(await othello.client.delete(`/messages/${id}/reactions`, { emoji_name: 'no_such_emoji' }), 400, 'BAD_REQUEST', "Emoji 'no_such_emoji' does not exist");
  });

  test('only messages the user may read: unknown, private and other-conversation messages are "Invalid message(s)"', async () => {
    const s = server();
    const { hamlet, othello, guest, moderator } = s.cast;
    const priv = await channelMessage(s, { inviteOnly: true });
    err(await guest.client.post(`/messages/${priv.id}/reactions`, { emoji_name: 'smile' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    err(await moderator.client.post(`/messages/${priv.id}/reactions`, { emoji_name: 'smile' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    err(await hamlet.client.post('/messages/99999999/reactions', { emoji_name: 'smile' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    const dm = ok(await hamlet.client.post('/messages', { type: 'direct', to: [othello.user.id], content: 'just us' })).id;
    err(await guest.client.post(`/messages/${dm}/reactions`, { emoji_name: 'smile' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    const { result, events } = await captureEvents(s, () => othello.client.post(`/messages/${dm}/reactions`, { emoji_name: 'smile' }));
    ok(result);
    assert.deepEqual(recipientIds(events.find((e) => e.event.type === 'reaction')!), [hamlet.user.id, othello.user.id].sort((a, b) => a - b));
  });

  test('a non-subscriber reacting to a public channel message gets a historical row, and later events', async () => {
    const s = server();
    const { moderator } = s.cast;
    const { id } = await channelMessage(s);
    const { result, events } = await captureEvents(s, () => moderator.client.post(`/messages/${id}/reactions`, { emoji_name: 'tada' }));
    ok(result);
    assert.ok(recipientIds(events.find((e) => e.event.type === 'reaction')!).includes(moderator.user.id));
    const flags = ok(await moderator.client.get(`/messages/${id}`)).message.flags;
    assert.deepEqual([...flags].sort(), ['historical', 'read']);
  });

  test('messages in archived channels cannot be reacted to', async () => {
    const s = server();
    const { id, stream } = await channelMessage(s);
    await s.app.services.db.kysely.updateTable('streams').set({ deactivated: 1 }).where('id', '=', stream.id).execute();
    err(await s.cast.othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'smile' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
  });

  test('reacting counts as participation for automatically_follow_topics_policy', async () => {
    const s = server();
    const { othello } = s.cast;
    const { id, stream } = await channelMessage(s);
    ok(await othello.client.patch('/settings', { automatically_follow_topics_policy: 1 }));
    const { result, events } = await captureEvents(s, () => othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'smile' }));
    ok(result);
    const userTopic = events.find((e) => e.event.type === 'user_topic');
    assert.ok(userTopic, 'user_topic event');
    assert.deepEqual(recipientIds(userTopic), [othello.user.id]);
    assert.equal(userTopic.event.stream_id, stream.id);
    assert.equal(userTopic.event.topic_name, 'reactions');
    assert.equal(userTopic.event.visibility_policy, 3);
    // Already followed: a second reaction changes nothing.
    const again = await captureEvents(s, () => othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'octopus' }));
    ok(again.result);
    assert.equal(again.events.filter((e) => e.event.type === 'user_topic').length, 0);
    ok(await othello.client.patch('/settings', { automatically_follow_topics_policy: 3 }));
  });
});
