/**
 * The event fields Parley sends beyond zulip.yaml: each one Zulip's own server sends (or sent
 * until recently) and some client still reads. zulip.yaml is the floor of the wire contract,
 * not all of it. The schema check (assertEventConforms) accepts exactly these extras and
 * nothing else, and test/api/event_extras.test.ts proves each one is still sent.
 *
 * `field` is a path into the event: `a.b` for a nested object, `a[].b` for every item of a list.
 */
export interface EventExtra {
  type: string;
  /** The event's op; every op when absent. */
  op?: string;
  field: string;
  /** Which client needs it, and why it is not in zulip.yaml. */
  reason: string;
  /** Where Zulip's server puts it: file and function. */
  zulip: string;
}

export const EVENT_EXTRAS: readonly EventExtra[] = [
  {
    type: 'reaction',
    op: 'add',
    field: 'user',
    reason:
      "{user_id, email, full_name} of the reactor. zulip.yaml dropped it at feature level 328 (restored in events at 339, removed for good at 484); zulip-terminal stores it as the reaction's user and its reactions line reads user.full_name (the line vanishes without it)",
    zulip: 'zerver/actions/reactions.py notify_reaction_update (user_dict)',
  },
  {
    type: 'reaction',
    op: 'remove',
    field: 'user',
    reason: 'as for op add: zulip-terminal asserts the removed reaction\'s user is a dict',
    zulip: 'zerver/actions/reactions.py notify_reaction_update (user_dict)',
  },
];

export function extrasFor(event: { type?: unknown; op?: unknown }): EventExtra[] {
  return EVENT_EXTRAS.filter((x) => x.type === event.type && (x.op === undefined || x.op === event.op));
}

/** Whether `value` has something at `path` (for `a[].b`: some item of `a` has `b`). */
export function hasPath(value: unknown, path: string): boolean {
  return valuesAt(value, path.split('.')).length > 0;
}

function valuesAt(value: unknown, segments: string[]): unknown[] {
  if (segments.length === 0) return [value];
  const [head, ...rest] = segments as [string, ...string[]];
  const list = head.endsWith('[]');
  const key = list ? head.slice(0, -2) : head;
  if (!value || typeof value !== 'object' || !Object.hasOwn(value, key)) return [];
  const child = (value as Record<string, unknown>)[key];
  if (!list) return valuesAt(child, rest);
  return Array.isArray(child) ? child.flatMap((item) => valuesAt(item, rest)) : [];
}

/** A copy of `value` without what is at `path`. */
export function withoutPath(value: unknown, path: string): unknown {
  return omit(value, path.split('.'));
}

function omit(value: unknown, segments: string[]): unknown {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
  const [head, ...rest] = segments as [string, ...string[]];
  const list = head.endsWith('[]');
  const key = list ? head.slice(0, -2) : head;
  if (!Object.hasOwn(value, key)) return value;
  const out = { ...(value as Record<string, unknown>) };
  if (rest.length === 0 && !list) {
    delete out[key];
    return out;
  }
  const child = out[key];
  out[key] = list ? (Array.isArray(child) ? child.map((item) => omit(item, rest)) : child) : omit(child, rest);
  return out;
}

/** The event as zulip.yaml alone describes it: the listed extras for its type and op removed. */
export function withoutListedExtras(event: Record<string, unknown>): Record<string, unknown> {
  let out: unknown = event;
  for (const x of extrasFor(event)) out = withoutPath(out, x.field);
  return out as Record<string, unknown>;
}

/**
 * Event types our spec (shared/spec/team-chat-api.md) adds beside Zulip's: each is checked as
 * the zulip.yaml event it mirrors, so its shape is held to the same schema.
 */
export interface ExtraEventType {
  type: string;
  sameShapeAs: string;
  reason: string;
}

export const EXTRA_EVENT_TYPES: readonly ExtraEventType[] = [
  {
    type: 'has_vidcall_token',
    sameShapeAs: 'has_webex_token',
    reason: "our spec's provider-neutral name for Zulip's has_zoom_token / has_webex_token, sent beside Zulip's own name",
  },
];

/** What zulip.yaml should accept: listed extras removed, spec-only event types under the name they mirror. */
export function asDocumented(event: Record<string, unknown>): Record<string, unknown> {
  const alias = EXTRA_EVENT_TYPES.find((t) => t.type === event.type);
  const out = withoutListedExtras(event);
  return alias ? { ...out, type: alias.sameShapeAs } : out;
}
