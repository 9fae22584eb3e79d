import type { EventEnvelope } from '../../src/events/bus.js';
import type { TestServer } from './server.js';

/**
 * Records every envelope published on the server's event bus while `fn` runs: a direct check
 * that an action announced its change, independent of queue delivery (tested in the events suite).
 */
export async function captureEvents<T>(server: TestServer, fn: () => Promise<T>): Promise<{ result: T; events: EventEnvelope[] }> {
  const events: EventEnvelope[] = [];
  const stop = server.app.services.events.subscribe((e) => events.push(e));
  try {
    const result = await fn();
    return { result, events };
  } finally {
    stop();
  }
}

export function recipientIds(envelope: EventEnvelope): number[] {
  return envelope.users.map((u) => (typeof u === 'number' ? u : u.id)).sort((a, b) => a - b);
}
