import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * Request-wide bounds that Fastify and Node enforce before any route runs (a URL that is not
 * valid percent-encoded UTF-8, an over-long path parameter, headers beyond Node's 16 KiB),
 * answered as Zulip JSON errors instead of Fastify's own error shape. Passed to the Fastify
 * constructor in app.ts as `frameworkErrors` and `clientErrorHandler`, with
 * `return503OnClosing: false` so that refuseDuringShutdown answers instead.
 */
export function frameworkErrors(err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply.code(414).send({ result: 'error', msg: 'URL path parameter too long', code: 'BAD_REQUEST' });
    return;
  }
  void reply.code(400).send({ result: 'error', msg: 'Malformed URL', code: 'BAD_REQUEST' });
}

/**
 * Errors Node's HTTP parser raises before a request exists. The connection is closed after
 * the answer, as Node does, since the rest of the bytes cannot be trusted.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let body = { result: 'error', msg: 'Malformed HTTP request', code: 'BAD_REQUEST' };
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    body = { result: 'error', msg: 'Request headers too large', code: 'BAD_REQUEST' };
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    body = { result: 'error', msg: 'Request timeout', code: 'REQUEST_TIMEOUT' };
  }
  if (socket.writable) {
    const text = JSON.stringify(body);
    socket.write(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy();
}

/**
 * Once a graceful shutdown has begun, requests that still arrive on open keep-alive
 * connections get a Zulip 503 and the connection is closed, so that clients retry elsewhere
 * and the drain of in-flight requests ends.
 */
export function refuseDuringShutdown(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', async (_req, reply) => {
    if (!closing) return;
    reply.header('Connection', 'close');
    return reply.code(503).send({ result: 'error', msg: 'The server is shutting down; retry shortly', code: 'BAD_REQUEST' });
  });
}
