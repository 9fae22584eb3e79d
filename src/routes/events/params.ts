import { badRequest } from '../../errors.js';
import { decodeNarrowParam, type Narrow } from '../../lib/narrow/terms.js';
import { p, type Param } from '../params.js';

function parseJson(raw: string, name: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    throw badRequest(`Argument "${name}" is not valid JSON.`);
  }
}

/**
 * event_types / fetch_event_types: a JSON list of strings, or "null" meaning every type
 * (zulip-js sends the literal string `null` when it has no list).
 */
export const eventTypesParam = (): Param<string[] | null> =>
  p
    .custom((raw, name) => {
      const value = parseJson(raw, name);
      if (value === null) return null;
      if (!Array.isArray(value)) throw badRequest(`${name} is not a list`);
      value.forEach((v, i) => {
        if (typeof v !== 'string') throw badRequest(`${name}[${i}] is not a string`);
      });
      return value as string[];
    })
    .default(null);

/** include_subscribers: "true" / "false" / "partial", JSON-encoded or not. */
export const includeSubscribersParam = (): Param<boolean | 'partial'> =>
  p
    .custom((raw, name): boolean | 'partial' => {
      let value: unknown = raw;
      try {
        value = JSON.parse(raw);
      } catch {
        // A bare word: "partial" (or anything else, rejected below).
      }
      if (value === true || value === 'true') return true;
      if (value === false || value === 'false') return false;
      if (value === 'partial') return 'partial';
      throw badRequest(`Invalid ${name}`);
    })
    .default(false);

/**
 * client_capabilities: a JSON object of booleans. Keys we do not know are ignored, as
 * clients declare capabilities of newer servers too.
 */
export const capabilitiesParam = (): Param<Record<string, boolean>> =>
  p
    .custom((raw, name) => {
      const value = parseJson(raw, name);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw badRequest(`${name} is not a dict`);
      const out: Record<string, boolean> = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) if (typeof v === 'boolean') out[k] = v;
      return out;
    })
    .default({});

export const narrowParam = (): Param<Narrow> => p.custom(decodeNarrowParam).default([]);

/** idle_queue_timeout: seconds (≥ 1) or "mobile"; flutter sends the JSON string "\"mobile\"". */
export const idleQueueTimeoutParam = (): Param<number | 'mobile' | undefined> =>
  p
    .custom((raw, name): number | 'mobile' => {
      const value = raw === 'mobile' ? 'mobile' : parseJson(raw, name);
      if (value === 'mobile') return 'mobile';
      if (typeof value === 'number' && Number.isInteger(value) && value >= 1) return value;
      throw badRequest(`Invalid ${name}`);
    })
    .optional();
