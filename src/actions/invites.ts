import { JsonableError, adminRequired, badRequest, insufficientPermission, ownerRequired } from '../errors.js';
import { now, transaction } from '../db/index.js';
import type { Insertable } from 'kysely';
import type { InviteTable, Realm, User } from '../db/tables.js';
import {
  INVITE_PENDING,
  INVITE_REVOKED,
  countEmailInvitesSince,
  fetchInvite,
  fetchRealmAdminIds,
  insertInvites,
  updateInvite,
  type Invite,
} from '../db/repos/invites.js';
import { fetchUserByEmail } from '../db/repos/users.js';
import { fetchDefaultStreamIds } from '../db/repos/streams.js';
import { ChannelCaller, accessStreamById, canAddSubscribers } from '../lib/access/streams.js';
import { accessUserGroupForUpdate } from '../lib/access/user_groups.js';
import { isValidEmailAddress } from './users.js';
import { realmEmailValidator } from './realm_domains.js';
import { generateToken } from '../lib/secrets.js';
import { realmUrl } from '../lib/urls.js';
import { isAdmin, isOwner, ROLE_OWNER } from '../lib/roles.js';
import { MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH } from '../lib/realm_settings.js';
import type { Mailer } from '../lib/email.js';
import type { ActionServices } from '../services.js';

export interface InviteOptions {
  inviteAs: number;
  /** Unix time the invitation expires at, or null for never. */
  expiry: number | null;
  streamIds: number[];
  groupIds: number[];
  includeRealmDefaultSubscriptions: boolean;
  notifyReferrerOnJoin: boolean;
  welcomeMessageCustomText: string | null;
}

/** Zulip splits on commas and newlines and accepts `Name <address>`. */
export function parseInviteeEmails(raw: string): string[] {
  const out = new Set<string>();
  for (const part of raw.split(/[,\n]/)) {
    const named = /<(.*)>/.exec(part);
    const email = (named ? named[1]! : part).trim();
    if (email) out.add(email);
  }
  return [...out];
}

/**
 * The role rule of the spec: one may only invite to a role as strict as one's own or
 * stricter (owners alone invite owners).
 */
export function checkInviteAs(caller: User, inviteAs: number): void {
  if (inviteAs === ROLE_OWNER && !isOwner(caller)) throw insufficientPermission();
  if (inviteAs < caller.role) throw insufficientPermission();
}

/** A length in Unicode code points, as Zulip (Python) counts. */
const codePoints = (s: string): number => [...s].length;

export function checkWelcomeMessageCustomText(caller: User, text: string | null): string | null {
  // Only administrators may set it; for everyone else the value is always null.
  if (!isAdmin(caller) || text === null) return null;
  if (codePoints(text) > MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH) {
    throw badRequest(`welcome_message_custom_text is too long (limit: ${MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH} characters)`);
  }
  return text;
}

/**
 * Channels and groups an invitation may carry: each channel must be accessible and either a
 * default channel or one the caller may add subscribers to; each group one the caller may add
 * members to. Any refusal sends no invitation.
 */
export async function checkInviteTargets(
  services: ActionServices,
  realm: Realm,
  caller: User,
  streamIds: readonly number[],
  groupIds: readonly number[],
): Promise<void> {
  const channelCaller = new ChannelCaller(services.db.kysely, realm, caller);
  if (streamIds.length > 0 && !isAdmin(caller) && !(await channelCaller.realmPermission('can_add_subscribers_group'))) {
    throw badRequest('You do not have permission to subscribe other users to channels.');
  }
  const defaults = new Set(await fetchDefaultStreamIds(services.db.kysely, realm.id));
  for (const id of streamIds) {
    let stream;
    try {
      stream = (await accessStreamById(channelCaller, id)).stream;
    } catch {
      throw badRequest(`Invalid channel ID ${id}. No invites were sent.`);
    }
    if (!defaults.has(id) && !(await canAddSubscribers(channelCaller, stream))) {
      throw badRequest('You do not have permission to subscribe other users to channels.');
    }
  }
  for (const id of groupIds) await accessUserGroupForUpdate(services.db.kysely, realm, caller, id, 'can_add_members_group');
}

export const inviteLink = (services: ActionServices, realm: Realm, key: string): string => `${realmUrl(services.config, realm)}/join/${key}/`;

async function sendInvitationEmail(services: ActionServices, mailer: Mailer, realm: Realm, inviter: User, invite: Invite): Promise<void> {
  const link = inviteLink(services, realm, invite.key);
  const expires = invite.expiry === null ? 'This invitation does not expire.' : `This invitation expires on ${new Date(invite.expiry * 1000).toUTCString()}.`;
  try {
    await mailer.send({
      to: invite.email,
      subject: `${inviter.full_name} invited you to join ${realm.name}`,
      text: `Hi there,\n\n${inviter.full_name} (${inviter.delivery_email}) wants you to join them on ${realm.name}, a team chat.\n\nTo get started, visit the link below:\n\n    ${link}\n\n${expires}\n`,
    });
  } catch (e) {
    // The invitation stands; it can be resent. Never fail the request over delivery.
    services.log.error({ err: e, invite: invite.id }, 'failed to send invitation email');
  }
}

function notifyInvitesChanged(services: ActionServices, realm: Realm, adminIds: number[], referrerId: number): void {
  services.events.send(realm.id, { type: 'invites_changed' }, [...new Set([...adminIds, referrerId])].sort((a, b) => a - b));
}

/**
 * Invites every address that can be invited and reports the others. Zulip's INVITATION_FAILED
 * carries `errors` as [email, reason, is_deactivated] triples and says whether the other
 * invitations were still sent.
 */
export async function doInviteUsers(services: ActionServices, mailer: Mailer, realm: Realm, caller: User, emails: string[], opts: InviteOptions): Promise<void> {
  const db = services.db.kysely;
  const since = now() - 86400;
  const maxPerDay = services.config.invites.maxPerDay;
  if ((await countEmailInvitesSince(db, realm.id, since)) + emails.length > maxPerDay) {
    throw new JsonableError(
      'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
      'INVITATION_FAILED',
      400,
      { errors: [], sent_invitations: false, license_limit_reached: false, daily_limit_reached: true },
    );
  }
  const validateDomain = await realmEmailValidator(db, realm);
  const errors: [string, string, boolean][] = [];
  const good: string[] = [];
  for (const email of emails) {
    if (!isValidEmailAddress(email)) {
      errors.push([email, 'Invalid address.', false]);
      continue;
    }
    const domainProblem = validateDomain(email);
    if (domainProblem) {
      errors.push([email, domainProblem, false]);
      continue;
    }
    const existing = await fetchUserByEmail(db, realm.id, email);
    if (existing) {
      errors.push(existing.is_active ? [email, 'Already has an account.', false] : [email, 'Account has been deactivated.', true]);
      continue;
    }
    good.push(email);
  }
  if (good.length === 0) {
    throw new JsonableError("We weren't able to invite anyone.", 'INVITATION_FAILED', 400, {
      errors,
      sent_invitations: false,
      license_limit_reached: false,
      daily_limit_reached: false,
    });
  }
  const invites = await transaction(services.db, async (tx, afterCommit) => {
    const created = await insertInvites(tx, good.map((email) => inviteRow(realm, caller, opts, email.toLowerCase())));
    const admins = await fetchRealmAdminIds(tx, realm.id);
    afterCommit(() => notifyInvitesChanged(services, realm, admins, caller.id));
    return created;
  });
  for (const invite of invites) await sendInvitationEmail(services, mailer, realm, caller, invite);
  if (errors.length) {
    throw new JsonableError(
      "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
      'INVITATION_FAILED',
      400,
      { errors, sent_invitations: true, license_limit_reached: false, daily_limit_reached: false },
    );
  }
}

/** An invitation row: for one email address, or (email null) a reusable link. */
function inviteRow(realm: Realm, caller: User, opts: InviteOptions, email: string | null): Insertable<InviteTable> {
  return {
    realm_id: realm.id,
    email: email ?? '',
    referred_by: caller.id,
    invited_as: opts.inviteAs,
    date_created: now(),
    expiry: opts.expiry,
    stream_ids: JSON.stringify(opts.streamIds),
    group_ids: JSON.stringify(opts.groupIds),
    include_realm_default_subscriptions: opts.includeRealmDefaultSubscriptions ? 1 : 0,
    notify_referrer_on_join: opts.notifyReferrerOnJoin ? 1 : 0,
    welcome_message_custom_text: opts.welcomeMessageCustomText,
    status: INVITE_PENDING,
    key: generateToken(24),
    multiuse: email === null ? 1 : 0,
  };
}

export async function doCreateMultiuseInvite(services: ActionServices, realm: Realm, caller: User, opts: InviteOptions): Promise<string> {
  return transaction(services.db, async (tx, afterCommit) => {
    const [invite] = await insertInvites(tx, [inviteRow(realm, caller, opts, null)]);
    const admins = await fetchRealmAdminIds(tx, realm.id);
    afterCommit(() => notifyInvitesChanged(services, realm, admins, caller.id));
    return inviteLink(services, realm, invite!.key);
  });
}

/**
 * Who may revoke or resend an invitation (Zulip's rule): its creator, or an administrator;
 * only owners act on invitations to the owner role.
 */
export async function accessInviteForChange(services: ActionServices, realm: Realm, caller: User, id: number, multiuse: boolean): Promise<Invite> {
  const invite = await fetchInvite(services.db.kysely, realm.id, id, multiuse);
  if (!invite) throw badRequest('No such invitation');
  if (invite.referred_by !== caller.id) {
    if (invite.invited_as === ROLE_OWNER && !isOwner(caller)) throw ownerRequired();
    if (!isAdmin(caller)) throw adminRequired();
  }
  if (invite.status === INVITE_REVOKED) throw badRequest('Invitation has already been revoked');
  if (invite.status !== INVITE_PENDING) throw badRequest('No such invitation');
  return invite;
}

export async function doRevokeInvite(services: ActionServices, realm: Realm, caller: User, invite: Invite): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await updateInvite(tx, invite.id, { status: INVITE_REVOKED });
    const admins = await fetchRealmAdminIds(tx, realm.id);
    afterCommit(() => notifyInvitesChanged(services, realm, admins, invite.referred_by));
  });
}

export async function doResendInvite(services: ActionServices, mailer: Mailer, realm: Realm, invite: Invite): Promise<void> {
  await updateInvite(services.db.kysely, invite.id, { date_created: now() });
  const inviter = (await services.db.kysely.selectFrom('users').selectAll().where('id', '=', invite.referred_by).executeTakeFirst())!;
  await sendInvitationEmail(services, mailer, realm, inviter, invite);
}
