import { now, transaction, type Tx } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { deleteMutedUser, fetchMutedUsers, fetchUnreadMessageIdsFrom, insertMutedUser, isUserMuted } from '../db/repos/muted_users.js';
import { badRequest } from '../errors.js';
import { accessUserById } from '../lib/access/users.js';
import type { ActionServices } from '../services.js';
import { doUpdateMessageFlags } from './messages.js';

/** The `muted_users` list: register's key and the event's payload. */
export async function mutedUsersList(db: Tx, userId: number): Promise<{ id: number; timestamp: number }[]> {
  return (await fetchMutedUsers(db, userId)).map((r) => ({ id: r.muted_user_id, timestamp: Number(r.date_muted) }));
}

/** Zulip's mute_user view: not oneself; any user the caller may access, bots and deactivated users included. */
export async function checkMuteUser(services: ActionServices, realm: Realm, user: User, mutedUserId: number): Promise<User> {
  if (mutedUserId === user.id) throw badRequest('Cannot mute self');
  const target = await accessUserById(services.db.kysely, realm, user, mutedUserId, { allowBots: true, allowDeactivated: true, forAdmin: false });
  if (await isUserMuted(services.db.kysely, user.id, target.id)) throw badRequest('User already muted');
  return target;
}

/**
 * Mutes and sends the new list to the user's clients; then, as Zulip's deferred worker does,
 * marks the muted user's messages read for them (with the usual update_message_flags event).
 */
export async function doMuteUser(services: ActionServices, realm: Realm, user: User, target: User): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    if (!(await insertMutedUser(tx, user.id, target.id, now()))) throw badRequest('User already muted');
    const list = await mutedUsersList(tx, user.id);
    afterCommit(() => services.events.send(realm.id, { type: 'muted_users', muted_users: list }, [user.id]));
  });
  const unread = await fetchUnreadMessageIdsFrom(services.db.kysely, user.id, target.id);
  if (unread.length) {
    await doUpdateMessageFlags(services, realm, user, { op: 'add', flag: 'read', messages: unread, historical: [], ignoredChannels: null });
  }
}

export async function checkUnmuteUser(services: ActionServices, realm: Realm, user: User, mutedUserId: number): Promise<User> {
  const target = await accessUserById(services.db.kysely, realm, user, mutedUserId, { allowBots: true, allowDeactivated: true, forAdmin: false });
  if (!(await isUserMuted(services.db.kysely, user.id, target.id))) throw badRequest('User is not muted');
  return target;
}

export async function doUnmuteUser(services: ActionServices, realm: Realm, user: User, target: User): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await deleteMutedUser(tx, user.id, target.id);
    const list = await mutedUsersList(tx, user.id);
    afterCommit(() => services.events.send(realm.id, { type: 'muted_users', muted_users: list }, [user.id]));
  });
}
