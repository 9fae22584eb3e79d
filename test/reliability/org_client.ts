import http from 'node:http';
import { ApiClient, type ApiResponse, type Encoding, type ParamValue } from '../helpers/client.js';

/**
 * An ApiClient for the organization at `<subdomain>.localhost`: the server picks the realm by
 * the Host header, which fetch() does not let us set, so this one speaks node:http.
 */
export class OrgClient extends ApiClient {
  constructor(
    baseUrl: string,
    email: string | null,
    apiKey: string | null,
    readonly hostHeader: string,
  ) {
    super(baseUrl, email, apiKey);
  }

  static forSubdomain(baseUrl: string, subdomain: string, email: string | null, apiKey: string | null): OrgClient {
    const port = new URL(baseUrl).port;
    return new OrgClient(baseUrl, email, apiKey, subdomain ? `${subdomain}.localhost:${port}` : `localhost:${port}`);
  }

  override async request(
    method: string,
    path: string,
    params: Record<string, ParamValue> = {},
    encoding: Encoding = method === 'GET' ? 'query' : 'form',
    prefix = '/api/v1',
  ): Promise<ApiResponse> {
    const u = new URL(this.baseUrl);
    const headers: Record<string, string> = { host: this.hostHeader, 'user-agent': 'ZulipPython/0.9.1 (Parley tests)' };
    if (this.email !== null && this.apiKey !== null) {
      headers.authorization = `Basic ${Buffer.from(`${this.email}:${this.apiKey}`).toString('base64')}`;
    }
    const form = new URLSearchParams(ApiClient.encode(params)).toString();
    let target = `${prefix}${path}`;
    let body: string | null = null;
    if (encoding === 'query') {
      if (form) target += `${target.includes('?') ? '&' : '?'}${form}`;
    } else {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = form;
    }
    return new Promise((resolve, reject) => {
      const req = http.request({ host: u.hostname, port: u.port, method, path: target, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // Not JSON: returned as text.
          }
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
          resolve({ status: res.statusCode ?? 0, headers: h, body: parsed });
        });
      });
      req.on('error', reject);
      req.end(body ?? undefined);
    });
  }
}
