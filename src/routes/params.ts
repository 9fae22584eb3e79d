import { z, type ZodType } from 'zod';
import { JsonableError, badRequest } from '../errors.js';

/**
 * Request parameters as Zulip clients send them: form-encoded strings where plain strings
 * arrive raw and everything else (integers, booleans, lists, objects) arrives JSON-encoded.
 * A Param decodes one wire value, validates it with its zod schema, and maps failures to
 * Zulip's messages ("x is not an integer", `Argument "x" is not valid JSON.`, ...).
 */
export type Wire = 'raw' | 'json' | 'int' | 'bool';

export class Param<T> {
  constructor(
    readonly wire: Wire,
    readonly schema: ZodType,
    readonly required: boolean = true,
    readonly fallback: (() => T) | undefined = undefined,
    readonly aliases: readonly string[] = [],
    readonly allowNull: boolean = false,
    readonly decode?: (raw: string, name: string) => unknown,
  ) {}

  /** Absent means undefined. */
  optional(): Param<T | undefined> {
    return new Param<T | undefined>(this.wire, this.schema, false, undefined, this.aliases, this.allowNull, this.decode);
  }

  /** Absent means `value`. */
  default(value: T): Param<T> {
    return new Param<T>(this.wire, this.schema, false, () => value, this.aliases, this.allowNull, this.decode);
  }

  /** The JSON literal `null` is accepted and means null. */
  nullable(): Param<T | null> {
    return new Param<T | null>(
      this.wire, this.schema, this.required, this.fallback as (() => T | null) | undefined, this.aliases, true, this.decode,
    );
  }

  /** Other names the same parameter may arrive under (e.g. the deprecated `subject` for `topic`). */
  alias(...names: string[]): Param<T> {
    return new Param<T>(this.wire, this.schema, this.required, this.fallback, [...this.aliases, ...names], this.allowNull, this.decode);
  }

  parse(raw: string, name: string): T {
    let value: unknown;
    if (this.decode) {
      value = this.decode(raw, name);
    } else if (this.wire === 'raw') {
      value = raw;
    } else {
      try {
        value = JSON.parse(raw);
      } catch {
        if (this.wire === 'int') throw badRequest(`${name} is not an integer`);
        if (this.wire === 'bool') throw badRequest(`${name} is not a boolean`);
        throw badRequest(`Argument "${name}" is not valid JSON.`);
      }
    }
    if (value === null && this.allowNull) return null as T;
    const result = this.schema.safeParse(value);
    if (!result.success) throw zodIssueToError(result.error.issues[0]!, name);
    return result.data as T;
  }
}

function describeExpected(expected: string): string {
  switch (expected) {
    case 'number':
    case 'int':
    case 'bigint':
      return 'an integer';
    case 'string':
      return 'a string';
    case 'boolean':
      return 'a boolean';
    case 'array':
      return 'a list';
    case 'object':
    case 'record':
      return 'a dict';
    default:
      return `a valid ${expected}`;
  }
}

export function zodIssueToError(issue: z.core.$ZodIssue, name: string): JsonableError {
  const where = issue.path.length ? `${name}[${issue.path.map(String).join('][')}]` : name;
  switch (issue.code) {
    case 'invalid_type':
      return badRequest(`${where} is not ${describeExpected(issue.expected)}`);
    case 'too_small':
      if (issue.origin === 'string' && Number(issue.minimum) === 1) return badRequest(`${where} cannot be blank`);
      if (issue.origin === 'string') return badRequest(`${where} is too short`);
      if (issue.origin === 'array') return badRequest(`${where} is too short`);
      return badRequest(`${where} is too small`);
    case 'too_big':
      if (issue.origin === 'string') return badRequest(`${where} is too long (limit: ${String(issue.maximum)} characters)`);
      if (issue.origin === 'array') return badRequest(`${where} is too long`);
      return badRequest(`${where} is too large`);
    case 'custom':
      return badRequest(issue.message && issue.message !== 'Invalid input' ? issue.message : `Invalid ${where}`);
    case 'unrecognized_keys':
      return badRequest(`Invalid ${where}: unknown key ${issue.keys.map((k) => `'${k}'`).join(', ')}`);
    default:
      return badRequest(`Invalid ${where}`);
  }
}

const integer = z.number().int().min(-(2 ** 53)).max(2 ** 53);

/** Builders for every parameter kind our endpoints take. */
export const p = {
  str: (schema: ZodType<string> = z.string()): Param<string> => new Param<string>('raw', schema),
  int: (schema: ZodType<number> = integer): Param<number> => new Param<number>('int', schema),
  bool: (): Param<boolean> => new Param<boolean>('bool', z.boolean()),
  /** A JSON-encoded value validated by `schema`. */
  json: <T>(schema: ZodType<T>): Param<T> => new Param<T>('json', schema),
  /** A value with its own decoding, for parameters real clients send in several shapes. */
  custom: <T>(decode: (raw: string, name: string) => T): Param<T> => new Param<T>('raw', z.any(), true, undefined, [], false, decode),
  intList: (): Param<number[]> => new Param<number[]>('json', z.array(integer)),
  strList: (): Param<string[]> => new Param<string[]>('json', z.array(z.string())),
};

export const zInt = integer;

export type ParamSpecs = Record<string, Param<any>>;
export type ParsedParams<S extends ParamSpecs> = { [K in keyof S]: S[K] extends Param<infer T> ? T : never };

/** Each spec set's entries and every name it knows (with aliases), computed once per endpoint. */
const compiledSpecs = new WeakMap<ParamSpecs, { entries: [string, Param<unknown>][]; known: Set<string> }>();

function compile(specs: ParamSpecs): { entries: [string, Param<unknown>][]; known: Set<string> } {
  let compiled = compiledSpecs.get(specs);
  if (!compiled) {
    const entries = Object.entries(specs);
    const known = new Set<string>();
    for (const [name, spec] of entries) {
      known.add(name);
      for (const a of spec.aliases) known.add(a);
    }
    compiled = { entries, known };
    compiledSpecs.set(specs, compiled);
  }
  return compiled;
}

/**
 * Decodes every declared parameter from the merged raw request values.
 * Returns the values and the names of parameters the endpoint does not know.
 */
export function parseParams<S extends ParamSpecs>(
  specs: S,
  raw: Record<string, string>,
  pathParams: Record<string, string>,
): { values: ParsedParams<S>; ignored: string[] } {
  const values: Record<string, unknown> = {};
  const { entries, known } = compile(specs);
  for (const [name, spec] of entries) {
    let rawValue = pathParams[name] ?? raw[name];
    let usedName = name;
    if (rawValue === undefined) {
      for (const a of spec.aliases) {
        if (raw[a] !== undefined) {
          rawValue = raw[a];
          usedName = a;
          break;
        }
      }
    }
    if (rawValue === undefined) {
      if (spec.required) throw new JsonableError(`Missing '${name}' argument`, 'REQUEST_VARIABLE_MISSING', 400, { var_name: name });
      values[name] = spec.fallback ? spec.fallback() : undefined;
      continue;
    }
    values[name] = spec.parse(rawValue, usedName);
  }
  const ignored: string[] = [];
  for (const k of Object.keys(raw)) if (!known.has(k) && !Object.hasOwn(pathParams, k)) ignored.push(k);
  return { values: values as ParsedParams<S>, ignored: ignored.sort() };
}
