/**
 * Per-recipient message flags, stored as a bitmask in user_messages.flags. The bits of
 * `read` (1) and `starred` (2) are fixed: the partial indexes user_messages_unread and
 * user_messages_starred (migration 0001) test them directly.
 */
export const FLAG_BITS = {
  read: 1,
  starred: 2,
  collapsed: 4,
  mentioned: 8,
  stream_wildcard_mentioned: 16,
  topic_wildcard_mentioned: 32,
  has_alert_word: 64,
  historical: 128,
  is_private: 256,
  active_mobile_push_notification: 512,
} as const;

export type FlagName = keyof typeof FLAG_BITS;

/** Flags never shown to clients (Zulip's NON_API_FLAGS). */
const NON_API_FLAGS: ReadonlySet<FlagName> = new Set(['is_private', 'active_mobile_push_notification']);

/** Flags clients may name in POST /messages/flags but not change (Zulip's NON_EDITABLE_FLAGS). */
export const NON_EDITABLE_FLAGS: ReadonlySet<string> = new Set([
  'mentioned',
  'stream_wildcard_mentioned',
  'topic_wildcard_mentioned',
  'has_alert_word',
  'historical',
]);

/** Flags that exist for the API (POST /messages/flags accepts these names, then checks editability). */
export const API_FLAGS: ReadonlySet<string> = new Set(
  (Object.keys(FLAG_BITS) as FlagName[]).filter((f) => !NON_API_FLAGS.has(f)),
);

export const isFlagName = (name: string): name is FlagName => Object.prototype.hasOwnProperty.call(FLAG_BITS, name);

/** The flags flagsList reports, in bit order (computed once: it runs for every recipient of every message). */
const API_FLAG_BITS = (Object.entries(FLAG_BITS) as [FlagName, number][]).filter(([name]) => !NON_API_FLAGS.has(name));

/**
 * The API flag list of a bitmask, in bit order. `wildcard_mentioned` is the deprecated
 * union of the two wildcard flags, still sent for older clients (feature level 224).
 */
const sharedLists = new Map<number, readonly string[]>();

/**
 * flagsList's result as one frozen array per mask, shared: a message event lists every
 * recipient's flags, and most recipients of a message have the same ones.
 */
export function sharedFlagsList(mask: number): readonly string[] {
  let list = sharedLists.get(mask);
  if (!list) sharedLists.set(mask, (list = Object.freeze(flagsList(mask))));
  return list;
}

export function flagsList(mask: number): string[] {
  const out: string[] = [];
  for (const [name, bit] of API_FLAG_BITS) if (mask & bit) out.push(name);
  if (mask & (FLAG_BITS.stream_wildcard_mentioned | FLAG_BITS.topic_wildcard_mentioned)) out.push('wildcard_mentioned');
  return out;
}
