import { badRequest } from '../errors.js';
import { now } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { INVITE_PENDING, fetchInviteByKey, markEmailInvitesUsed, type Invite } from '../db/repos/invites.js';
import { fetchUserById } from '../db/repos/users.js';
import { fetchRealmById } from '../db/repos/realms.js';
import { checkEmailAvailable, checkFullName, doCreateUser, isStrongEnoughPassword, isValidEmailAddress } from './users.js';
import { realmEmailValidator } from './realm_domains.js';
import { doChangeGroupMembership } from './user_groups.js';
import { checkSendMessage, doSendMessage } from './messages.js';
import { accessUserGroupForRead } from '../lib/access/user_groups.js';
import { fetchSystemBot, type SystemBotName } from '../lib/system_bots.js';
import { realmSettings } from '../lib/realm_settings.js';
import type { ActionServices } from '../services.js';

/** An invitation that can still be accepted, with its organization; null when expired, used or revoked. */
export async function fetchUsableInvite(services: ActionServices, key: string): Promise<{ invite: Invite; realm: Realm } | null> {
  const invite = await fetchInviteByKey(services.db.kysely, key);
  if (!invite || invite.status !== INVITE_PENDING) return null;
  if (invite.expiry !== null && invite.expiry <= now()) return null;
  const realm = await fetchRealmById(services.db.kysely, invite.realm_id);
  if (!realm || realm.deactivated) return null;
  return { invite, realm };
}

/** A direct message from a system bot to one user; returns its ID. */
export async function sendBotDirectMessage(services: ActionServices, realm: Realm, bot: SystemBotName, to: User, content: string): Promise<number> {
  const sender = await fetchSystemBot(services.db.kysely, services.config, realm, bot);
  const prepared = await checkSendMessage(services, realm, sender, {
    type: 'private',
    to: JSON.stringify([to.id]),
    topic: undefined,
    content,
    client: 'Internal',
  });
  return (await doSendMessage(services, prepared)).id;
}

/**
 * Creates the account an invitation promised: its role, channels (with the organization's
 * defaults when asked), groups, the Welcome Bot's messages and, if the inviter wanted it,
 * a Notification Bot message to them.
 */
export async function doAcceptInvite(
  services: ActionServices,
  realm: Realm,
  invite: Invite,
  form: { email: string; fullName: string; password: string },
): Promise<User> {
  const email = invite.multiuse ? form.email.trim() : invite.email;
  const db = services.db.kysely;
  if (invite.multiuse) {
    if (!isValidEmailAddress(email)) throw badRequest('Please enter a valid email address.');
    const problem = (await realmEmailValidator(db, realm))(email);
    if (problem) throw badRequest(problem);
  }
  await checkEmailAvailable(db, realm, email);
  const fullName = await checkFullName(db, realm, form.fullName);
  if (!isStrongEnoughPassword(services.config, form.password)) throw badRequest('The password is too weak.');
  const user = await doCreateUser(services, realm, {
    email,
    fullName,
    password: form.password,
    role: invite.invited_as,
    actingUser: null,
    initialStreams: {
      streamIds: JSON.parse(invite.stream_ids) as number[],
      includeDefaults: !!invite.include_realm_default_subscriptions,
    },
  });
  if (!invite.multiuse) await markEmailInvitesUsed(services.db.kysely, realm.id, email);
  for (const groupId of JSON.parse(invite.group_ids) as number[]) {
    const group = await accessUserGroupForRead(services.db.kysely, realm, groupId, true).catch(() => null);
    if (group) await doChangeGroupMembership(services, realm, user, group, { op: 'add_members', userIds: [user.id] });
  }
  await sendBotDirectMessage(
    services,
    realm,
    'welcome',
    user,
    `Hello, and welcome to ${realm.name}! :wave:\n\nThis is a direct message from me, Welcome Bot. Channels are where conversations happen; explore them from the left sidebar.`,
  );
  // null: the organization's default text; "": no custom message; otherwise this text.
  const custom = invite.welcome_message_custom_text ?? realmSettings(realm).welcome_message_custom_text;
  if (custom) await sendBotDirectMessage(services, realm, 'welcome', user, custom);
  if (invite.notify_referrer_on_join) {
    const referrer = await fetchUserById(services.db.kysely, realm.id, invite.referred_by);
    if (referrer?.is_active) {
      await sendBotDirectMessage(services, realm, 'notification', referrer, `@_**${user.full_name}|${user.id}** accepted your invitation to join ${realm.name}!`);
    }
  }
  return user;
}
