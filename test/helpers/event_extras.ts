/**
 * The event fields Parley sends beyond zulip.yaml: each one Zulip's own server sends (or sent
 * until recently) and some client still reads. zulip.yaml is the floor of the wire contract,
 * not all of it. The schema check (assertEventConforms) accepts exactly these extras and
 * nothing else, and test/api/event_extras.test.ts proves each one is still sent.
 *
 * `field` is a path into the event: `a.b` for key `b` of the object at key `a`.
 */
export interface EventExtra {
  type: string;
  /** The event's op; every op when absent. */
  op?: string;
  field: string;
  /** JSON Schema of its value: the extra is held to it, as the rest of the event is to zulip.yaml. */
  schema: Record<string, unknown>;
  /** Which client needs it, and why it is not in zulip.yaml. */
  reason: string;
  /** Where Zulip's server puts it: file and function. */
  zulip: string;
}

/** Zulip's legacy user dict of reaction events. */
const REACTION_USER = {
  type: 'object',
  additionalProperties: false,
  required: ['user_id', 'email', 'full_name'],
  properties: { user_id: { type: 'integer' }, email: { type: 'string' }, full_name: { type: 'string' } },
};

export const EVENT_EXTRAS: readonly EventExtra[] = [
  {
    type: 'reaction',
    op: 'add',
    field: 'user',
    schema: REACTION_USER,
    reason:
      "the reactor's {user_id, email, full_name} beside user_id. Zulip sent it up to feature level 483 (dropped at 328, back in events at 339, gone at 484) and zulip.yaml does not list it; zulip-terminal's Model._handle_reaction_event stores it as the reaction's user and MessageBox.reactions_view reads its id and full_name: without it the message's whole reaction line disappears",
    zulip: 'zerver/actions/reactions.py notify_reaction_update (user_dict)',
  },
  {
    type: 'reaction',
    op: 'remove',
    field: 'user',
    schema: REACTION_USER,
    reason: "as for add: zulip-terminal asserts that a removal's user is a dict (an AssertionError pops up without it)",
    zulip: 'zerver/actions/reactions.py notify_reaction_update (user_dict)',
  },
];

export function extrasFor(event: { type?: unknown; op?: unknown }): EventExtra[] {
  return EVENT_EXTRAS.filter((x) => x.type === event.type && (x.op === undefined || x.op === event.op));
}

/** Whether `value` has something at `path` (`a.b`: key `b` of the object at key `a`). */
export function hasPath(value: unknown, path: string): boolean {
  return valuesAtPath(value, path).length > 0;
}

/** The value at `path` in `value`, as a list of one, or none if it is absent. */
export function valuesAtPath(value: unknown, path: string): unknown[] {
  let current: unknown = value;
  for (const key of path.split('.')) {
    if (!current || typeof current !== 'object' || !Object.hasOwn(current, key)) return [];
    current = (current as Record<string, unknown>)[key];
  }
  return [current];
}

/** A copy of `value` without what is at `path`. */
export function withoutPath(value: unknown, path: string): unknown {
  const [key, ...rest] = path.split('.') as [string, ...string[]];
  if (!value || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return value;
  const out = { ...(value as Record<string, unknown>) };
  if (rest.length === 0) delete out[key];
  else out[key] = withoutPath(out[key], rest.join('.'));
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
  /** The event's fields besides `type`, as sent (the check of the list uses it). */
  example: Record<string, unknown>;
}

export const EXTRA_EVENT_TYPES: readonly ExtraEventType[] = [
  {
    type: 'has_vidcall_token',
    sameShapeAs: 'has_webex_token',
    reason: "our spec's provider-neutral name for Zulip's has_zoom_token / has_webex_token, sent beside Zulip's own name",
    example: { value: true },
  },
];

/** What zulip.yaml should accept: listed extras removed, spec-only event types under the name they mirror. */
export function asDocumented(event: Record<string, unknown>): Record<string, unknown> {
  const alias = EXTRA_EVENT_TYPES.find((t) => t.type === event.type);
  const out = withoutListedExtras(event);
  return alias ? { ...out, type: alias.sameShapeAs } : out;
}
