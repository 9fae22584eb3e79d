import type { User } from '../../db/tables.js';
import { adminRequired, badRequest, ownerRequired } from '../../errors.js';
import { isAdmin, isOwner } from '../../lib/roles.js';
import { codePointLength } from '../../lib/topics.js';
import { p, type Param } from '../params.js';

/**
 * A raw string parameter stripped of surrounding whitespace and then required to be
 * non-empty and at most `max` code points, with Zulip's messages for both failures.
 */
export function strippedString(max?: number): Param<string> {
  return p.custom((raw, name) => {
    const s = raw.trim();
    if (s === '') throw badRequest(`${name} cannot be blank`);
    if (max !== undefined && codePointLength(s) > max) throw badRequest(`${name} is too long (limit: ${max} characters)`);
    return s;
  });
}

/** For `authorize`: Zulip's require_realm_admin. */
export function requireAdministrator(user: User): void {
  if (!isAdmin(user)) throw adminRequired();
}

/** For `authorize`: Zulip's require_realm_owner. */
export function requireOwner(user: User): void {
  if (!isOwner(user)) throw ownerRequired();
}

/** For `authorize`: Zulip's human_users_only. */
export function requireHuman(user: User): void {
  if (user.is_bot) throw badRequest('This endpoint does not accept bot requests.');
}
