import { now, transaction, type Tx } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { upsertStoredFile } from '../db/repos/stored_files.js';
import { insertAuditLog, updateUserRow } from '../db/repos/users.js';
import { badRequest } from '../errors.js';
import { userIdsWhoCanAccess } from '../lib/access/users.js';
import { AVATAR_FROM_GRAVATAR, AVATAR_FROM_USER, avatarUrl, uploadedAvatarHash } from '../lib/avatar.js';
import { MAX_AVATAR_FILE_SIZE_MIB } from '../lib/format/settings.js';
import { avatarUrlMedium } from '../lib/format/users.js';
import { realmSettings } from '../lib/realm_settings.js';
import { isAdmin } from '../lib/roles.js';
import { badImage, sniffImageType, storedPath } from '../lib/uploads.js';
import { realmUrl } from '../lib/urls.js';
import type { UploadedFile } from '../plugins/body.js';
import type { ActionServices } from '../services.js';

/**
 * The stored file names behind avatarUrl (lib/avatar.ts): one name per user, its content
 * replaced on each upload; avatar_version in the URL tells clients to fetch it again.
 */
export function avatarFileNames(user: Pick<User, 'realm_id' | 'id'>): { full: string; medium: string } {
  const h = uploadedAvatarHash(user);
  return { full: `${h}.png`, medium: `${h}-medium.png` };
}

/** Zulip's avatar_changes_disabled check (administrators are exempt). */
function checkAvatarChangesAllowed(realm: Realm, user: User): void {
  if (realmSettings(realm).avatar_changes_disabled && !isAdmin(user)) throw badRequest('Avatar changes are disabled in this organization.');
}

/** Zulip's set_avatar_backend checks: exactly one image within MAX_AVATAR_FILE_SIZE_MIB. Stored as sent (no resizing). */
export function checkSetAvatar(realm: Realm, user: User, files: readonly UploadedFile[]): { data: Buffer; contentType: string } {
  if (files.length !== 1) throw badRequest('You must upload exactly one avatar.');
  checkAvatarChangesAllowed(realm, user);
  return checkAvatarImage(files[0]!);
}

/** An uploaded avatar's size and image type (Zulip's upload_avatar_image checks). */
export function checkAvatarImage(file: UploadedFile): { data: Buffer; contentType: string } {
  if (file.data.length > MAX_AVATAR_FILE_SIZE_MIB * 1024 * 1024) {
    throw badRequest(`Uploaded file is larger than the allowed limit of ${MAX_AVATAR_FILE_SIZE_MIB} MiB`);
  }
  const contentType = sniffImageType(file.data);
  if (!contentType) throw badImage();
  return { data: file.data, contentType };
}

export function checkDeleteAvatar(realm: Realm, user: User): void {
  checkAvatarChangesAllowed(realm, user);
}

/**
 * Zulip's do_change_avatar_fields: new source, version + 1, an audit entry, and a realm_user
 * update with the new URLs to everyone who can see the user. Returns the new avatar_url.
 */
async function changeAvatarFields(services: ActionServices, tx: Tx, afterCommit: (cb: () => void) => void, realm: Realm, user: User, source: string): Promise<string> {
  const changed = { ...user, avatar_source: source, avatar_version: user.avatar_version + 1 };
  await updateUserRow(tx, user.id, { avatar_source: source, avatar_version: changed.avatar_version });
  await insertAuditLog(tx, {
    realm_id: realm.id,
    acting_user_id: user.id,
    modified_user_id: user.id,
    event_type: 'user_avatar_source_changed',
    event_time: now(),
    extra_data: JSON.stringify({ avatar_source: source }),
  });
  const base = realmUrl(services.config, realm);
  const url = avatarUrl(base, changed);
  const person = { user_id: user.id, avatar_source: source, avatar_url: url, avatar_url_medium: avatarUrlMedium(base, changed), avatar_version: changed.avatar_version };
  const recipients = await userIdsWhoCanAccess(tx, realm, user);
  afterCommit(() => services.events.send(realm.id, { type: 'realm_user', op: 'update', person }, recipients));
  return url;
}

export async function doSetAvatar(services: ActionServices, realm: Realm, user: User, image: { data: Buffer; contentType: string }): Promise<string> {
  const names = avatarFileNames(user);
  return transaction(services.db, async (tx, afterCommit) => {
    for (const name of [names.full, names.medium]) {
      await upsertStoredFile(tx, {
        path: storedPath.avatar(realm.id, name),
        realm_id: realm.id,
        content_type: image.contentType,
        size: image.data.length,
        data: image.data,
        date_created: now(),
      });
    }
    return changeAvatarFields(services, tx, afterCommit, realm, user, AVATAR_FROM_USER);
  });
}

/** Back to the external avatar provider (Gravatar). The uploaded image stays until the next upload replaces it. */
export async function doDeleteAvatar(services: ActionServices, realm: Realm, user: User): Promise<string> {
  return transaction(services.db, (tx, afterCommit) => changeAvatarFields(services, tx, afterCommit, realm, user, AVATAR_FROM_GRAVATAR));
}
