import { createHash } from 'node:crypto';
import type { User } from '../db/tables.js';

/** avatar_source: 'G' = external avatar provider (Gravatar), 'U' = uploaded to this server. */
export const AVATAR_FROM_GRAVATAR = 'G';
export const AVATAR_FROM_USER = 'U';

/**
 * Hashes of emails and user IDs, remembered: register formats every user of the organization
 * and GET /messages every sender, each needing one (a hash costs microseconds; a lookup, not).
 */
const hashes = new Map<string, string>();

function remembered(key: string, compute: () => string): string {
  let h = hashes.get(key);
  if (h === undefined) {
    h = compute();
    if (hashes.size >= 100_000) hashes.delete(hashes.keys().next().value as string);
    hashes.set(key, h);
  }
  return h;
}

export function gravatarHash(email: string): string {
  return remembered(`g:${email}`, () => createHash('md5').update(email.trim().toLowerCase()).digest('hex'));
}

/** The stable name of a user's uploaded avatar file (its content changes, the name does not). */
export function uploadedAvatarHash(user: Pick<User, 'realm_id' | 'id'>): string {
  return remembered(`u:${user.realm_id}:${user.id}`, () => createHash('sha1').update(`${user.realm_id}:${user.id}`).digest('hex'));
}

/**
 * The avatar URL Zulip would give. Gravatar URLs are built from the real (delivery) email,
 * which is why clients may only compute them themselves when they can see that email.
 */
export function avatarUrl(realmUrl: string, user: Pick<User, 'avatar_source' | 'avatar_version' | 'delivery_email' | 'realm_id' | 'id'>): string {
  if (user.avatar_source === AVATAR_FROM_USER) {
    return `${realmUrl}/user_avatars/${user.realm_id}/${uploadedAvatarHash(user)}.png?version=${user.avatar_version}`;
  }
  return `https://secure.gravatar.com/avatar/${gravatarHash(user.delivery_email)}?d=identicon&version=${user.avatar_version}`;
}

/**
 * Whether `avatar_url` may be null for a client that computes Gravatar URLs itself
 * (client_gravatar / client_extavatar): only for Gravatar avatars whose real email the caller can see.
 */
export function avatarUrlOmittable(user: Pick<User, 'avatar_source'>, callerCanSeeEmail: boolean): boolean {
  return user.avatar_source === AVATAR_FROM_GRAVATAR && callerCanSeeEmail;
}
