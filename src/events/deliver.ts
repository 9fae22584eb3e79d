import type { MessageDict } from '../lib/format/messages.js';
import { messageMatchesNarrowInMemory } from '../lib/narrow/memory.js';
import type { EventEnvelope, ZulipEvent } from './bus.js';
import { capabilityBit, SharedEvent, type EventQueue } from './queue.js';

/**
 * Per-queue finalization of one published event (Zulip's process_notification): the
 * filters by event_types, narrow and client capabilities, and the per-client shapes
 * (rendered or raw message content, null Gravatar avatar URLs, bulk or one-by-one message
 * deletion, the empty topic's display name, legacy or modern presence). Every distinct
 * shape is built and serialized once per event, however many queues receive it.
 */
export class Delivery {
  private readonly shapes = new Map<string, SharedEvent | SharedEvent[]>();
  private base: SharedEvent | undefined;

  constructor(readonly envelope: EventEnvelope) {}

  private shape(key: string, build: () => ZulipEvent): SharedEvent {
    let s = this.shapes.get(key) as SharedEvent | undefined;
    if (!s) {
      s = new SharedEvent(build());
      this.shapes.set(key, s);
    }
    return s;
  }

  private plain(): SharedEvent {
    this.base ??= new SharedEvent(this.envelope.event);
    return this.base;
  }

  /**
   * Adds the event, in the form this queue should see, to `q`; `flags` are the recipient's
   * message flags when the sender gave them (undefined for a non-recipient). Returns
   * whether anything was queued.
   */
  deliverTo(q: EventQueue, flags: readonly string[] | undefined): boolean {
    const env = this.envelope;
    const event = env.event;
    const type = event.type;
    if (env.onlyIf && ((q.spec.capabilities & capabilityBit(env.onlyIf.capability)) !== 0) !== env.onlyIf.value) return false;
    if (!q.wants(type)) return false;
    // Clients asking for user_topic get muted_topics' data from it instead (Zulip's accepts_event).
    if (type === 'muted_topics' && q.eventTypes?.has('user_topic')) return false;
    const emptyTopic = !q.has('empty_topic_name');
    switch (type) {
      case 'message':
        return this.deliverMessage(q, flags);
      case 'update_message': {
        const rewrite = emptyTopic && (event.subject === '' || event.orig_subject === '' || event.topic === '');
        const shared = rewrite
          ? this.shape(`t:${q.spec.emptyTopicName}`, () => renameEmptyTopic(event, ['subject', 'orig_subject', 'topic'], q.spec.emptyTopicName))
          : this.plain();
        q.push(shared, flags);
        return true;
      }
      case 'delete_message':
        return this.deliverDeletion(q, emptyTopic);
      case 'typing':
        if (event.stream_id !== undefined && !q.has('stream_typing_notifications')) return false;
        q.push(emptyTopic && event.topic === '' ? this.shape(`t:${q.spec.emptyTopicName}`, () => ({ ...event, topic: q.spec.emptyTopicName })) : this.plain());
        return true;
      case 'user_topic':
        q.push(
          emptyTopic && event.topic_name === ''
            ? this.shape(`t:${q.spec.emptyTopicName}`, () => ({ ...event, topic_name: q.spec.emptyTopicName }))
            : this.plain(),
        );
        return true;
      case 'update_message_flags':
        q.push(emptyTopic && hasEmptyTopicDetail(event) ? this.shape(`t:${q.spec.emptyTopicName}`, () => renameDetailTopics(event, q.spec.emptyTopicName)) : this.plain());
        return true;
      case 'presence':
        q.push(this.presenceShape(q));
        return true;
      case 'realm_user':
        if (event.op === 'add' && 'inaccessible_user' in event) {
          if (event.inaccessible_user === true && q.has('user_list_incomplete')) return false;
          q.push(this.shape('add', () => withoutKey(event, 'inaccessible_user')));
          return true;
        }
        break;
      case 'update_display_settings':
      case 'update_global_notifications':
        if (q.has('user_settings_object')) return false;
        break;
      default:
        break;
    }
    q.push(this.plain(), flags);
    return true;
  }

  private deliverMessage(q: EventQueue, flags: readonly string[] | undefined): boolean {
    const env = this.envelope;
    const extra = env.message;
    const message = env.event.message as MessageDict;
    const userFlags = flags ?? [];
    if (q.spec.narrow.length > 0) {
      const matches = messageMatchesNarrowInMemory(message, userFlags, q.spec.narrow, {
        readerId: q.userId,
        emptyTopicDisplayName: q.spec.emptyTopicName,
      });
      if (!matches) return false;
    }
    const raw = !q.spec.applyMarkdown && extra !== undefined;
    const noAvatar =
      q.spec.clientGravatar && extra !== undefined && extra.senderAvatarIsGravatar && (extra.senderEmailVisibleTo?.(q.userId) ?? true);
    const renameTopic = message.type === 'stream' && message.subject === '' && !q.has('empty_topic_name');
    const key = `m${raw ? 1 : 0}${noAvatar ? 1 : 0}${renameTopic ? `:${q.spec.emptyTopicName}` : ''}`;
    const shared =
      key === 'm00'
        ? this.plain()
        : this.shape(key, () => {
            const m: MessageDict = { ...message };
            if (raw) {
              m.content = extra!.rawContent;
              m.content_type = 'text/x-markdown';
            }
            if (noAvatar) m.avatar_url = null;
            if (renameTopic) m.subject = q.spec.emptyTopicName;
            return { ...env.event, message: m };
          });
    const local = extra?.senderQueueId !== undefined && extra.senderQueueId === q.id ? extra.localId : undefined;
    q.push(shared, userFlags, local);
    return true;
  }

  private deliverDeletion(q: EventQueue, emptyTopic: boolean): boolean {
    const event = this.envelope.event;
    const rename = emptyTopic && event.topic === '';
    if (q.has('bulk_message_deletion')) {
      q.push(rename ? this.shape(`t:${q.spec.emptyTopicName}`, () => ({ ...event, topic: q.spec.emptyTopicName })) : this.plain());
      return true;
    }
    // Older clients get one event per message, with a singular message_id.
    const key = `single:${rename ? q.spec.emptyTopicName : ''}`;
    let list = this.shapes.get(key) as SharedEvent[] | undefined;
    if (!list) {
      const ids = Array.isArray(event.message_ids) ? (event.message_ids as number[]) : [];
      const rest = withoutKey(event, 'message_ids');
      if (rename) rest.topic = q.spec.emptyTopicName;
      list = ids.map((id) => new SharedEvent({ ...rest, message_id: id }));
      this.shapes.set(key, list);
    }
    for (const s of list) q.push(s);
    return list.length > 0;
  }

  /**
   * Presence events are published with every field; clients get the modern `presences`
   * map (simplified_presence_events), or the legacy fields without (slim_presence) or
   * with the user's email.
   */
  private presenceShape(q: EventQueue): SharedEvent {
    const e = this.envelope.event;
    if (q.has('simplified_presence_events')) return this.shape('modern', () => ({ type: 'presence', presences: e.presences }));
    if (q.spec.slimPresence) {
      return this.shape('slim', () => ({ type: 'presence', user_id: e.user_id, server_timestamp: e.server_timestamp, presence: e.presence }));
    }
    return this.shape('legacy', () => ({
      type: 'presence',
      user_id: e.user_id,
      email: e.email,
      server_timestamp: e.server_timestamp,
      presence: e.presence,
    }));
  }
}

function withoutKey(event: ZulipEvent, key: string): ZulipEvent {
  const copy: ZulipEvent = { ...event };
  delete copy[key];
  return copy;
}

function renameEmptyTopic(event: ZulipEvent, keys: string[], name: string): ZulipEvent {
  const copy: ZulipEvent = { ...event };
  for (const k of keys) if (copy[k] === '') copy[k] = name;
  return copy;
}

type MessageDetails = Record<string, { type?: string; topic?: string }>;

function hasEmptyTopicDetail(event: ZulipEvent): boolean {
  const details = event.message_details as MessageDetails | undefined;
  if (!details || typeof details !== 'object') return false;
  return Object.values(details).some((d) => d.type === 'stream' && d.topic === '');
}

function renameDetailTopics(event: ZulipEvent, name: string): ZulipEvent {
  const details: MessageDetails = {};
  for (const [id, d] of Object.entries(event.message_details as MessageDetails)) {
    details[id] = d.type === 'stream' && d.topic === '' ? { ...d, topic: name } : d;
  }
  return { ...event, message_details: details };
}
