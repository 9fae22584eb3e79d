import type { User } from '../../db/tables.js';
import { badRequest } from '../../errors.js';
import { isGuest } from '../../lib/roles.js';

/** For `authorize`: Zulip's require_member_or_admin (no guests, no bots). */
export function requireMemberOrAdmin(user: User): void {
  if (isGuest(user)) throw badRequest('Not allowed for guest users');
  if (user.is_bot) throw badRequest('This endpoint does not accept bot requests.');
}
