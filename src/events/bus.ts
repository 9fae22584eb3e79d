/**
 * The single way state changes reach clients. Actions call `send` after their transaction
 * commits; the event-queue subsystem (memory or Redis backed) subscribes and delivers.
 */
export interface ZulipEvent {
  type: string;
  [key: string]: unknown;
}

/** A recipient user ID, or for message events a user ID with that user's flags. */
export type EventRecipient = number | { id: number; flags: string[] };

export interface EventEnvelope {
  realmId: number;
  event: ZulipEvent;
  users: EventRecipient[];
}

export type EventListener = (envelope: EventEnvelope) => void;

export class EventBus {
  private listeners: EventListener[] = [];

  subscribe(listener: EventListener): () => void {
    this.listeners.push(listener);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  send(realmId: number, event: ZulipEvent, users: EventRecipient[]): void {
    if (users.length === 0) return;
    const envelope = { realmId, event, users };
    for (const l of this.listeners) l(envelope);
  }
}
