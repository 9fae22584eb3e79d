import type { FastifyError, FastifyInstance } from 'fastify';
import { JsonableError } from '../errors.js';

const PG_INVALID_BYTE_SEQUENCE = '22021';

/**
 * Zulip's HttpResponseUnauthorized: a browser's requests (/json without Basic auth, the login
 * pages) are challenged with the "Session" scheme, which browsers do not answer with a
 * password dialog, as they would a "Basic" one.
 */
function browserRequest(url: string, authorization: string | undefined): boolean {
  return (url.startsWith('/json/') && !authorization) || url.startsWith('/accounts/');
}

/**
 * The one place errors become HTTP responses: JsonableErrors with their own status and
 * fields; framework errors (oversized or malformed bodies) as 4xx JSON; anything else as
 * a logged 500 without internals.
 */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | JsonableError | Error, req, reply) => {
    if (err instanceof JsonableError) {
      if (err.code === 'RATE_LIMIT_HIT' && err.extra['retry-after'] !== undefined) {
        reply.header('Retry-After', String(Math.ceil(Number(err.extra['retry-after']))));
      }
      if (err.httpStatus === 401) reply.header('WWW-Authenticate', browserRequest(req.url, req.headers.authorization) ? 'Session realm="zulip"' : 'Basic realm="zulip"');
      return reply.code(err.httpStatus).send(err.toJSON());
    }
    const fe = err as FastifyError;
    // PostgreSQL refuses NUL in text (SQLite stores it). Input checks reject it with Zulip's
    // message where Zulip has one; any other string reaching the database lands here.
    if (fe.code === PG_INVALID_BYTE_SEQUENCE) {
      return reply.code(400).send({ result: 'error', msg: 'Invalid characters in request: NULL (0x00)', code: 'BAD_REQUEST' });
    }
    if (fe.statusCode === 413 || fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply.code(413).send({ result: 'error', msg: 'Request body too large', code: 'BAD_REQUEST' });
    }
    if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
      return reply.code(fe.statusCode).send({ result: 'error', msg: 'Malformed request', code: 'BAD_REQUEST' });
    }
    req.log.error({ err }, 'unhandled error');
    return reply.code(500).send({ result: 'error', msg: 'Internal server error', code: 'INTERNAL_SERVER_ERROR' });
  });

  app.setNotFoundHandler((req, reply) => {
    return reply.code(404).send({ result: 'error', msg: 'Not Found', code: 'NOT_FOUND' });
  });
}
