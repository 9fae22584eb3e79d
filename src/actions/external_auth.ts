import { JsonableError } from '../errors.js';
import { now } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { fetchPendingInvites, markEmailInvitesUsed } from '../db/repos/invites.js';
import { checkEmailAvailable, checkFullName, doCreateUser } from './users.js';
import { realmSettings } from '../lib/realm_settings.js';
import { ROLE_MEMBER } from '../lib/roles.js';
import type { ActionServices } from '../services.js';

const refused = (msg: string): JsonableError => new JsonableError(msg, 'AUTHENTICATION_FAILED', 401);

/**
 * Creates the account of someone a directory or identity provider just vouched for (Zulip's
 * get_or_build_user and social auth's new-user path): the organization's email rules apply,
 * and when it requires invitations a pending one for the address gives the role and channels
 * (otherwise a member with the default channels); the account has no Parley password.
 * `source` names the outside account in refusals ("directory account", "Okta account").
 */
export async function doCreateExternallyAuthenticatedUser(services: ActionServices, realm: Realm, email: string, name: string | null, source: string): Promise<User> {
  const db = services.db.kysely;
  if (realm.deactivated) throw new JsonableError('This organization has been deactivated', 'REALM_DEACTIVATED', 401);
  try {
    await checkEmailAvailable(db, realm, email);
  } catch (e) {
    if (e instanceof JsonableError) throw refused(`Your ${source} cannot join this organization: ${e.message}`);
    throw e;
  }
  const invite = (await fetchPendingInvites(db, realm.id, now())).find((i) => !i.multiuse && i.email.toLowerCase() === email.toLowerCase());
  if (!invite && realmSettings(realm).invite_required) {
    throw refused('You need an invitation to join this organization. Ask an administrator to invite you.');
  }
  if (name === null) throw refused(`Your ${source} has no name Parley can use. Ask your administrator.`);
  let fullName: string;
  try {
    fullName = await checkFullName(db, realm, name);
  } catch (e) {
    if (e instanceof JsonableError) throw refused(`Your ${source}'s name cannot be used: ${e.message}`);
    throw e;
  }
  const user = await doCreateUser(services, realm, {
    email,
    fullName,
    password: null,
    role: invite?.invited_as ?? ROLE_MEMBER,
    actingUser: null,
    initialStreams: invite
      ? { streamIds: JSON.parse(invite.stream_ids) as number[], includeDefaults: !!invite.include_realm_default_subscriptions }
      : { streamIds: [], includeDefaults: true },
  });
  if (invite) await markEmailInvitesUsed(db, realm.id, email);
  return user;
}
