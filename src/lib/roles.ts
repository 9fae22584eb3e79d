export const ROLE_OWNER = 100;
export const ROLE_ADMINISTRATOR = 200;
export const ROLE_MODERATOR = 300;
export const ROLE_MEMBER = 400;
export const ROLE_GUEST = 600;

export const ROLES = [ROLE_OWNER, ROLE_ADMINISTRATOR, ROLE_MODERATOR, ROLE_MEMBER, ROLE_GUEST] as const;
export type Role = (typeof ROLES)[number];

export const ROLE_NAMES: Record<string, Role> = {
  owner: ROLE_OWNER,
  admin: ROLE_ADMINISTRATOR,
  administrator: ROLE_ADMINISTRATOR,
  moderator: ROLE_MODERATOR,
  member: ROLE_MEMBER,
  guest: ROLE_GUEST,
};

export const isAdmin = (u: { role: number }): boolean => u.role <= ROLE_ADMINISTRATOR;
export const isOwner = (u: { role: number }): boolean => u.role === ROLE_OWNER;
export const isModerator = (u: { role: number }): boolean => u.role <= ROLE_MODERATOR;
export const isGuest = (u: { role: number }): boolean => u.role === ROLE_GUEST;

/** Bot types. */
export const BOT_GENERIC = 1;
export const BOT_INCOMING_WEBHOOK = 2;
export const BOT_OUTGOING_WEBHOOK = 3;
export const BOT_EMBEDDED = 4;
