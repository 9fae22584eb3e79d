import type { ParamValue } from '../helpers/client.js';

/**
 * The permission matrix: endpoint x caller -> allowed (2xx) or the exact error. It is data;
 * permissions.test.ts runs every cell against a live server. Rows follow the spec's rules
 * (topic deletion, user updates and email changes, allowed domains, invitations and roles,
 * unsubscribing others, group settings) and Zulip's defaults for the read endpoints.
 */
export const CALLERS = [
  'owner',
  'admin',
  'moderator',
  'member',
  'guest',
  'bot',
  'botOwner',
  'deactivated',
  'otherOrg',
  'anonymous',
] as const;
export type Caller = (typeof CALLERS)[number];

export type Outcome = 'ok' | { status: number; code: string; msg?: string };

/** What a row can use: IDs and names of the seeded objects, and fresh targets for destructive calls. */
export interface MatrixContext {
  streamId: number;
  streamName: string;
  groupId: number;
  targetId: number;
  targetEmail: string;
  botId: number;
  domain: string;
  /** A new unique string per call (topics, emails, domains). */
  fresh(prefix: string): string;
  /** Sends a message as the owner to `topic` in the seeded channel. */
  sendToTopic(topic: string): Promise<void>;
  /** Puts the target user back to a plain, active member. */
  resetTarget(): Promise<void>;
  deactivateTarget(): Promise<void>;
  subscribe(userId: number): Promise<void>;
  setOwnerCanChangeEmails(value: boolean): Promise<void>;
  ensureDomain(domain: string): Promise<void>;
  /** Whether the server serves this route (rows of areas still being built are skipped). */
  hasRoute(method: string, path: string): boolean;
}

export interface MatrixRow {
  name: string;
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: (c: MatrixContext) => string;
  /** Fastify path, for the route-exists check. */
  route: string;
  params?: (c: MatrixContext, caller: Caller) => Record<string, ParamValue> | Promise<Record<string, ParamValue>>;
  /** Runs before each cell, so that every caller meets the same state. */
  setup?: (c: MatrixContext) => Promise<void>;
  expect: Record<Caller, Outcome>;
}

const err = (status: number, code: string, msg?: string): Outcome => ({ status, code, ...(msg === undefined ? {} : { msg }) });

const UNAUTHENTICATED = {
  deactivated: err(401, 'USER_DEACTIVATED', 'Account is deactivated'),
  // The other organization's user sends its own key to this organization's host.
  otherOrg: err(401, 'INVALID_API_KEY', 'Invalid API key'),
  anonymous: err(401, 'UNAUTHORIZED', 'Missing authorization header for basic auth'),
};

const ADMIN_REQUIRED = err(400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
const OWNER_REQUIRED = err(400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
const INSUFFICIENT = err(400, 'BAD_REQUEST', 'Insufficient permission');
const NO_GUESTS = err(400, 'BAD_REQUEST', 'Not allowed for guest users');
const NO_BOTS = err(400, 'BAD_REQUEST', 'This endpoint does not accept bot requests.');

type Authenticated = Exclude<Caller, keyof typeof UNAUTHENTICATED>;

/** A row's outcomes: `allowed` callers succeed, every other authenticated caller gets `denied`. */
function outcomes(allowed: Authenticated[] | 'everyone', denied: Outcome, overrides: Partial<Record<Caller, Outcome>> = {}): Record<Caller, Outcome> {
  const out = { ...UNAUTHENTICATED } as Record<Caller, Outcome>;
  for (const c of CALLERS) {
    if (c in UNAUTHENTICATED) continue;
    out[c] = allowed === 'everyone' || allowed.includes(c as Authenticated) ? 'ok' : denied;
  }
  return { ...out, ...overrides };
}

export const MATRIX: MatrixRow[] = [
  // Reads.
  { name: 'GET /users', method: 'GET', route: '/users', path: () => '/users', expect: outcomes('everyone', INSUFFICIENT) },
  { name: 'GET /users/{id}', method: 'GET', route: '/users/:user_id', path: (c) => `/users/${c.targetId}`, expect: outcomes('everyone', INSUFFICIENT) },
  { name: 'GET /streams', method: 'GET', route: '/streams', path: () => '/streams', expect: outcomes('everyone', INSUFFICIENT) },
  { name: 'GET /user_groups', method: 'GET', route: '/user_groups', path: () => '/user_groups', expect: outcomes('everyone', INSUFFICIENT, { guest: NO_GUESTS }) },
  {
    name: 'GET /messages',
    method: 'GET',
    route: '/messages',
    path: () => '/messages',
    params: (c) => ({ anchor: 'newest', num_before: 5, num_after: 0, narrow: [{ operator: 'channel', operand: c.streamId }] }),
    expect: outcomes('everyone', INSUFFICIENT),
  },
  { name: 'GET /realm/domains', method: 'GET', route: '/realm/domains', path: () => '/realm/domains', expect: outcomes('everyone', INSUFFICIENT) },
  { name: 'GET /channel_folders', method: 'GET', route: '/channel_folders', path: () => '/channel_folders', expect: outcomes('everyone', INSUFFICIENT) },
  { name: 'GET /scheduled_messages', method: 'GET', route: '/scheduled_messages', path: () => '/scheduled_messages', expect: outcomes('everyone', INSUFFICIENT) },
  {
    // Since feature level 448, for users who may post to the channel (everyone may post to the seeded one).
    name: 'GET /streams/{id}/email_address',
    method: 'GET',
    route: '/streams/:stream_id/email_address',
    path: (c) => `/streams/${c.streamId}/email_address`,
    expect: outcomes('everyone', INSUFFICIENT),
  },
  { name: 'GET /reminders', method: 'GET', route: '/reminders', path: () => '/reminders', expect: outcomes('everyone', INSUFFICIENT) },

  // Channel folders: administrators manage them (Zulip's require_realm_admin).
  {
    name: 'POST /channel_folders/create',
    method: 'POST',
    route: '/channel_folders/create',
    path: () => '/channel_folders/create',
    params: (c) => ({ name: c.fresh('folder '), description: '' }),
    expect: outcomes(['owner', 'admin'], ADMIN_REQUIRED),
  },

  // Topic deletion: administrators only.
  {
    name: 'POST /streams/{id}/delete_topic',
    method: 'POST',
    route: '/streams/:stream_id/delete_topic',
    path: (c) => `/streams/${c.streamId}/delete_topic`,
    params: async (c) => {
      const topic = c.fresh('doomed');
      await c.sendToTopic(topic);
      return { topic_name: topic };
    },
    expect: outcomes(['owner', 'admin'], ADMIN_REQUIRED),
  },

  // User updates: administrators (others get Zulip's access_user_by_id for_admin error); the owner
  // role only by owners; emails only by owners with can_change_user_emails.
  {
    name: 'PATCH /users/{id} full_name',
    method: 'PATCH',
    route: '/users/:user_id',
    path: (c) => `/users/${c.targetId}`,
    params: (c) => ({ full_name: c.fresh('Renamed ') }),
    expect: outcomes(['owner', 'admin'], INSUFFICIENT),
  },
  {
    name: 'PATCH /users/{id} role=moderator',
    method: 'PATCH',
    route: '/users/:user_id',
    path: (c) => `/users/${c.targetId}`,
    setup: (c) => c.resetTarget(),
    params: () => ({ role: 300 }),
    expect: outcomes(['owner', 'admin'], INSUFFICIENT),
  },
  {
    name: 'PATCH /users/{id} role=owner',
    method: 'PATCH',
    route: '/users/:user_id',
    path: (c) => `/users/${c.targetId}`,
    setup: (c) => c.resetTarget(),
    params: () => ({ role: 100 }),
    expect: outcomes(['owner'], INSUFFICIENT, { admin: OWNER_REQUIRED }),
  },
  {
    name: 'PATCH /users/{id} new_email (owner lacks can_change_user_emails)',
    method: 'PATCH',
    route: '/users/:user_id',
    path: (c) => `/users/${c.targetId}`,
    setup: (c) => c.setOwnerCanChangeEmails(false),
    params: (c) => ({ new_email: `${c.fresh('moved')}@example.com` }),
    expect: outcomes([], INSUFFICIENT, { owner: err(400, 'BAD_REQUEST', 'User not authorized to change user emails'), admin: OWNER_REQUIRED }),
  },
  {
    name: 'PATCH /users/{id} new_email (owner has can_change_user_emails)',
    method: 'PATCH',
    route: '/users/:user_id',
    path: (c) => `/users/${c.targetId}`,
    setup: (c) => c.setOwnerCanChangeEmails(true),
    params: (c) => ({ new_email: `${c.fresh('moved')}@example.com` }),
    expect: outcomes(['owner'], INSUFFICIENT, { admin: OWNER_REQUIRED }),
  },

  // The organization's icon and logos: administrators change them, everyone is redirected to them.
  { name: 'DELETE /realm/icon', method: 'DELETE', route: '/realm/icon', path: () => '/realm/icon', expect: outcomes(['owner', 'admin'], ADMIN_REQUIRED) },
  {
    name: 'DELETE /realm/logo',
    method: 'DELETE',
    route: '/realm/logo',
    path: () => '/realm/logo',
    params: () => ({ night: false }),
    expect: outcomes(['owner', 'admin'], ADMIN_REQUIRED),
  },

  // Allowed domains: reading is open, changing is for owners.
  {
    name: 'POST /realm/domains',
    method: 'POST',
    route: '/realm/domains',
    path: () => '/realm/domains',
    params: (c) => ({ domain: `${c.fresh('d')}.example`, allow_subdomains: false }),
    expect: outcomes(['owner'], OWNER_REQUIRED),
  },
  {
    name: 'PATCH /realm/domains/{domain}',
    method: 'PATCH',
    route: '/realm/domains/:domain',
    path: (c) => `/realm/domains/${c.domain}`,
    setup: (c) => c.ensureDomain(c.domain),
    params: () => ({ allow_subdomains: true }),
    expect: outcomes(['owner'], OWNER_REQUIRED),
  },
  {
    name: 'DELETE /realm/domains/{domain}',
    method: 'DELETE',
    route: '/realm/domains/:domain',
    path: (c) => `/realm/domains/${c.domain}`,
    setup: (c) => c.ensureDomain(c.domain),
    expect: outcomes(['owner'], OWNER_REQUIRED),
  },

  // Invitations: members and up (not guests, not bots); invite_as no less restricted than the caller.
  {
    name: 'POST /invites invite_as=member',
    method: 'POST',
    route: '/invites',
    path: () => '/invites',
    params: (c) => ({ invitee_emails: `${c.fresh('invitee')}@example.com`, stream_ids: [], invite_as: 400 }),
    expect: outcomes(['owner', 'admin', 'moderator', 'member', 'botOwner'], INSUFFICIENT, { guest: NO_GUESTS, bot: NO_BOTS }),
  },
  {
    name: 'POST /invites invite_as=moderator',
    method: 'POST',
    route: '/invites',
    path: () => '/invites',
    params: (c) => ({ invitee_emails: `${c.fresh('invitee')}@example.com`, stream_ids: [], invite_as: 300 }),
    expect: outcomes(['owner', 'admin', 'moderator'], INSUFFICIENT, { guest: NO_GUESTS, bot: NO_BOTS }),
  },
  {
    name: 'POST /invites invite_as=administrator',
    method: 'POST',
    route: '/invites',
    path: () => '/invites',
    params: (c) => ({ invitee_emails: `${c.fresh('invitee')}@example.com`, stream_ids: [], invite_as: 200 }),
    expect: outcomes(['owner', 'admin'], INSUFFICIENT, { guest: NO_GUESTS, bot: NO_BOTS }),
  },
  {
    name: 'POST /invites invite_as=owner',
    method: 'POST',
    route: '/invites',
    path: () => '/invites',
    params: (c) => ({ invitee_emails: `${c.fresh('invitee')}@example.com`, stream_ids: [], invite_as: 100 }),
    expect: outcomes(['owner'], INSUFFICIENT, { guest: NO_GUESTS, bot: NO_BOTS }),
  },

  // Unsubscribing others: administrators; a user may remove their own bot.
  {
    name: 'DELETE /users/me/subscriptions principals=[another user]',
    method: 'DELETE',
    route: '/users/me/subscriptions',
    path: () => '/users/me/subscriptions',
    setup: (c) => c.subscribe(c.targetId),
    params: (c) => ({ subscriptions: [c.streamName], principals: [c.targetId] }),
    expect: outcomes(['owner', 'admin'], INSUFFICIENT),
  },
  {
    name: "DELETE /users/me/subscriptions principals=[the bot]",
    method: 'DELETE',
    route: '/users/me/subscriptions',
    path: () => '/users/me/subscriptions',
    setup: (c) => c.subscribe(c.botId),
    params: (c) => ({ subscriptions: [c.streamName], principals: [c.botId] }),
    // For the bot itself this is unsubscribing oneself.
    expect: outcomes(['owner', 'admin', 'botOwner', 'bot'], INSUFFICIENT),
  },

  // Organization settings.
  {
    name: 'PATCH /realm description',
    method: 'PATCH',
    route: '/realm',
    path: () => '/realm',
    params: (c) => ({ description: c.fresh('About ') }),
    expect: outcomes(['owner', 'admin'], ADMIN_REQUIRED),
  },

  // Group settings: the group's can_manage_group (its creator, the bot's owner) and
  // can_manage_all_groups (owners by default).
  {
    name: 'PATCH /user_groups/{id} description',
    method: 'PATCH',
    route: '/user_groups/:user_group_id',
    path: (c) => `/user_groups/${c.groupId}`,
    params: (c) => ({ description: c.fresh('Group about ') }),
    expect: outcomes(['owner', 'botOwner'], INSUFFICIENT, { guest: NO_GUESTS }),
  },
  {
    name: 'PATCH /user_groups/{id} name',
    method: 'PATCH',
    route: '/user_groups/:user_group_id',
    path: (c) => `/user_groups/${c.groupId}`,
    params: (c) => ({ name: c.fresh('group ') }),
    expect: outcomes(['owner', 'botOwner'], INSUFFICIENT, { guest: NO_GUESTS }),
  },

  // Administrators' endpoints (Zulip's require_realm_admin).
  {
    name: 'POST /realm/profile_fields',
    method: 'POST',
    route: '/realm/profile_fields',
    path: () => '/realm/profile_fields',
    params: (c) => ({ name: c.fresh('Field '), field_type: 1, hint: '' }),
    expect: outcomes(['owner', 'admin'], ADMIN_REQUIRED),
  },
  {
    name: 'POST /realm/playgrounds',
    method: 'POST',
    route: '/realm/playgrounds',
    path: () => '/realm/playgrounds',
    params: (c) => ({ name: c.fresh('Playground '), pygments_language: 'Python', url_template: 'https://python.example/?c={code}' }),
    expect: outcomes(['owner', 'admin'], ADMIN_REQUIRED),
  },
  {
    name: 'PATCH /realm/user_settings_defaults',
    method: 'PATCH',
    route: '/realm/user_settings_defaults',
    path: () => '/realm/user_settings_defaults',
    params: () => ({ left_side_userlist: true }),
    expect: outcomes(['owner', 'admin'], ADMIN_REQUIRED),
  },
  {
    name: 'DELETE /users/{id} (deactivate)',
    method: 'DELETE',
    route: '/users/:user_id',
    path: (c) => `/users/${c.targetId}`,
    setup: (c) => c.resetTarget(),
    expect: outcomes(['owner', 'admin'], INSUFFICIENT),
  },
  {
    name: 'POST /users/{id}/reactivate',
    method: 'POST',
    route: '/users/:user_id/reactivate',
    path: (c) => `/users/${c.targetId}/reactivate`,
    setup: (c) => c.deactivateTarget(),
    expect: outcomes(['owner', 'admin'], INSUFFICIENT),
  },

  // Human users only (Zulip's human_users_only).
  {
    name: 'PATCH /users/me/profile_data',
    method: 'PATCH',
    route: '/users/me/profile_data',
    path: () => '/users/me/profile_data',
    params: () => ({ data: [] }),
    expect: outcomes('everyone', INSUFFICIENT, { bot: NO_BOTS }),
  },
  {
    name: 'POST /users/me/apns_device_token',
    method: 'POST',
    route: '/users/me/apns_device_token',
    path: () => '/users/me/apns_device_token',
    params: () => ({ token: 'c0ffee'.repeat(8), appid: 'org.zulip.Zulip' }),
    expect: outcomes('everyone', INSUFFICIENT, { bot: NO_BOTS }),
  },

  // Everyone but guests.
  {
    name: 'POST /user_groups/create',
    method: 'POST',
    route: '/user_groups/create',
    path: () => '/user_groups/create',
    params: (c) => ({ name: c.fresh('new group '), description: 'x', members: [] }),
    expect: outcomes('everyone', INSUFFICIENT, { guest: NO_GUESTS }),
  },
];
