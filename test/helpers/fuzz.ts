import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import http from 'node:http';
import Fastify from 'fastify';
import fc from 'fast-check';
import { sql } from 'kysely';
import type { Services } from '../../src/services.js';
import { registerRoutes } from '../../src/routes/index.js';
import { openapiDoc } from './openapi.js';

/**
 * The HTTP fuzzer behind test/reliability/fuzz.test.ts and scripts/fuzz-long.mjs: it lists
 * the routes the server registers, derives parameters from zulip.yaml (or, for routes Zulip
 * does not document, from the names in our route files), generates valid-shaped and hostile
 * requests with fast-check, sends them over raw HTTP and checks the invariants.
 */

export interface RouteInfo {
  method: string;
  /** Fastify syntax, with the /api/v1 or /json prefix removed (`/users/:user_id`). */
  path: string;
  prefixes: string[];
}

/**
 * Every route registerRoutes() declares, gathered by an onRoute hook on a scratch Fastify
 * instance (buildApp registers nothing else, so this is the route table the server serves).
 */
export async function collectRoutes(services: Services): Promise<RouteInfo[]> {
  const scratch = Fastify({ logger: false });
  const seen = new Map<string, RouteInfo>();
  scratch.addHook('onRoute', (r) => {
    const methods = Array.isArray(r.method) ? r.method : [r.method];
    const m = /^(\/api\/v1|\/json)(\/.*)$/.exec(r.url) ?? [r.url, '', r.url];
    for (const method of methods) {
      const key = `${method} ${m[2]}`;
      const info = seen.get(key) ?? { method, path: m[2]!, prefixes: [] };
      info.prefixes.push(m[1]!);
      seen.set(key, info);
    }
  });
  registerRoutes(scratch, services);
  await scratch.ready();
  await scratch.close();
  return [...seen.values()];
}

// ---------------------------------------------------------------------------------------------
// Parameter definitions

type JsonSchema = Record<string, any>;

export interface ParamDef {
  name: string;
  /** JSON-encoded on the wire (everything but plain strings). */
  json: boolean;
  schema: JsonSchema | null;
  required: boolean;
}

export interface RouteParams {
  /** zulip.yaml operation this route matched, or null when the names come from our source. */
  operation: string | null;
  params: ParamDef[];
}

/** Our paths that zulip.yaml spells differently (the spec's renames). */
function openapiPath(path: string): string {
  return path
    .replace(/\/\*$/, '/{fragment}')
    .replace(/:([A-Za-z_]+)/g, '{$1}')
    .replace('/calls/vidcall/', '/calls/webex/')
    .replace('/pushsvc_device_token', '/apns_device_token');
}

function resolveRef(doc: any, node: any): any {
  let n = node;
  for (let i = 0; i < 10 && n && typeof n.$ref === 'string'; i++) {
    const parts = (n.$ref as string).replace(/^#\//, '').split('/');
    n = parts.reduce((acc: any, k) => acc?.[k], doc);
  }
  return n;
}

/** Parameter definitions of one route, from zulip.yaml when it documents the operation. */
export function routeParams(route: RouteInfo, sourceNames: Map<string, string[]>): RouteParams {
  const doc = openapiDoc();
  const template = openapiPath(route.path);
  const method = route.method === 'HEAD' ? 'get' : route.method.toLowerCase();
  const op = doc?.paths?.[template]?.[method];
  if (op) {
    const params: ParamDef[] = [];
    for (const raw of op.parameters ?? []) {
      const prm = resolveRef(doc, raw);
      if (!prm?.name || prm.in === 'path' || prm.in === 'header') continue;
      const jsonSchema = prm.content?.['application/json']?.schema;
      const schema = resolveRef(doc, jsonSchema ?? prm.schema ?? null);
      params.push({ name: prm.name, json: Boolean(jsonSchema) || schema?.type !== 'string', schema, required: Boolean(prm.required) });
    }
    const form = op.requestBody?.content?.['application/x-www-form-urlencoded'] ?? op.requestBody?.content?.['multipart/form-data'];
    const body = resolveRef(doc, form?.schema);
    for (const [name, s] of Object.entries<any>(body?.properties ?? {})) {
      const schema = resolveRef(doc, s);
      const encodedJson = form?.encoding?.[name]?.contentType === 'application/json';
      params.push({ name, json: encodedJson || schema?.type !== 'string', schema, required: (body.required ?? []).includes(name) });
    }
    return { operation: `${method.toUpperCase()} ${template}`, params };
  }
  const names = sourceNames.get(`${route.method === 'HEAD' ? 'GET' : route.method} ${route.path}`) ?? sourceNames.get(`* ${route.path}`) ?? [];
  return { operation: null, params: names.map((name) => ({ name, json: false, schema: null, required: false })) };
}

/**
 * Parameter names declared in our route files, for routes zulip.yaml does not document:
 * each `path: '...'` followed by `name: p.` entries up to the next path.
 */
export function sourceParamNames(routesDir: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? walk(join(dir, n)) : n.endsWith('.ts') ? [join(dir, n)] : []));
  for (const file of walk(routesDir)) {
    const text = readFileSync(file, 'utf8');
    const re = /method:\s*'([A-Z]+)'\s*,\s*path:\s*'([^']+)'/g;
    const hits = [...text.matchAll(re)];
    hits.forEach((h, i) => {
      const chunk = text.slice(h.index, hits[i + 1]?.index ?? text.length);
      const names = [...chunk.matchAll(/\b([a-z_][a-z0-9_]*)\s*:\s*p\./g)].map((m) => m[1]!);
      out.set(`${h[1]} ${h[2]}`, [...new Set(names)]);
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Values

/** Names of the pools of real IDs and names that valid-shaped values draw from. */
export type PoolName =
  | 'userIds' | 'streamIds' | 'messageIds' | 'groupIds' | 'draftIds' | 'snippetIds' | 'playgroundIds' | 'fieldIds'
  | 'emails' | 'streamNames' | 'topics' | 'domains' | 'fragments' | 'queueIds';

export type Pools = Record<PoolName, (string | number)[]>;

/** A pool entry chosen at send time, so that values stay valid as the data changes. */
export interface PoolRef {
  $pool: PoolName;
  i: number;
}

/** A parameter's wire value: JSON-encoded, sent as-is, or raw bytes (which may be invalid UTF-8). */
export type WireValue = { json: unknown } | { raw: string } | { bytes: number[] };

const isPoolRef = (v: unknown): v is PoolRef => typeof v === 'object' && v !== null && '$pool' in v;

export function resolvePools(v: unknown, pools: Pools): unknown {
  if (isPoolRef(v)) {
    const list = pools[v.$pool];
    return list.length ? list[v.i % list.length] : 1;
  }
  if (Array.isArray(v)) return v.map((x) => resolvePools(x, pools));
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = resolvePools(x, pools);
    return out;
  }
  return v;
}

const poolRef = (pool: PoolName): fc.Arbitrary<PoolRef> => fc.nat({ max: 1000 }).map((i) => ({ $pool: pool, i }));

/** The pool a parameter's integers or strings most likely refer to, guessed from its name. */
function poolFor(name: string, kind: 'int' | 'str'): PoolName | null {
  const n = name.toLowerCase();
  if (kind === 'int') {
    if (/stream|channel/.test(n)) return 'streamIds';
    if (/group/.test(n)) return 'groupIds';
    if (/message|msg|anchor/.test(n)) return 'messageIds';
    if (/draft/.test(n)) return 'draftIds';
    if (/snippet/.test(n)) return 'snippetIds';
    if (/playground/.test(n)) return 'playgroundIds';
    if (/field/.test(n)) return 'fieldIds';
    if (/user|principal|to|member|owner|sender/.test(n)) return 'userIds';
    return null;
  }
  if (/email|principal|username|to/.test(n)) return 'emails';
  if (/topic|subject/.test(n)) return 'topics';
  if (/stream|channel|subscription/.test(n)) return 'streamNames';
  if (/domain/.test(n)) return 'domains';
  if (/fragment/.test(n)) return 'fragments';
  if (/queue/.test(n)) return 'queueIds';
  return null;
}

const anyPoolInt = fc.constantFrom<PoolName>('userIds', 'streamIds', 'messageIds', 'groupIds', 'draftIds').chain(poolRef);

/** A value shaped like `schema` (a zulip.yaml JSON schema), drawing IDs and names from the pools. */
export function fromSchema(schema: JsonSchema | null, name: string, depth = 0): fc.Arbitrary<unknown> {
  const doc = openapiDoc();
  const s = schema ? resolveRef(doc, schema) : null;
  if (!s || depth > 4) return fc.oneof(fc.string({ maxLength: 12 }), fc.integer({ min: -2, max: 50 }), fc.boolean());
  const alts: fc.Arbitrary<unknown>[] = [];
  if (s.example !== undefined) alts.push(fc.constant(s.example));
  if (Array.isArray(s.enum) && s.enum.length) return fc.oneof(fc.constantFrom(...s.enum), ...alts);
  for (const key of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(s[key])) return fc.oneof(...(s[key] as JsonSchema[]).map((x) => fromSchema(x, name, depth + 1)));
  }
  if (Array.isArray(s.allOf)) {
    const merged: JsonSchema = {};
    for (const part of s.allOf as JsonSchema[]) {
      const r = resolveRef(doc, part) ?? {};
      Object.assign(merged, r, { properties: { ...merged.properties, ...r.properties }, required: [...(merged.required ?? []), ...(r.required ?? [])] });
    }
    return fromSchema(merged, name, depth + 1);
  }
  const nullable = s.nullable === true ? [fc.constant(null)] : [];
  switch (s.type) {
    case 'integer':
    case 'number': {
      const pool = poolFor(name, 'int');
      return fc.oneof(
        pool ? poolRef(pool) : anyPoolInt,
        fc.integer({ min: s.minimum ?? -1, max: Math.min(s.maximum ?? 100, 2 ** 31) }),
        ...alts,
        ...nullable,
      );
    }
    case 'boolean':
      return fc.oneof(fc.boolean(), ...nullable);
    case 'string': {
      const pool = poolFor(name, 'str');
      return fc.oneof(
        ...(pool ? [poolRef(pool)] : []),
        fc.string({ maxLength: 20 }),
        ...alts,
        ...nullable,
      );
    }
    case 'array':
      return fc.oneof(fc.array(fromSchema(s.items ?? null, name, depth + 1), { maxLength: 4 }), ...alts);
    case 'object': {
      const props = Object.entries<JsonSchema>(s.properties ?? {});
      if (!props.length) {
        return fc.oneof(fc.dictionary(fc.string({ maxLength: 8 }), fromSchema(null, name, depth + 1), { maxKeys: 3 }), ...alts, ...nullable);
      }
      const rec: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of props) rec[k] = fromSchema(v, k, depth + 1);
      return fc.oneof(fc.record(rec, { requiredKeys: (s.required ?? []).filter((k: string) => k in rec) }), ...alts, ...nullable);
    }
    default:
      return fc.oneof(fc.string({ maxLength: 12 }), fc.integer({ min: -2, max: 50 }), ...alts);
  }
}

const deep = (n: number, open: string, close: string): string => open.repeat(n) + close.repeat(n);

/** Hostile wire values: wrong types, huge and strange strings, deep JSON, invalid UTF-8, odd numbers. */
export const hostileValue: fc.Arbitrary<WireValue> = fc.oneof(
  fc.constantFrom<WireValue>(
    { raw: '' },
    { raw: 'null' },
    { raw: 'true' },
    { raw: '{}' },
    { raw: '[]' },
    { raw: '[null]' },
    { raw: '[[1]]' },
    { raw: '{"__proto__":{"polluted":1}}' },
    { raw: '{"constructor":{"prototype":{"x":1}}}' },
    { raw: '"string"' },
    { raw: '-1' },
    { raw: '0' },
    { raw: '-0' },
    { raw: '1.5' },
    { raw: '1e400' },
    { raw: '-1e400' },
    { raw: '2147483648' },
    { raw: '9007199254740993' },
    { raw: '-9223372036854775809' },
    { raw: '18446744073709551616' },
    { raw: '99999999999999999999999999999999' },
    { raw: 'NaN' },
    { raw: 'Infinity' },
    { raw: '0x10' },
    { raw: ' 7 ' },
    { raw: 'a\u0000b' },
    { raw: '\u0000' },
    { raw: '"\\u0000"' },
    { raw: '["\\u0000"]' },
    { raw: '"\\ud800"' },
    { raw: '["\\udfff"]' },
    { raw: '{"operator":"stream","operand":"\\ud800"}' },
    { raw: '[{"operator":"search","operand":"\\u0000"}]' },
    { raw: '[{"operator":"id","operand":-1}]' },
    { raw: '[{"operator":"id","operand":1e300}]' },
    { raw: '[{"operator":"near","operand":"x"}]' },
    { raw: '[{"operator":"dm","operand":[99999999999]}]' },
    { raw: '[["stream"]]' },
    { raw: '\u202e\u0301\ufeff' },
    { raw: '🙂'.repeat(50) },
    { raw: '<script>alert(1)</script>' },
    { raw: "' OR 1=1 --" },
    { raw: '%00' },
    { raw: '../../etc/passwd' },
    { raw: deep(5000, '[', ']') },
    { raw: deep(5000, '{"a":', '}').replace(/}$/, '1}') },
    { raw: deep(2000, '[{"operator":"search","operand":', '}]') },
    { raw: `[${'1,'.repeat(50000)}1]` },
    { raw: `"${'x'.repeat(70000)}"` },
    { raw: 'x'.repeat(70000) },
    { raw: '>'.repeat(20000) + ' deep quote' },
    { raw: '* '.repeat(5000) + 'deep list' },
    { raw: '$$' + '\\frac{'.repeat(2000) + '$$' },
    { bytes: [0xff, 0xfe, 0xfd] },
    { bytes: [0xc3, 0x28] },
    { bytes: [0xed, 0xa0, 0x80] },
    { bytes: [0xf4, 0x90, 0x80, 0x80] },
    { bytes: [0x22, 0xc0, 0xaf, 0x22] },
  ),
  fc.integer().map((n) => ({ raw: String(n) })),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map((n) => ({ raw: String(n) })),
  fc.double().map((n) => ({ raw: String(n) })),
  fc.string({ unit: 'binary', maxLength: 30 }).map((s) => ({ raw: s })),
  fc.string({ unit: 'grapheme', maxLength: 30 }).map((s) => ({ json: s })),
  fc.string({ maxLength: 30 }).map((s) => ({ raw: s })),
  fc.jsonValue({ maxDepth: 3 }).map((v) => ({ json: v })),
  fc.uint8Array({ maxLength: 24 }).map((a) => ({ bytes: [...a] })),
);

/** Hostile path segments for `:param` positions. */
const hostileSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    'abc', '-1', '0', '1.5', '1e3', '99999999999999999999', '9007199254740993', '2147483648', '-9223372036854775809',
    '%00', '%FF', '%C3%28', '%ED%A0%80', '%2F', '%25', 'me', 'null', '%20', '0x1', 'x'.repeat(900), '1'.repeat(900), '1'.repeat(1100),
    'a%2Fb%2F..', '%F0%9F%99%82', '..',
  ),
  fc.integer().map(String),
  fc.stringMatching(/^[A-Za-z0-9._~-]{1,20}$/),
);

// ---------------------------------------------------------------------------------------------
// Requests

export type CallerName = 'owner' | 'member' | 'guest' | 'bot' | 'anonymous';
export const CALLERS: CallerName[] = ['owner', 'member', 'guest', 'bot', 'anonymous'];

export type BodyKind = 'form' | 'multipart' | 'json' | 'query' | 'text/plain' | 'none-type' | 'bad-json' | 'bad-multipart' | 'xml';

export interface FuzzRequest {
  method: string;
  route: string;
  prefix: string;
  caller: CallerName;
  /** Values for the route's `:param` (or `*`) segments, in order: a pool entry or a hostile segment. */
  segments: (PoolRef | { seg: string })[];
  params: [string, WireValue | PoolRefValue][];
  body: BodyKind;
  /** Extra hostile details. */
  auth: 'normal' | 'wrong-key' | 'garbage' | 'bearer' | 'huge' | 'other-email';
  cookie: string | null;
  oversized: boolean;
}

/** A valid-shaped value: JSON structure with pool references, encoded raw when it is a plain string. */
export interface PoolRefValue {
  shaped: unknown;
  json: boolean;
}

const segmentPool = (name: string): PoolName => {
  const p = poolFor(name, 'int');
  if (name === 'domain') return 'domains';
  if (name === '*' || name === 'fragment') return 'fragments';
  if (name === 'user_id_or_email') return 'userIds';
  return p ?? 'userIds';
};

function segmentNames(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z_]+)|\*/g)].map((m) => m[1] ?? '*');
}

/** Requests for one route: its parameters (valid-shaped, hostile, unknown, duplicated) and envelope. */
export function requestFor(route: RouteInfo, defs: RouteParams, callers: CallerName[] = CALLERS): fc.Arbitrary<FuzzRequest> {
  const segs = segmentNames(route.path);
  const segArb = fc.tuple(
    ...segs.map((name) => fc.oneof({ weight: 4, arbitrary: poolRef(segmentPool(name)) }, { weight: 1, arbitrary: hostileSegment.map((seg) => ({ seg })) })),
  );
  const paramArbs = defs.params.map((d) =>
    fc.oneof(
      { weight: 5, arbitrary: fromSchema(d.schema, d.name).map((v): PoolRefValue => ({ shaped: v, json: d.json || typeof v !== 'string' })) },
      { weight: 2, arbitrary: hostileValue },
    ).map((v): [string, WireValue | PoolRefValue] => [d.name, v]),
  );
  const required = defs.params.filter((d) => d.required).map((d) => d.name);
  const chosen = paramArbs.length
    ? fc.subarray(paramArbs.map((_, i) => i)).chain((idx) => {
        // Mostly keep every required parameter, so requests get past "missing argument".
        return fc.boolean().chain((keepRequired) => {
          const all = new Set(idx);
          if (keepRequired) defs.params.forEach((d, i) => d.required && all.add(i));
          const picked = [...all].sort((a, b) => a - b);
          return picked.length ? fc.tuple(...picked.map((i) => paramArbs[i]!)) : fc.constant([] as [string, WireValue | PoolRefValue][]);
        });
      })
    : fc.constant([] as [string, WireValue | PoolRefValue][]);
  const unknown = fc.array(
    fc.tuple(fc.oneof(fc.constantFrom('__proto__', 'constructor', 'hasOwnProperty', 'toString', 'x', 'api_key', 'client', 'prototype'), fc.string({ maxLength: 10 })), hostileValue),
    { maxLength: 2 },
  );
  const duplicates = fc.array(
    fc.constantFrom(...(defs.params.length ? defs.params.map((d) => d.name) : ['x'])).chain((n) => hostileValue.map((v): [string, WireValue] => [n, v])),
    { maxLength: 2 },
  );
  void required;
  const isGet = route.method === 'GET' || route.method === 'HEAD';
  return fc.record({
    method: fc.constant(route.method),
    route: fc.constant(route.path),
    prefix: fc.constantFrom(...route.prefixes),
    caller: fc.constantFrom(...callers),
    segments: segArb,
    params: fc.tuple(chosen, unknown, duplicates).map(([a, b, c]) => [...a, ...b, ...c]),
    body: isGet
      ? fc.oneof({ weight: 8, arbitrary: fc.constant<BodyKind>('query') }, { weight: 1, arbitrary: fc.constantFrom<BodyKind>('form', 'json', 'bad-json') })
      : fc.oneof(
          { weight: 6, arbitrary: fc.constant<BodyKind>('form') },
          { weight: 2, arbitrary: fc.constantFrom<BodyKind>('multipart', 'query', 'json') },
          { weight: 1, arbitrary: fc.constantFrom<BodyKind>('text/plain', 'none-type', 'bad-json', 'bad-multipart', 'xml') },
        ),
    auth: fc.oneof(
      { weight: 12, arbitrary: fc.constant<FuzzRequest['auth']>('normal') },
      { weight: 1, arbitrary: fc.constantFrom<FuzzRequest['auth']>('wrong-key', 'garbage', 'bearer', 'huge', 'other-email') },
    ),
    cookie: fc.oneof(
      { weight: 12, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.constantFrom('parley_session=%E0%A4%A', 'parley_session=%', 'parley_session=' + 'a'.repeat(5000), 'parley_session=x; parley_session=y', '=;;=', 'parley_session=\u00ff') },
    ),
    oversized: fc.oneof({ weight: 40, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  });
}

/** Strings that databases and parsers handle differently: NUL, a lone surrogate, a long mixed string. */
export const SWEEP_STRINGS = ['a\u0000b', '\ud800', `\u202e${'🙂ä'.repeat(600)}`];

/** Replaces every string inside a valid-shaped value (pool references resolve to IDs and names). */
function withStrings(v: unknown, str: string): { value: unknown; replaced: boolean } {
  if (typeof v === 'string') return { value: str, replaced: true };
  if (isPoolRef(v)) {
    const stringPools: PoolName[] = ['emails', 'streamNames', 'topics', 'domains', 'fragments', 'queueIds'];
    return stringPools.includes(v.$pool) ? { value: str, replaced: true } : { value: v, replaced: false };
  }
  if (Array.isArray(v)) {
    const parts = v.map((x) => withStrings(x, str));
    return { value: parts.map((p) => p.value), replaced: parts.some((p) => p.replaced) };
  }
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    let replaced = false;
    for (const [k, x] of Object.entries(v)) {
      const p = withStrings(x, str);
      out[k] = p.value;
      replaced ||= p.replaced;
    }
    return { value: out, replaced };
  }
  return { value: v, replaced: false };
}

/**
 * A deterministic pass over one route: the owner sends every required parameter valid-shaped
 * and, in turn, each documented parameter with every string inside it replaced by each of
 * `strings` (so NUL bytes reach narrow operands, draft fields, profile data ...).
 */
export function sweepRequests(route: RouteInfo, defs: RouteParams, seed: number, strings: string[]): FuzzRequest[] {
  const sample = (d: ParamDef, i: number): unknown => fc.sample(fromSchema(d.schema, d.name), { seed: seed + i, numRuns: 1 })[0];
  const base = defs.params.map((d, i) => ({ d, value: sample(d, i) }));
  const out: FuzzRequest[] = [];
  const isGet = route.method === 'GET' || route.method === 'HEAD';
  for (const target of base) {
    for (const str of strings) {
      const { value, replaced } = withStrings(target.d.schema ? target.value : 'x', str);
      if (!replaced) continue;
      const params: [string, PoolRefValue][] = base
        .filter((b) => b.d.required || b === target)
        .map((b) => [b.d.name, { shaped: b === target ? value : b.value, json: b.d.json || typeof (b === target ? value : b.value) !== 'string' }]);
      out.push({
        method: route.method,
        route: route.path,
        prefix: route.prefixes[0]!,
        caller: 'owner',
        segments: segmentNames(route.path).map((name) => ({ $pool: segmentPool(name), i: 0 })),
        params,
        body: isGet ? 'query' : 'form',
        auth: 'normal',
        cookie: null,
        oversized: false,
      });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Sending

export interface Credentials {
  email: string;
  apiKey: string;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: unknown;
}

function pctBytes(b: Buffer): string {
  let out = '';
  for (const byte of b) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9_.~-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function wireBytes(v: WireValue | PoolRefValue, pools: Pools): Buffer {
  if ('bytes' in v) return Buffer.from(v.bytes);
  if ('raw' in v) return Buffer.from(v.raw, 'utf8');
  if ('json' in v && !('shaped' in v)) return Buffer.from(JSON.stringify(v.json) ?? 'null', 'utf8');
  const pv = v as PoolRefValue;
  const resolved = resolvePools(pv.shaped, pools);
  return Buffer.from(typeof resolved === 'string' && !pv.json ? resolved : (JSON.stringify(resolved) ?? 'null'), 'utf8');
}

export interface Built {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | null;
}

/** Turns a generated request into bytes on the wire. */
export function buildRequest(r: FuzzRequest, pools: Pools, creds: Credentials | null, bodyLimit: number): Built {
  let segIndex = 0;
  const path = r.route.replace(/:([A-Za-z_]+)|\*/g, () => {
    const s = r.segments[segIndex++]!;
    if ('seg' in s) return s.seg;
    return pctBytes(Buffer.from(String(resolvePools(s, pools))));
  });
  const pairs = r.params.map(([k, v]) => [Buffer.from(k), wireBytes(v, pools)] as const);
  const headers: Record<string, string> = { 'user-agent': 'ParleyFuzz/1.0' };
  if (creds && r.auth !== 'garbage' && r.auth !== 'bearer' && r.auth !== 'huge') {
    const key = r.auth === 'wrong-key' ? 'A'.repeat(32) : creds.apiKey;
    const email = r.auth === 'other-email' ? 'nobody@example.com' : creds.email;
    headers.authorization = `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}`;
  } else if (r.auth === 'garbage') headers.authorization = 'Basic %%%not-base64%%%';
  else if (r.auth === 'bearer') headers.authorization = 'Bearer abc';
  else if (r.auth === 'huge') headers.authorization = `Basic ${'QUFB'.repeat(2000)}`;
  if (r.cookie) headers.cookie = r.cookie;
  const form = Buffer.from(pairs.map(([k, v]) => `${pctBytes(k)}=${pctBytes(v)}`).join('&'));
  let url = `${r.prefix}${path}`;
  let body: Buffer | null = null;
  switch (r.body) {
    case 'query':
      if (pairs.length) url += `?${form.toString('latin1')}`;
      break;
    case 'form':
    case 'text/plain':
    case 'xml':
    case 'none-type':
      body = form;
      if (r.body === 'form') headers['content-type'] = 'application/x-www-form-urlencoded';
      if (r.body === 'text/plain') headers['content-type'] = 'text/plain; charset=utf-8';
      if (r.body === 'xml') headers['content-type'] = 'application/xml';
      break;
    case 'json': {
      const parts = pairs.map(([k, v]) => `${JSON.stringify(k.toString('utf8'))}:${JSON.stringify(v.toString('utf8'))}`);
      body = Buffer.from(`{${parts.join(',')}}`);
      headers['content-type'] = 'application/json';
      break;
    }
    case 'bad-json':
      body = Buffer.from('{"a": [1, 2');
      headers['content-type'] = 'application/json';
      break;
    case 'multipart': {
      const boundary = '----parleyfuzz7MA4YWxkTrZu0gW';
      const chunks: Buffer[] = [];
      for (const [k, v] of pairs) {
        chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k.toString('latin1').replace(/"/g, '%22')}"\r\n\r\n`), v, Buffer.from('\r\n'));
      }
      chunks.push(Buffer.from(`--${boundary}--\r\n`));
      body = Buffer.concat(chunks);
      headers['content-type'] = `multipart/form-data; boundary=${boundary}`;
      break;
    }
    case 'bad-multipart':
      body = Buffer.from('--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nunterminated');
      headers['content-type'] = r.params.length % 2 ? 'multipart/form-data' : 'multipart/form-data; boundary=x';
      break;
  }
  if (r.oversized) {
    body = Buffer.concat([body ?? Buffer.alloc(0), Buffer.from('&pad='), Buffer.alloc(bodyLimit + 1024, 0x61)]);
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
  }
  return { method: r.method, path: url, headers, body };
}

// A fresh connection per request: a connection the server closed after a 413 or 431 must not be reused.
const agent = new http.Agent({ keepAlive: false });

/** Sends raw bytes (so that invalid UTF-8 and bodies on GET reach the server). */
export function sendRaw(baseUrl: string, b: Built, timeoutMs = 15_000, extraHeaders: Record<string, string> = {}): Promise<RawResponse> {
  const u = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        method: b.method,
        path: b.path,
        agent,
        headers: { ...b.headers, ...extraHeaders, ...(b.body ? { 'content-length': String(b.body.length) } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // Left as text: the invariant check reports non-JSON error bodies.
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    if (b.body) req.end(b.body);
    else req.end();
  });
}

/**
 * The response invariants: no 5xx, and on API routes (/api/v1, /json) every non-2xx is Zulip's
 * JSON error with a string code and msg. Web pages (/join, OAuth callbacks) may answer HTML.
 */
export function responseViolation(method: string, res: RawResponse, api = true): string | null {
  if (res.status >= 500) return `HTTP ${res.status}: ${res.text.slice(0, 500)}`;
  if (res.status >= 200 && res.status < 300) return null;
  if (!api && !/json/.test(String(res.headers['content-type']))) return null;
  if (res.status >= 300 && res.status < 400) return res.headers.location ? null : `redirect without Location (${res.status})`;
  if (method === 'HEAD') return null;
  const body = res.body as Record<string, unknown> | string;
  if (typeof body !== 'object' || body === null) return `HTTP ${res.status} with a non-JSON body: ${res.text.slice(0, 300)}`;
  if (body.result !== 'error') return `HTTP ${res.status} without result=error: ${res.text.slice(0, 300)}`;
  if (typeof body.code !== 'string' || !body.code) return `HTTP ${res.status} without a string code: ${res.text.slice(0, 300)}`;
  if (typeof body.msg !== 'string') return `HTTP ${res.status} without a string msg: ${res.text.slice(0, 300)}`;
  return null;
}

/** Human-readable description of a request, for failure messages and regression tests. */
export function describe(b: Built): string {
  const body = b.body ? b.body.subarray(0, 600).toString('latin1') + (b.body.length > 600 ? `... (${b.body.length} bytes)` : '') : '';
  return `${b.method} ${b.path.slice(0, 600)}\n${JSON.stringify({ ...b.headers, authorization: b.headers.authorization ? '<redacted>' : undefined })}\n${body}`;
}

// ---------------------------------------------------------------------------------------------
// Database snapshots

/**
 * Tables whose rows legitimately change without a successful request: the migrator's, and
 * installation secrets, created on first use by whichever request needs one. Every other
 * table must be left as it was by a failed request.
 */
const VOLATILE_TABLES = new Set<string>(['kysely_migration', 'kysely_migration_lock', 'server_secrets']);

export type Snapshot = Map<string, string[]>;

/** Every row of every table, as sorted JSON lines. */
export async function snapshotDb(services: Services): Promise<Snapshot> {
  const k = services.db.kysely;
  const tables = services.db.dialect === 'sqlite'
    ? (await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'`.execute(k)).rows.map((r) => r.name)
    : (await sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`.execute(k)).rows.map((r) => r.name);
  const out: Snapshot = new Map();
  for (const t of tables.sort()) {
    if (VOLATILE_TABLES.has(t) || /_fts|_content$|_data$|_idx$|_docsize$|_config$/.test(t)) continue;
    const rows = (await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(t)}`.execute(k)).rows;
    out.set(t, rows.map((r) => JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).sort());
  }
  return out;
}

/** Tables whose rows differ, with a few of the differing rows. */
export function diffSnapshots(before: Snapshot, after: Snapshot): string[] {
  const out: string[] = [];
  for (const t of new Set([...before.keys(), ...after.keys()])) {
    const a = new Set(before.get(t) ?? []);
    const b = new Set(after.get(t) ?? []);
    const removed = [...a].filter((x) => !b.has(x));
    const added = [...b].filter((x) => !a.has(x));
    if (removed.length || added.length) {
      out.push(`${t}: -${removed.length} +${added.length} ${JSON.stringify({ removed: removed.slice(0, 2), added: added.slice(0, 2) }).slice(0, 800)}`);
    }
  }
  return out;
}
