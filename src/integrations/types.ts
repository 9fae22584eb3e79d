/**
 * The shape every incoming integration shares. An integration is a pure function from the
 * request a third-party service made (its parsed payload, headers and query) to the messages
 * Zulip's view for that service would post; it does no I/O, so it is tested without a server.
 */

export interface WebhookRequest {
  /** The body parsed as JSON (null when the integration reads a form instead). */
  payload: unknown;
  /** The body as received, for integrations that accept form-encoded payloads. */
  rawBody: string;
  contentType: string;
  /** Header names in lower case. */
  headers: Readonly<Record<string, string | undefined>>;
  query: Readonly<Record<string, string | undefined>>;
}

/** The organization's people, for integrations that name them (Jira's mentions and assignees). */
export interface UserDirectory {
  /** The full name of the active or inactive user with this real email, case-insensitively. */
  fullNameByDeliveryEmail(email: string): Promise<string | null>;
  /**
   * Zulip's guess_zulip_user_from_jira: the oldest active user whose full name is `name` or
   * whose email starts with it, case-insensitively.
   */
  guessFullName(name: string): Promise<string | null>;
}

export interface WebhookMessage {
  topic: string;
  body: string;
  /**
   * The event's name for `only_events` / `exclude_events` (Zulip's complete_event_type);
   * undefined for integrations that do not filter.
   */
  eventType?: string;
}

export interface Integration {
  /** The URL segment: /api/v1/external/<name>. */
  name: string;
  /** The name Zulip's webhook_view gives it: in errors and the client `Zulip<name>Webhook`. */
  webhookName: string;
  /** False for integrations that read a form body themselves (Slack's `payload=`). */
  jsonBody: boolean;
  /**
   * URL-decodes `stream` and `topic` once more: Jira double-encodes them (Zulip's
   * unquote_url_parameters).
   */
  unquoteUrlParameters?: boolean;
  /** False where Zulip's webhook_view has notify_bot_owner_on_invalid_json=False (Slack, Zapier). */
  notifyBotOwnerOnInvalidJson?: boolean;
  /** Returns the messages to post, in order; an empty list posts nothing and succeeds. */
  handle(req: WebhookRequest, users: UserDirectory): WebhookMessage[] | Promise<WebhookMessage[]>;
}

/** Zulip's UnsupportedWebhookEventTypeError: an event the service sends that we do not render. */
export class UnsupportedEventError extends Error {
  constructor(readonly eventType: string) {
    super(`unsupported event ${eventType}`);
  }
}

/** Zulip's AnomalousWebhookPayloadError: the payload is not what this service sends. */
export class AnomalousPayloadError extends Error {
  constructor() {
    super('anomalous webhook payload');
  }
}

/** Zulip's MissingHTTPEventHeader. */
export class MissingEventHeaderError extends Error {
  constructor(readonly header: string) {
    super(`missing header ${header}`);
  }
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** A JSON object's field, or undefined when the value is not an object or lacks it. */
export function field(value: unknown, ...path: (string | number)[]): unknown {
  let v: unknown = value;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[key];
  }
  return v;
}

/** A string field; a missing or non-string value is a payload the service did not send. */
export function str(value: unknown, ...path: (string | number)[]): string {
  const v = field(value, ...path);
  if (typeof v !== 'string') throw new AnomalousPayloadError();
  return v;
}

/** An optional string field (absent or null: undefined). */
export function optStr(value: unknown, ...path: (string | number)[]): string | undefined {
  const v = field(value, ...path);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new AnomalousPayloadError();
  return v;
}

export function num(value: unknown, ...path: (string | number)[]): number {
  const v = field(value, ...path);
  if (typeof v !== 'number') throw new AnomalousPayloadError();
  return v;
}

export function list(value: unknown, ...path: (string | number)[]): unknown[] {
  const v = field(value, ...path);
  if (!Array.isArray(v)) throw new AnomalousPayloadError();
  return v;
}

export type { Json };

export function bool(value: unknown, ...path: (string | number)[]): boolean {
  const v = field(value, ...path);
  if (typeof v !== 'boolean') throw new AnomalousPayloadError();
  return v;
}

/** Python's truthiness, which Zulip's `payload.get(x)` / `if payload[x]` tests rely on. */
export function truthy(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

/** Whether a JSON object has this key (Python's `key in payload`). */
export function has(value: unknown, key: string): boolean {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && Object.hasOwn(value, key);
}

/** The lower-cased header, or MissingEventHeaderError (Zulip's validate_extract_webhook_http_header). */
export function requireHeader(headers: Readonly<Record<string, string | undefined>>, name: string): string {
  const v = headers[name.toLowerCase()];
  if (v === undefined) throw new MissingEventHeaderError(name);
  return v;
}
