/**
 * The single way state changes reach clients. Actions call `send` after their transaction
 * commits; the event-queue subsystem (memory or Redis backed) subscribes and delivers.
 */
export interface ZulipEvent {
  type: string;
  [key: string]: unknown;
}

/** A recipient user ID, or for message events a user ID with that user's flags. */
export type EventRecipient = number | { id: number; flags: readonly string[] };

/**
 * A `message` event is published once, formatted as for apply_markdown=true and
 * client_gravatar=false; each queue then finalizes its own copy from `message`:
 * raw Markdown for apply_markdown=false queues, a null avatar_url for client_gravatar queues
 * when allowed, the recipient's top-level `flags`, and `local_message_id` for the sender's
 * queue. Other events are delivered as they are.
 */
export interface MessageEventExtra {
  rawContent: string;
  /** Whether the sender's avatar comes from the external avatar provider (Gravatar). */
  senderAvatarIsGravatar: boolean;
  /** Whether the sender's real email is visible to each recipient, for client_gravatar. */
  senderEmailVisibleTo?: (userId: number) => boolean;
  senderQueueId?: string;
  localId?: string;
  /**
   * True for a message in a public channel: queues registered with all_public_streams (or a
   * narrow) then receive it even when their user is not a recipient, with empty flags.
   */
  publicStream?: boolean;
}

/**
 * Deliver only to queues whose client declared (or did not declare) a capability: Zulip sends
 * some changes in two shapes, e.g. a deactivated user group is an `update` for clients with
 * include_deactivated_groups and a `remove` for the others.
 */
export interface CapabilityFilter {
  capability: string;
  value: boolean;
}

export interface EventEnvelope {
  realmId: number;
  event: ZulipEvent;
  users: EventRecipient[];
  message?: MessageEventExtra;
  onlyIf?: CapabilityFilter;
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

  send(realmId: number, event: ZulipEvent, users: EventRecipient[], message?: MessageEventExtra, onlyIf?: CapabilityFilter): void {
    if (users.length === 0) return;
    const envelope: EventEnvelope = { realmId, event, users, message, onlyIf };
    for (const l of this.listeners) l(envelope);
  }
}
