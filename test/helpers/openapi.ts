import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import type { ApiResponse } from './client.js';

/**
 * Validates responses against Zulip's own OpenAPI document, when ../shared/zulip-api is
 * present beside the project, or where ZULIP_OPENAPI_YAML says (a checkout elsewhere); it is
 * reference data, never a run-time dependency.
 */
export const ZULIP_YAML = process.env.ZULIP_OPENAPI_YAML ?? resolve(process.cwd(), '../shared/zulip-api/zulip.yaml');

let doc: any | null | undefined;
let ajv: Ajv | undefined;
const compiled = new Map<string, ValidateFunction>();
let warned = false;

export function openapiDoc(): any | null {
  if (doc !== undefined) return doc;
  if (!existsSync(ZULIP_YAML)) {
    doc = null;
    return doc;
  }
  doc = parse(readFileSync(ZULIP_YAML, 'utf8'), { maxAliasCount: -1 });
  return doc;
}

function ajvFor(d: any): Ajv {
  if (ajv) return ajv;
  ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true, discriminator: false });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  ajv.addSchema({ $id: 'zulip', components: fixNullable(d.components) }, 'zulip');
  return ajv;
}

/**
 * OpenAPI's `nullable: true` beside `allOf`/`oneOf`/`$ref` (no `type`) is rejected by Ajv;
 * express it as "this schema, or null".
 */
function fixNullable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(fixNullable);
  if (node && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = fixNullable(v);
    if (out.nullable === true && out.type === undefined) {
      const { nullable: _nullable, ...rest } = out;
      return { anyOf: [rest, { type: 'null' }] };
    }
    return out;
  }
  return node;
}

function rewriteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `zulip${v}` : rewriteRefs(v);
    }
    return out;
  }
  return node;
}

/** The response schema Zulip documents for this operation and status, or null. */
export function responseSchema(method: string, pathTemplate: string, status: number): unknown | null {
  const d = openapiDoc();
  if (!d) return null;
  const op = d.paths?.[pathTemplate]?.[method.toLowerCase()];
  let response = op?.responses?.[String(status)];
  // Shared responses (e.g. SimpleSuccess) are referenced from components/responses.
  const ref: unknown = response?.$ref;
  if (typeof ref === 'string' && ref.startsWith('#/components/responses/')) {
    response = d.components?.responses?.[ref.slice('#/components/responses/'.length)];
  }
  const content = response?.content?.['application/json'];
  return content?.schema ?? null;
}

/**
 * Asserts that a response matches zulip.yaml's schema for `method pathTemplate`
 * (e.g. 'GET', '/users/{user_id}'). Skipped, with one message, when zulip.yaml is absent.
 */
export function assertConforms(res: ApiResponse, method: string, pathTemplate: string): void {
  const d = openapiDoc();
  if (!d) {
    if (!warned) {
      warned = true;
      process.stdout.write(`# zulip.yaml not found at ${ZULIP_YAML}: skipping schema conformance checks\n`);
    }
    return;
  }
  const key = `${method} ${pathTemplate} ${res.status}`;
  let validate = compiled.get(key);
  if (!validate) {
    const schema = responseSchema(method, pathTemplate, res.status);
    assert.ok(schema, `zulip.yaml documents no ${res.status} response for ${method} ${pathTemplate}`);
    validate = ajvFor(d).compile(fixNullable(rewriteRefs(schema)) as object);
    compiled.set(key, validate);
  }
  const valid = validate(res.body);
  assert.ok(valid, `${method} ${pathTemplate} does not match zulip.yaml: ${JSON.stringify(validate.errors?.slice(0, 5), null, 1)}\nbody: ${JSON.stringify(res.body).slice(0, 2000)}`);
}

/** Validates any value against a named component schema (e.g. an event in the register docs). */
export function assertMatchesComponent(value: unknown, component: string): void {
  const d = openapiDoc();
  if (!d) return;
  const key = `component ${component}`;
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajvFor(d).compile({ $ref: `zulip#/components/schemas/${component}` });
    compiled.set(key, validate);
  }
  assert.ok(validate(value), `${component}: ${JSON.stringify(validate.errors?.slice(0, 5), null, 1)}`);
}

/** Validates one event, as a queue would deliver it (with an `id`), against GET /events' schema. */
export function assertEventConforms(event: Record<string, unknown>): void {
  const body = { result: 'success', msg: '', queue_id: 'q', events: [{ ...event, id: 0 }] };
  assertConforms({ status: 200, headers: new Headers(), body }, 'GET', '/events');
}
