import { FLAG_BITS } from '../message_flags.js';

/**
 * Zulip's UserMessage.flags bit order (ALL_FLAGS): the first six bits are Parley's, then four
 * retired flags Parley never stored, then the rest.
 */
const ZULIP_BITS: Record<keyof typeof FLAG_BITS, number> = {
  read: 1,
  starred: 2,
  collapsed: 4,
  mentioned: 8,
  stream_wildcard_mentioned: 16,
  topic_wildcard_mentioned: 32,
  has_alert_word: 1024,
  historical: 2048,
  is_private: 4096,
  active_mobile_push_notification: 8192,
};

const NAMES = Object.keys(FLAG_BITS) as (keyof typeof FLAG_BITS)[];

export function toZulipFlagsMask(flags: number): number {
  let mask = 0;
  for (const n of NAMES) if (flags & FLAG_BITS[n]) mask |= ZULIP_BITS[n];
  return mask;
}

export function fromZulipFlagsMask(mask: number): number {
  let flags = 0;
  for (const n of NAMES) if (mask & ZULIP_BITS[n]) flags |= FLAG_BITS[n];
  return flags;
}
