import assert from 'node:assert/strict';
import type { ApiResponse } from './client.js';

/** Asserts a 200 Zulip success and returns the body. */
export function ok(res: ApiResponse): any {
  assert.equal(res.status, 200, `expected 200, got ${res.status}: ${JSON.stringify(res.body)}`);
  assert.equal(res.body.result, 'success');
  assert.equal(res.body.msg, '');
  return res.body;
}

/** Asserts a Zulip error with this status and code (and msg, when given). */
export function err(res: ApiResponse, status: number, code: string, msg?: string | RegExp): any {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  assert.equal(res.body.result, 'error');
  assert.equal(res.body.code, code, `code: ${JSON.stringify(res.body)}`);
  assert.equal(typeof res.body.msg, 'string');
  if (typeof msg === 'string') assert.equal(res.body.msg, msg);
  else if (msg) assert.match(res.body.msg, msg);
  return res.body;
}
