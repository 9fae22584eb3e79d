/**
 * One error model (design rule 5): every client-visible failure is a JsonableError
 * carrying Zulip's `code`, an HTTP status and any extra fields, rendered by the single
 * error handler in plugins/errors.ts as {"result":"error","msg":...,"code":...,...extra}.
 */
export type ErrorCode =
  | 'BAD_REQUEST'
  | 'REQUEST_VARIABLE_MISSING'
  | 'REQUEST_VARIABLE_INVALID'
  | 'INVALID_JSON'
  | 'BAD_NARROW'
  | 'MISSING_HTTP_EVENT_HEADER'
  | 'STREAM_DOES_NOT_EXIST'
  | 'UNAUTHORIZED_PRINCIPAL'
  | 'UNEXPECTED_WEBHOOK_EVENT_TYPE'
  | 'UNSUPPORTED_WEBHOOK_EVENT_TYPE'
  | 'ANOMALOUS_WEBHOOK_PAYLOAD'
  | 'BAD_EVENT_QUEUE_ID'
  | 'CSRF_FAILED'
  | 'INVITATION_FAILED'
  | 'INVALID_ZULIP_SERVER'
  | 'INVALID_PUSH_DEVICE_TOKEN'
  | 'INVALID_REMOTE_PUSH_DEVICE_TOKEN'
  | 'PUSH_SERVICE_NOT_CONFIGURED'
  | 'NO_ACTIVE_PUSH_DEVICE'
  | 'INVALID_MARKDOWN_INCLUDE_STATEMENT'
  | 'REQUEST_CONFUSING_VAR'
  | 'INVALID_API_KEY'
  | 'INVALID_ZOOM_TOKEN'
  | 'INVALID_VIDEO_CALL_PROVIDER_TOKEN'
  | 'UNAUTHENTICATED_USER'
  | 'NONEXISTENT_SUBDOMAIN'
  | 'RATE_LIMIT_HIT'
  | 'USER_DEACTIVATED'
  | 'REALM_DEACTIVATED'
  | 'PASSWORD_AUTH_DISABLED'
  | 'PASSWORD_RESET_REQUIRED'
  | 'AUTHENTICATION_FAILED'
  | 'UNAUTHORIZED'
  | 'REQUEST_TIMEOUT'
  | 'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED'
  | 'REACTION_ALREADY_EXISTS'
  | 'REACTION_DOES_NOT_EXIST'
  | 'SERVER_NOT_READY'
  | 'STREAM_WILDCARD_MENTION_NOT_ALLOWED'
  | 'TOPIC_WILDCARD_MENTION_NOT_ALLOWED'
  | 'STREAM_ALREADY_EXISTS'
  | 'CHANNEL_ALREADY_EXISTS'
  | 'SYSTEM_GROUP_REQUIRED'
  | 'CANNOT_DEACTIVATE_LAST_USER'
  | 'CANNOT_DEACTIVATE_GROUP_IN_USE'
  | 'CANNOT_ADMINISTER_CHANNEL'
  | 'TOPICS_NOT_ALLOWED'
  | 'NOT_FOUND'
  | 'PAYLOAD_TOO_LARGE'
  | 'PERMISSION_DENIED'
  | 'BAD_IMAGE'
  | 'INTERNAL_SERVER_ERROR';

export class JsonableError extends Error {
  readonly code: ErrorCode;
  readonly httpStatus: number;
  readonly extra: Record<string, unknown>;

  constructor(msg: string, code: ErrorCode = 'BAD_REQUEST', httpStatus = 400, extra: Record<string, unknown> = {}) {
    super(msg);
    this.code = code;
    this.httpStatus = httpStatus;
    this.extra = extra;
  }

  toJSON(): Record<string, unknown> {
    return { result: 'error', msg: this.message, code: this.code, ...this.extra };
  }
}

export const badRequest = (msg: string, extra: Record<string, unknown> = {}): JsonableError =>
  new JsonableError(msg, 'BAD_REQUEST', 400, extra);

export const missingParam = (name: string): JsonableError =>
  new JsonableError(`Missing '${name}' argument`, 'REQUEST_VARIABLE_MISSING', 400, { var_name: name });

export const notFound = (msg = 'Not found'): JsonableError => new JsonableError(msg, 'NOT_FOUND', 404);

export const unauthorized = (msg: string, code: ErrorCode = 'UNAUTHORIZED'): JsonableError =>
  new JsonableError(msg, code, 401);

/** Zulip answers "Insufficient permission" with 400 BAD_REQUEST in almost every view. */
export const insufficientPermission = (): JsonableError => badRequest('Insufficient permission');

export const streamDoesNotExist = (name: string): JsonableError =>
  new JsonableError(`Channel '${name}' does not exist`, 'STREAM_DOES_NOT_EXIST', 400, { stream: name });

/** Zulip's OrganizationAdministratorRequiredError (HTTP 400). */
export const adminRequired = (): JsonableError =>
  new JsonableError('Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL', 400);

/** Zulip's OrganizationOwnerRequiredError (HTTP 400). */
export const ownerRequired = (): JsonableError =>
  new JsonableError('Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL', 400);
