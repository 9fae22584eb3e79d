import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../services.js';
import type { User } from '../../db/tables.js';
import { badRequest, insufficientPermission, JsonableError } from '../../errors.js';
import { now } from '../../db/index.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { fetchPendingInvites, type Invite } from '../../db/repos/invites.js';
import { ROLES, isAdmin, isGuest } from '../../lib/roles.js';
import { ChannelCaller } from '../../lib/access/streams.js';
import { createMailer } from '../../lib/email.js';
import { escapeHtml } from '../../lib/html.js';
import { startSession } from '../../plugins/session.js';
import { realmUrl } from '../../lib/urls.js';
import {
  accessInviteForChange,
  checkInviteAs,
  checkInviteTargets,
  checkWelcomeMessageCustomText,
  doCreateMultiuseInvite,
  doInviteUsers,
  doResendInvite,
  doRevokeInvite,
  inviteLink,
  parseInviteeEmails,
  type InviteOptions,
} from '../../actions/invites.js';
import { doAcceptInvite, fetchUsableInvite } from '../../actions/signup.js';

/** Zulip's require_member_or_admin, which guards every invitation endpoint. */
function checkMemberOrAdmin(user: Pick<User, 'role' | 'is_bot'>): void {
  if (isGuest(user)) throw badRequest('Not allowed for guest users');
  if (user.is_bot) throw badRequest('This endpoint does not accept bot requests.');
}

const inviteAsParam = () => p.int(z.number().int().refine((v) => (ROLES as readonly number[]).includes(v))).default(400);

function formatInvite(services: Services, realm: Parameters<typeof inviteLink>[1], invite: Invite): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: invite.id,
    invited_by_user_id: invite.referred_by,
    invited: invite.date_created,
    expiry_date: invite.expiry,
    invited_as: invite.invited_as,
    notify_referrer_on_join: !!invite.notify_referrer_on_join,
    is_multiuse: !!invite.multiuse,
  };
  if (invite.multiuse) out.link_url = inviteLink(services, realm, invite.key);
  else out.email = invite.email;
  return out;
}

export function registerInviteRoutes(app: FastifyInstance, services: Services): void {
  const mailer = createMailer(services.config, services.log);
  app.addHook('onClose', async () => mailer.close());

  const expiry = (minutes: number | null | undefined): number | null =>
    minutes === null ? null : now() + 60 * (minutes ?? services.config.invites.defaultExpiresInMinutes);

  const inviteOptions = (
    user: User,
    params: {
      invite_as: number;
      invite_expires_in_minutes: number | null | undefined;
      include_realm_default_subscriptions: boolean;
      notify_referrer_on_join: boolean;
      welcome_message_custom_text: string | null;
    },
    streamIds: number[],
    groupIds: number[],
  ): InviteOptions => ({
    inviteAs: params.invite_as,
    expiry: expiry(params.invite_expires_in_minutes),
    streamIds,
    groupIds,
    includeRealmDefaultSubscriptions: params.include_realm_default_subscriptions,
    notifyReferrerOnJoin: params.notify_referrer_on_join,
    welcomeMessageCustomText: checkWelcomeMessageCustomText(user, params.welcome_message_custom_text),
  });

  const commonParams = {
    invite_expires_in_minutes: p.int(z.number().int().min(1)).nullable().optional(),
    invite_as: inviteAsParam(),
    group_ids: p.intList().default([]),
    include_realm_default_subscriptions: p.bool().default(false),
    notify_referrer_on_join: p.bool().default(true),
    welcome_message_custom_text: p.str().nullable().default(null),
  };

  endpoint(app, services, {
    method: 'POST',
    path: '/invites',
    authorize: checkMemberOrAdmin,
    params: { invitee_emails: p.str(), stream_ids: p.intList(), ...commonParams },
    handler: async ({ realm, user, params }) => {
      const caller = new ChannelCaller(services.db.kysely, realm, user);
      if (!isAdmin(user) && !(await caller.realmPermission('can_invite_users_group'))) throw insufficientPermission();
      checkInviteAs(user, params.invite_as);
      const emails = parseInviteeEmails(params.invitee_emails);
      if (emails.length === 0) throw badRequest('You must specify at least one email address.');
      if (emails.length > services.config.invites.maxPerDay) throw badRequest(`You can invite at most ${services.config.invites.maxPerDay} people at once.`);
      const streamIds = [...new Set(params.stream_ids)];
      const groupIds = [...new Set(params.group_ids)];
      await checkInviteTargets(services, realm, user, streamIds, groupIds);
      await doInviteUsers(services, mailer, realm, user, emails, inviteOptions(user, params, streamIds, groupIds));
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/invites',
    authorize: checkMemberOrAdmin,
    params: {},
    handler: async ({ realm, user }) => {
      const invites = await fetchPendingInvites(services.db.kysely, realm.id, now(), isAdmin(user) ? undefined : user.id);
      return { invites: invites.map((i) => formatInvite(services, realm, i)) };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/invites/multiuse',
    authorize: checkMemberOrAdmin,
    params: { stream_ids: p.intList().default([]), ...commonParams },
    handler: async ({ realm, user, params }) => {
      const caller = new ChannelCaller(services.db.kysely, realm, user);
      if (!(await caller.realmPermission('create_multiuse_invite_group'))) throw insufficientPermission();
      checkInviteAs(user, params.invite_as);
      const streamIds = [...new Set(params.stream_ids)];
      const groupIds = [...new Set(params.group_ids)];
      await checkInviteTargets(services, realm, user, streamIds, groupIds);
      const link = await doCreateMultiuseInvite(services, realm, user, inviteOptions(user, params, streamIds, groupIds));
      return { invite_link: link };
    },
  });

  for (const [path, multiuse] of [['/invites/:invite_id', false], ['/invites/multiuse/:invite_id', true]] as const) {
    endpoint(app, services, {
      method: 'DELETE',
      path,
      authorize: checkMemberOrAdmin,
      params: { invite_id: p.int() },
      handler: async ({ realm, user, params }) => {
        await doRevokeInvite(services, realm, user, await accessInviteForChange(services, realm, user, params.invite_id, multiuse));
      },
    });
  }

  endpoint(app, services, {
    method: 'POST',
    path: '/invites/:invite_id/resend',
    authorize: checkMemberOrAdmin,
    params: { invite_id: p.int() },
    handler: async ({ realm, user, params }) => {
      await doResendInvite(services, mailer, realm, await accessInviteForChange(services, realm, user, params.invite_id, false));
    },
  });

  registerSignupPages(app, services);
}

const page = (title: string, body: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;box-sizing:border-box}button{margin-top:1rem;padding:.5rem 1rem}.error{color:#b00}</style></head><body>${body}</body></html>`;

function signupForm(realmName: string, invite: Invite, values: { email: string; fullName: string }, error: string | null): string {
  const emailField = invite.multiuse
    ? `<label for="email">Email</label><input id="email" name="email" type="email" required value="${escapeHtml(values.email)}">`
    : `<p>Email: <strong>${escapeHtml(invite.email)}</strong></p>`;
  return page(
    `Join ${realmName}`,
    `<h1>Join ${escapeHtml(realmName)}</h1>${error ? `<p class="error">${escapeHtml(error)}</p>` : ''}
<form method="post">${emailField}
<label for="full_name">Name</label><input id="full_name" name="full_name" required value="${escapeHtml(values.fullName)}">
<label for="password">Password</label><input id="password" name="password" type="password" required minlength="6">
<button type="submit">Create account</button></form>`,
  );
}

const invalidLinkPage = (): string =>
  page('Invitation link', '<h1>Whoops.</h1><p>The invitation link has expired or been deactivated. Ask the person who invited you for a new one.</p>');

/** The page an invitation link leads to: choose a name and password, and the account is created. */
function registerSignupPages(app: FastifyInstance, services: Services): void {
  const html = (reply: FastifyReply, status: number, body: string) => reply.code(status).type('text/html; charset=utf-8').send(body);

  // Invitation links are guessable only by brute force: both pages count against the
  // caller's per-address budget, as Zulip rate-limits its unauthenticated views.
  app.get('/join/:key', async (req: FastifyRequest<{ Params: { key: string } }>, reply) => {
    await services.rateLimiter.checkApi(req, reply, null);
    const found = await fetchUsableInvite(services, req.params.key);
    if (!found) return html(reply, 404, invalidLinkPage());
    return html(reply, 200, signupForm(found.realm.name, found.invite, { email: '', fullName: '' }, null));
  });

  app.post('/join/:key', async (req: FastifyRequest<{ Params: { key: string } }>, reply) => {
    await services.rateLimiter.checkApi(req, reply, null);
    const found = await fetchUsableInvite(services, req.params.key);
    if (!found) return html(reply, 404, invalidLinkPage());
    const form = (req.body ?? {}) as Record<string, string>;
    const values = { email: form.email ?? '', fullName: form.full_name ?? '', password: form.password ?? '' };
    try {
      const user = await doAcceptInvite(services, found.realm, found.invite, values);
      reply.header('Set-Cookie', await startSession(services, user));
      // Into the app, logged in, as Zulip ends its registration.
      return reply.redirect('/');
    } catch (e) {
      if (!(e instanceof JsonableError)) throw e;
      return html(reply, 400, signupForm(found.realm.name, found.invite, values, e.message));
    }
  });
}
