import type { EventEnvelope } from '../../src/events/bus.js';
import type { TestServer } from './server.js';
import { assertEventConforms } from './openapi.js';

/**
 * Every event but these reaches queues as it was published, so it is held to zulip.yaml (plus
 * the listed extras) here already. `message` and `update_message` events get each recipient's
 * flags on delivery, and `presence` events are published with fields each queue picks from:
 * test/helpers/events.ts checks those as delivered.
 */
const SHAPED_ON_DELIVERY = new Set(['message', 'update_message', 'presence']);
const DELIVERED_AS_PUBLISHED = (type: string): boolean => !SHAPED_ON_DELIVERY.has(type);

/**
 * Records every envelope published on the server's event bus while `fn` runs: a direct check
 * that an action announced its change, independent of queue delivery (tested in the events suite).
 */
export async function captureEvents<T>(server: TestServer, fn: () => Promise<T>): Promise<{ result: T; events: EventEnvelope[] }> {
  const events: EventEnvelope[] = [];
  const stop = server.app.services.events.subscribe((e) => events.push(e));
  try {
    const result = await fn();
    for (const e of events) if (DELIVERED_AS_PUBLISHED(e.event.type)) assertEventConforms(e.event);
    return { result, events };
  } finally {
    stop();
  }
}

export function recipientIds(envelope: EventEnvelope): number[] {
  return envelope.users.map((u) => (typeof u === 'number' ? u : u.id)).sort((a, b) => a - b);
}
