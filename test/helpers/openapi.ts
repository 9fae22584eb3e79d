import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import type { ApiResponse } from './client.js';
import { asDocumented, extrasFor, valuesAtPath } from './event_extras.js';

/**
 * Validates responses against Zulip's own OpenAPI document: where ZULIP_OPENAPI_YAML says (a
 * checkout elsewhere), else shared/zulip-api beside the project or beside a folder above it (a
 * git worktree under a sibling folder finds the main checkout's copy). It is reference data,
 * never a run-time dependency.
 */
export const ZULIP_YAML = process.env.ZULIP_OPENAPI_YAML ?? findShared('zulip-api/zulip.yaml');

function findShared(file: string): string {
  const first = resolve(process.cwd(), '../shared', file);
  for (let dir = resolve(process.cwd(), '..'); ; dir = dirname(dir)) {
    const candidate = resolve(dir, 'shared', file);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return first;
  }
}

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

/** zulip.yaml, or null after saying once that schema checks are skipped. */
function docOrWarn(): any | null {
  const d = openapiDoc();
  if (!d && !warned) {
    warned = true;
    process.stdout.write(`# zulip.yaml not found at ${ZULIP_YAML}: skipping schema conformance checks\n`);
  }
  return d;
}

/**
 * Asserts that a response matches zulip.yaml's schema for `method pathTemplate`
 * (e.g. 'GET', '/users/{user_id}'). Skipped, with one message, when zulip.yaml is absent.
 */
export function assertConforms(res: ApiResponse, method: string, pathTemplate: string): void {
  const d = docOrWarn();
  if (!d) return;
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

/** The compiled schema of GET /events' 200 response, or null without zulip.yaml. */
function eventsValidator(): ValidateFunction | null {
  const d = openapiDoc();
  if (!d) return null;
  const key = 'GET /events 200';
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajvFor(d).compile(fixNullable(rewriteRefs(responseSchema('GET', '/events', 200))) as object);
    compiled.set(key, validate);
  }
  return validate;
}

/**
 * Compiles GET /events' schema now (about two seconds, once per process), so that the first
 * poll a test times does not pay for it.
 */
export function prepareEventSchema(): void {
  eventsValidator();
}

/**
 * Why `event` (with an `id`) does not match zulip.yaml's GET /events schema as it stands, or
 * null if it does (or zulip.yaml is absent). Of the oneOf of event schemas, only the errors of
 * those whose type and op fit the event are reported.
 */
export function eventSchemaErrors(event: Record<string, unknown>): string | null {
  const validate = eventsValidator();
  if (!validate) return null;
  if (validate({ result: 'success', msg: '', queue_id: 'q', events: [{ ...event, id: 0 }] })) return null;
  const branch = (path: string) => /\/oneOf\/(\d+)\//.exec(path)?.[1];
  const errors = validate.errors ?? [];
  const misfits = new Set(errors.filter((e) => e.instancePath === '/events/0/type' || e.instancePath === '/events/0/op').map((e) => branch(e.schemaPath)));
  const relevant = errors.filter((e) => branch(e.schemaPath) !== undefined && !misfits.has(branch(e.schemaPath)));
  return JSON.stringify((relevant.length ? relevant : errors).slice(0, 8), null, 1);
}

/** Events already found conforming (without their id), so a repeat is not checked again. */
const conformingEvents = new Set<string>();

/**
 * Validates one event, as a queue would deliver it, against GET /events' schema. zulip.yaml's
 * event schemas forbid unknown fields; the only extras accepted are those of EVENT_EXTRAS
 * (fields Zulip's server sends beyond its document) and the event types of EXTRA_EVENT_TYPES,
 * so anything else fails here.
 */
export function assertEventConforms(event: Record<string, unknown>): void {
  const d = docOrWarn();
  if (!d) return;
  // Fan-out tests deliver one event to many queues: check each distinct event once.
  const { id: _id, ...rest } = event;
  const seenKey = JSON.stringify(rest);
  if (conformingEvents.has(seenKey)) return;
  const errors = eventSchemaErrors(asDocumented(event));
  assert.ok(errors === null, `${String(event.type)} event does not match zulip.yaml (plus the listed extras): ${errors}\nevent: ${JSON.stringify(event).slice(0, 2000)}`);
  for (const x of extrasFor(event)) {
    const key = `extra ${x.type} ${x.op ?? '*'} ${x.field}`;
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajvFor(d).compile(x.schema);
      compiled.set(key, validate);
    }
    for (const v of valuesAtPath(event, x.field)) {
      assert.ok(validate(v), `${x.type} event's ${x.field} does not match its EVENT_EXTRAS schema: ${JSON.stringify(validate.errors?.slice(0, 5), null, 1)}\nevent: ${JSON.stringify(event).slice(0, 2000)}`);
    }
  }
  if (conformingEvents.size >= 1000) conformingEvents.clear();
  conformingEvents.add(seenKey);
}
