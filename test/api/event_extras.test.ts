import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDatabase, type TestServer } from '../helpers/server.js';
import { ok } from '../helpers/assert.js';
import { EVENT_EXTRAS, EXTRA_EVENT_TYPES, hasPath, type EventExtra } from '../helpers/event_extras.js';
import { registerQueue, type ZEvent } from '../helpers/events.js';
import { assertEventConforms, eventSchemaErrors, openapiDoc } from '../helpers/openapi.js';
import { createChannel, uniqueName } from './messages_send.fixtures.js';

/**
 * For each entry of EVENT_EXTRAS, the action that makes the server send it, and the events a
 * real queue received (so the check sees what clients see). Keyed `type/op/field`.
 */
type Producer = (s: TestServer) => Promise<ZEvent[]>;

async function reactionEvents(s: TestServer): Promise<ZEvent[]> {
  const { hamlet, othello } = s.cast;
  const name = uniqueName('Extras');
  await createChannel(s, name, { subscribers: [hamlet.user, othello.user] });
  const id = ok(await hamlet.client.post('/messages', { type: 'stream', to: name, topic: 'extras', content: 'react' })).id as number;
  const q = await registerQueue(hamlet.client, { event_types: ['reaction'] });
  ok(await othello.client.post(`/messages/${id}/reactions`, { emoji_name: 'octopus' }));
  ok(await othello.client.delete(`/messages/${id}/reactions`, { emoji_name: 'octopus' }));
  const events = [await q.next('reaction'), await q.next('reaction')];
  await q.delete();
  return events;
}

const PRODUCERS: Record<string, Producer> = {
  'reaction/add/user': reactionEvents,
  'reaction/remove/user': reactionEvents,
};

const keyOf = (x: EventExtra): string => `${x.type}/${x.op ?? '*'}/${x.field}`;

forEachDatabase('event fields beyond zulip.yaml', (server) => {
  test('every listed extra has a producer here, and only those', () => {
    assert.deepEqual(Object.keys(PRODUCERS).sort(), EVENT_EXTRAS.map(keyOf).sort());
  });

  for (const extra of EVENT_EXTRAS) {
    test(`${keyOf(extra)} is sent, and is beyond zulip.yaml`, async () => {
      const events = (await PRODUCERS[keyOf(extra)]!(server())).filter((e) => e.type === extra.type && (extra.op === undefined || e.op === extra.op));
      assert.ok(events.length > 0, `no ${extra.type} ${extra.op ?? ''} event was sent`);
      for (const e of events) {
        assert.ok(hasPath(e, extra.field), `${extra.type} ${extra.op ?? ''} event without ${extra.field}: ${JSON.stringify(e)}`);
        assertEventConforms(e);
        // zulip.yaml alone rejects it: an entry for a field the document has (again) is stale.
        if (openapiDoc()) assert.notEqual(eventSchemaErrors(e), null, `zulip.yaml accepts ${extra.field} now: drop it from EVENT_EXTRAS`);
      }
    });
  }

  test('a field neither zulip.yaml nor the list names fails the schema check, at any depth', async () => {
    if (!openapiDoc()) return;
    const [added] = await reactionEvents(server());
    assertEventConforms(added!);
    const rejects = (field: string) => new RegExp(`"additionalProperty": "${field}"`);
    assert.throws(() => assertEventConforms({ ...added!, surprise: 1 }), rejects('surprise'));
    assert.throws(() => assertEventConforms({ ...added!, user: { ...added!.user, surprise: 1 } }), rejects('surprise'));
    // An extra is allowed only for the type and op it is listed for.
    assert.throws(() => assertEventConforms({ type: 'alert_words', alert_words: [], user: added!.user }), rejects('user'));
  });

  test("spec-only event types are unknown to zulip.yaml and held to the shape of the Zulip event they mirror", () => {
    if (!openapiDoc()) return;
    for (const t of EXTRA_EVENT_TYPES) {
      const event = { ...t.example, type: t.type };
      assert.notEqual(eventSchemaErrors(event), null, `zulip.yaml documents ${t.type} now: drop it from EXTRA_EVENT_TYPES`);
      assertEventConforms(event);
      assert.throws(() => assertEventConforms({ ...event, surprise: 1 }), /"additionalProperty": "surprise"/);
    }
  });
});
