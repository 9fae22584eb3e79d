import type { FastifyRequest } from 'fastify';

/** Query parameters whose values never go to a log: credentials clients might put in a URL. */
const SECRET_PARAMS = /^(password|new_password|old_password|api_key|key|token|secret|otp|mobile_flow_otp|desktop_flow_otp|code|state)$/i;

/** The URL with the values of secret query parameters replaced by "[redacted]". */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const parts = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    if (eq < 0) return pair;
    let name = pair.slice(0, eq);
    try {
      name = decodeURIComponent(name.replace(/\+/g, ' '));
    } catch {
      // A malformed name is logged as sent; only the value matters here.
    }
    return SECRET_PARAMS.test(name) ? `${pair.slice(0, eq)}=[redacted]` : pair;
  });
  return `${url.slice(0, q)}?${parts.join('&')}`;
}

/**
 * Fastify's request serializer for the logger, with secret query values redacted (headers
 * are not logged; app.ts also redacts authorization and cookie should they ever be).
 */
export function requestSerializer(req: FastifyRequest): Record<string, unknown> {
  return {
    method: req.method,
    url: redactUrl(req.url),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}
