import { JsonableError, badRequest } from '../../errors.js';
import type { ProfileDataEntry } from '../../actions/users.js';
import { p } from '../params.js';

/** A target named in the path: `/users/{user_id}` or `/users/{email}` (one route, decided by value). */
export type UserRef = { id: number } | { email: string };

const routeNotFound = (): JsonableError => new JsonableError('Not Found', 'NOT_FOUND', 404);

/** Zulip routes `users/<digits>` and `users/<x@y>`; anything else matches no route. */
export const userRefParam = p.custom<UserRef>((raw) => {
  if (/^\d+$/.test(raw)) return { id: Number(raw) };
  if (/^[^/]+@[^/]+$/.test(raw)) return { email: raw };
  throw routeNotFound();
});

export const userIdPathParam = p.custom<number>((raw) => {
  if (/^\d+$/.test(raw)) return Number(raw);
  throw routeNotFound();
});

function parseJson(raw: string, name: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    throw badRequest(`Argument "${name}" is not valid JSON.`);
  }
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);

/**
 * profile_data (PATCH /users/{id}) and data (PATCH /users/me/profile_data): a list of
 * {id, value}, value a string, a list of user IDs or null; validated with Zulip's messages.
 */
export const profileDataParam = p.custom<ProfileDataEntry[]>((raw, name) => {
  const list = parseJson(raw, name);
  if (!Array.isArray(list)) throw badRequest(`${name} is not a list`);
  return list.map((item: unknown, i) => {
    const where = `${name}[${i}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw badRequest(`${where} is not a dict`);
    const entry = item as Record<string, unknown>;
    for (const k of ['id', 'value']) if (!(k in entry)) throw badRequest(`${k} key is missing from ${where}`);
    if (!isInt(entry.id)) throw badRequest(`${where}["id"] is not an integer`);
    const v = entry.value;
    const ok = v === null || typeof v === 'string' || (Array.isArray(v) && v.every(isInt));
    if (!ok) throw badRequest(`${where}["value"] is not an allowed_type`);
    const extra = Object.keys(entry).filter((k) => k !== 'id' && k !== 'value');
    if (extra.length) throw badRequest(`Unexpected arguments: ${extra.join(', ')}`);
    return { id: entry.id, value: v as string | number[] | null };
  });
});
