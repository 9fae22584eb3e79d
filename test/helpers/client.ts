export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

export type ParamValue = string | number | boolean | null | object | undefined;
export type Encoding = 'form' | 'multipart' | 'query';

/**
 * Talks to the server the way Zulip's python client does: Basic auth, GET parameters in
 * the query string, other methods form-encoded, every non-string value JSON-encoded.
 * `encoding` reproduces zulip-js (multipart POST, query-string PATCH/DELETE).
 */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly email: string | null,
    readonly apiKey: string | null,
    readonly headers: Record<string, string> = {},
  ) {}

  withHeaders(headers: Record<string, string>): ApiClient {
    return new ApiClient(this.baseUrl, this.email, this.apiKey, { ...this.headers, ...headers });
  }

  static encode(params: Record<string, ParamValue>): [string, string][] {
    const out: [string, string][] = [];
    for (const [k, v] of Object.entries(params)) {
      if (v === undefined) continue;
      out.push([k, typeof v === 'string' ? v : JSON.stringify(v)]);
    }
    return out;
  }

  async request(
    method: string,
    path: string,
    params: Record<string, ParamValue> = {},
    encoding: Encoding = method === 'GET' ? 'query' : 'form',
    prefix = '/api/v1',
    signal?: AbortSignal,
  ): Promise<ApiResponse> {
    const headers: Record<string, string> = { 'User-Agent': 'ZulipPython/0.9.1 (Parley tests)', ...this.headers };
    if (this.email !== null && this.apiKey !== null) {
      headers.Authorization = `Basic ${Buffer.from(`${this.email}:${this.apiKey}`).toString('base64')}`;
    }
    const pairs = ApiClient.encode(params);
    let url = `${this.baseUrl}${prefix}${path}`;
    let body: string | FormData | undefined;
    if (encoding === 'query') {
      if (pairs.length) url += `${url.includes('?') ? '&' : '?'}${new URLSearchParams(pairs).toString()}`;
    } else if (encoding === 'form') {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(pairs).toString();
    } else {
      const fd = new FormData();
      for (const [k, v] of pairs) fd.append(k, v);
      body = fd;
    }
    const res = await fetch(url, { method, headers, body, signal });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: res.status, headers: res.headers, body: parsed };
  }

  get(path: string, params?: Record<string, ParamValue>) {
    return this.request('GET', path, params);
  }
  post(path: string, params?: Record<string, ParamValue>, encoding?: Encoding) {
    return this.request('POST', path, params, encoding);
  }
  patch(path: string, params?: Record<string, ParamValue>, encoding?: Encoding) {
    return this.request('PATCH', path, params, encoding);
  }
  delete(path: string, params?: Record<string, ParamValue>, encoding?: Encoding) {
    return this.request('DELETE', path, params, encoding);
  }
  put(path: string, params?: Record<string, ParamValue>, encoding?: Encoding) {
    return this.request('PUT', path, params, encoding);
  }
}
