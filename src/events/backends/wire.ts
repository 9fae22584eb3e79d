import type { CapabilityFilter, EventEnvelope, EventRecipient, ZulipEvent } from '../bus.js';

/**
 * An EventEnvelope as one entry of the shared Redis log: compact (a 10,000-recipient
 * message lists its flag sets once) and free of functions.
 */
interface WireEnvelope {
  r: number;
  e: ZulipEvent;
  u: number[];
  /** Per recipient: index into `fs`, or -1 for a plain user ID; absent when nobody has flags. */
  f?: number[];
  fs?: (readonly string[])[];
  m?: {
    raw: string;
    g: boolean;
    /** Recipients who cannot see the sender's real email. */
    h?: number[];
    q?: string;
    l?: string;
    p?: boolean;
  };
  o?: CapabilityFilter;
}

export function encodeEnvelope(env: EventEnvelope): string {
  const u: number[] = new Array(env.users.length);
  let f: number[] | undefined;
  const sets = new Map<string, number>();
  const fs: (readonly string[])[] = [];
  env.users.forEach((r, i) => {
    if (typeof r === 'number') {
      u[i] = r;
      if (f) f[i] = -1;
      return;
    }
    u[i] = r.id;
    if (!f) f = new Array(env.users.length).fill(-1);
    const key = r.flags.join(',');
    let idx = sets.get(key);
    if (idx === undefined) {
      idx = fs.length;
      fs.push(r.flags);
      sets.set(key, idx);
    }
    f[i] = idx;
  });
  const wire: WireEnvelope = { r: env.realmId, e: env.event, u };
  if (f) {
    wire.f = f;
    wire.fs = fs;
  }
  const m = env.message;
  if (m) {
    wire.m = { raw: m.rawContent, g: m.senderAvatarIsGravatar };
    if (m.senderAvatarIsGravatar && m.senderEmailVisibleTo) {
      const visible = m.senderEmailVisibleTo;
      const hidden = u.filter((id) => !visible(id));
      if (hidden.length) wire.m.h = hidden;
    }
    if (m.senderQueueId !== undefined) wire.m.q = m.senderQueueId;
    if (m.localId !== undefined) wire.m.l = m.localId;
    if (m.publicStream) wire.m.p = true;
  }
  if (env.onlyIf) wire.o = env.onlyIf;
  return JSON.stringify(wire);
}

export function decodeEnvelope(text: string): EventEnvelope {
  const w = JSON.parse(text) as WireEnvelope;
  const users: EventRecipient[] = w.f ? w.u.map((id, i) => (w.f![i]! >= 0 ? { id, flags: w.fs![w.f![i]!]! } : id)) : w.u;
  const env: EventEnvelope = { realmId: w.r, event: w.e, users };
  if (w.m) {
    const hidden = new Set(w.m.h ?? []);
    let recipients: Set<number> | undefined;
    env.message = {
      rawContent: w.m.raw,
      senderAvatarIsGravatar: w.m.g,
      // Only recipients were asked; anyone else (an all_public_streams queue) keeps the URL.
      senderEmailVisibleTo: (id) => {
        recipients ??= new Set(w.u);
        return recipients.has(id) && !hidden.has(id);
      },
      senderQueueId: w.m.q,
      localId: w.m.l,
      publicStream: w.m.p === true,
    };
  }
  if (w.o) env.onlyIf = w.o;
  return env;
}
