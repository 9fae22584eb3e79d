/**
 * The one way the web app talks to Parley: Zulip's /json API with the session cookie, and
 * the CSRF token (Django's `csrftoken` cookie, echoed in X-CSRFToken) on every change.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** A request that never reached the server (offline, server restarting). */
export class NetworkError extends Error {}

export type Params = Record<string, string | number | boolean | object | null | undefined>;

export function csrfToken(): string {
  const m = /(?:^|;\s*)csrftoken=([^;]+)/.exec(document.cookie);
  return m ? decodeURIComponent(m[1]!) : '';
}

/** Zulip's encoding: strings raw, everything else JSON. */
function encode(params: Params): URLSearchParams {
  const out = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    out.append(k, typeof v === 'string' ? v : JSON.stringify(v));
  }
  return out;
}

async function send(method: string, url: string, body: BodyInit | undefined, signal?: AbortSignal): Promise<Record<string, any>> {
  const headers: Record<string, string> = {};
  if (method !== 'GET') headers['X-CSRFToken'] = csrfToken();
  if (typeof body === 'string') headers['Content-Type'] = 'application/x-www-form-urlencoded';
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body, credentials: 'same-origin', signal });
  } catch (e) {
    if (signal?.aborted) throw e;
    throw new NetworkError(String(e));
  }
  let data: Record<string, any>;
  try {
    data = await res.json();
  } catch {
    // A proxy's error page or a server mid-restart: treat as unreachable, retried by callers.
    throw new NetworkError(`HTTP ${res.status}`);
  }
  if (!res.ok || data.result !== 'success') {
    if (res.status === 401) window.dispatchEvent(new CustomEvent('parley:logged-out'));
    throw new ApiError(res.status, data.code ?? 'BAD_REQUEST', data.msg ?? `HTTP ${res.status}`, data);
  }
  return data;
}

export function api(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, params: Params = {}, signal?: AbortSignal): Promise<Record<string, any>> {
  const encoded = encode(params);
  if (method === 'GET') {
    const q = encoded.toString();
    return send('GET', `/json${path}${q ? `?${q}` : ''}`, undefined, signal);
  }
  return send(method, `/json${path}`, encoded.toString(), signal);
}

/** A form post outside /json (login, logout), answered in Zulip's JSON shape. */
export function postPage(path: string, params: Params): Promise<Record<string, any>> {
  return send('POST', path, encode(params).toString());
}

/** POST /json/user_uploads with progress, which fetch cannot report. */
export function upload(file: File, onProgress: (fraction: number) => void): Promise<{ url: string; filename: string }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/json/user_uploads');
    xhr.setRequestHeader('X-CSRFToken', csrfToken());
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onerror = () => reject(new NetworkError('upload failed'));
    xhr.onload = () => {
      let data: any = {};
      try {
        data = JSON.parse(xhr.responseText);
      } catch {
        return reject(new NetworkError(`HTTP ${xhr.status}`));
      }
      if (xhr.status !== 200) return reject(new ApiError(xhr.status, data.code, data.msg, data));
      resolve({ url: data.url ?? data.uri, filename: data.filename ?? file.name });
    };
    const fd = new FormData();
    fd.append('file', file, file.name);
    xhr.send(fd);
  });
}
