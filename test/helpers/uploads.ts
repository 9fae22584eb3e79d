import type { ApiClient, ApiResponse } from './client.js';

/** A 1x1 transparent PNG. */
export const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

export interface UploadPart {
  field?: string;
  name: string;
  data: Buffer;
  type?: string;
}

/**
 * A multipart POST with files, as zulip-js, the python client (`files=`) and the mobile apps
 * send uploads; extra string fields go alongside.
 */
export async function postFiles(
  client: ApiClient,
  path: string,
  files: UploadPart[],
  fields: Record<string, string> = {},
  prefix = '/api/v1',
): Promise<ApiResponse> {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  files.forEach((f, i) => fd.append(f.field ?? `file${i}`, new Blob([new Uint8Array(f.data)], { type: f.type ?? 'application/octet-stream' }), f.name));
  const headers: Record<string, string> = { 'User-Agent': 'ZulipPython/0.9.1 (Parley tests)' };
  if (client.email !== null && client.apiKey !== null) {
    headers.Authorization = `Basic ${Buffer.from(`${client.email}:${client.apiKey}`).toString('base64')}`;
  }
  const res = await fetch(`${client.baseUrl}${prefix}${path}`, { method: 'POST', headers, body: fd });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, headers: res.headers, body };
}

/** A plain GET of a non-API URL (files, redirects), returning the raw bytes. */
export async function fetchRaw(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; data: Buffer }> {
  const res = await fetch(url, { headers, redirect: 'manual' });
  return { status: res.status, headers: res.headers, data: Buffer.from(await res.arrayBuffer()) };
}

export function basicAuth(client: ApiClient): Record<string, string> {
  return { Authorization: `Basic ${Buffer.from(`${client.email}:${client.apiKey}`).toString('base64')}` };
}
