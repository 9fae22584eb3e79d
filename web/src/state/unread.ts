import type { Message } from '../api/types';

/** Where an unread message sits: a channel topic, or a direct-message conversation. */
export type Conversation = { kind: 'stream'; stream_id: number; topic: string } | { kind: 'dm'; user_ids: number[] };

export const dmKey = (ids: number[]) => [...ids].sort((a, b) => a - b).join(',');
const topicKey = (streamId: number, topic: string) => `${streamId}\u0000${topic.toLowerCase()}`;

interface Counts {
  streams: Map<number, number>;
  topics: Map<string, number>;
  dms: Map<string, number>;
  mentions: number;
}

/** Zulip's unread module: every unread message id and its conversation; counts derived on demand. */
export class UnreadIndex {
  private readonly where = new Map<number, Conversation>();
  private readonly mentioned = new Set<number>();
  private cache: Counts | null = null;

  constructor(private readonly myId: number) {}

  /** From register's unread_msgs. */
  load(unread: any): void {
    for (const s of unread.streams ?? []) for (const id of s.unread_message_ids) this.where.set(id, { kind: 'stream', stream_id: s.stream_id, topic: s.topic });
    for (const p of unread.pms ?? []) for (const id of p.unread_message_ids) this.where.set(id, { kind: 'dm', user_ids: [p.other_user_id ?? p.sender_id] });
    for (const h of unread.huddles ?? []) {
      const ids = String(h.user_ids_string).split(',').map(Number).filter((x) => x !== this.myId);
      for (const id of h.unread_message_ids) this.where.set(id, { kind: 'dm', user_ids: ids });
    }
    for (const id of unread.mentions ?? []) this.mentioned.add(id);
    this.cache = null;
  }

  conversationOf(m: Message): Conversation {
    if (m.type === 'stream') return { kind: 'stream', stream_id: m.stream_id!, topic: m.subject };
    const ids = Array.isArray(m.display_recipient) ? m.display_recipient.map((r) => r.id).filter((id) => id !== this.myId) : [];
    return { kind: 'dm', user_ids: ids.length ? ids : [this.myId] };
  }

  add(m: Message): void {
    this.where.set(m.id, this.conversationOf(m));
    if (m.flags.includes('mentioned') || m.flags.includes('wildcard_mentioned')) this.mentioned.add(m.id);
    this.cache = null;
  }

  /** From an update_message_flags "read" remove event, which carries each message's conversation. */
  addDetails(id: number, d: any): void {
    if (d.type === 'stream') this.where.set(id, { kind: 'stream', stream_id: d.stream_id, topic: d.topic });
    else this.where.set(id, { kind: 'dm', user_ids: (d.user_ids ?? []).length ? d.user_ids : [this.myId] });
    if (d.mentioned) this.mentioned.add(id);
    this.cache = null;
  }

  remove(id: number): void {
    if (this.where.delete(id) || this.mentioned.delete(id)) this.cache = null;
  }

  /** A message moved (topic or channel): its unread entry moves with it. */
  move(id: number, streamId: number, topic: string): void {
    const c = this.where.get(id);
    if (c?.kind === 'stream') {
      this.where.set(id, { kind: 'stream', stream_id: streamId, topic });
      this.cache = null;
    }
  }

  has(id: number): boolean {
    return this.where.has(id);
  }

  idsWhere(pred: (c: Conversation) => boolean): number[] {
    const out: number[] = [];
    for (const [id, c] of this.where) if (pred(c)) out.push(id);
    return out;
  }

  private counts(): Counts {
    if (this.cache) return this.cache;
    const c: Counts = { streams: new Map(), topics: new Map(), dms: new Map(), mentions: this.mentioned.size };
    for (const conv of this.where.values()) {
      if (conv.kind === 'stream') {
        c.streams.set(conv.stream_id, (c.streams.get(conv.stream_id) ?? 0) + 1);
        const k = topicKey(conv.stream_id, conv.topic);
        c.topics.set(k, (c.topics.get(k) ?? 0) + 1);
      } else {
        const k = dmKey(conv.user_ids);
        c.dms.set(k, (c.dms.get(k) ?? 0) + 1);
      }
    }
    this.cache = c;
    return c;
  }

  streamCount(streamId: number): number {
    return this.counts().streams.get(streamId) ?? 0;
  }

  topicCount(streamId: number, topic: string): number {
    return this.counts().topics.get(topicKey(streamId, topic)) ?? 0;
  }

  dmCount(ids: number[]): number {
    return this.counts().dms.get(dmKey(ids)) ?? 0;
  }

  get total(): number {
    return this.where.size;
  }

  get mentions(): number {
    return this.counts().mentions;
  }

  /** Unread conversations, for the Inbox view: channel topics and DMs with their counts and newest id. */
  conversations(): { conv: Conversation; count: number; maxId: number }[] {
    const by = new Map<string, { conv: Conversation; count: number; maxId: number }>();
    for (const [id, conv] of this.where) {
      const k = conv.kind === 'stream' ? `s${topicKey(conv.stream_id, conv.topic)}` : `d${dmKey(conv.user_ids)}`;
      const e = by.get(k);
      if (e) {
        e.count++;
        e.maxId = Math.max(e.maxId, id);
      } else by.set(k, { conv, count: 1, maxId: id });
    }
    return [...by.values()].sort((a, b) => b.maxId - a.maxId);
  }
}
