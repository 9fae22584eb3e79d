import { randomBytes } from 'node:crypto';
import { now, transaction, type Tx } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import {
  deactivateRealmEmojiRow,
  fetchActiveRealmEmojiByName,
  fetchRealmEmoji,
  insertRealmEmoji,
  type RealmEmojiRow,
} from '../db/repos/realm_emoji.js';
import { insertStoredFile } from '../db/repos/stored_files.js';
import { fetchActiveUserIds } from '../db/repos/users.js';
import { JsonableError, badRequest, insufficientPermission } from '../errors.js';
import { checkValidEmojiName } from '../lib/emoji.js';
import { formatRealmEmoji, formatRealmEmojiMap } from '../lib/format/realm_emoji.js';
import { loadUserGroupMembership, userHasGroupPermission } from '../lib/group_settings.js';
import { emojiNameToCode } from '../lib/markdown/index.js';
import { REALM_GROUP_SETTING_CONFIG, realmSettings } from '../lib/realm_settings.js';
import { isAdmin } from '../lib/roles.js';
import { IMAGE_EXTENSIONS, MAX_EMOJI_FILE_SIZE_MIB, badImage, sniffImageType, storedPath } from '../lib/uploads.js';
import type { UploadedFile } from '../plugins/body.js';
import type { ActionServices } from '../services.js';

export interface PreparedRealmEmoji {
  name: string;
  data: Buffer;
  contentType: string;
}

/**
 * Zulip's upload_emoji view and check_add_realm_emoji: the name (spaces become underscores)
 * must be valid and unused by an active emoji, the caller needs can_add_custom_emoji_group,
 * only administrators may override a built-in emoji name, and exactly one image of at most
 * MAX_EMOJI_FILE_SIZE_MIB is uploaded. The image is stored as sent (no resizing).
 */
export async function checkAddRealmEmoji(services: ActionServices, realm: Realm, user: User, rawName: string, files: readonly UploadedFile[]): Promise<PreparedRealmEmoji> {
  const db = services.db.kysely;
  const name = rawName.trim().replace(/ /g, '_');
  checkValidEmojiName(name);
  const m = await loadUserGroupMembership(db, user);
  const setting = REALM_GROUP_SETTING_CONFIG.can_add_custom_emoji_group;
  if (!userHasGroupPermission(m, realmSettings(realm).can_add_custom_emoji_group, user, setting)) throw insufficientPermission();
  if (await fetchActiveRealmEmojiByName(db, realm.id, name)) throw badRequest('A custom emoji with this name already exists.');
  if (files.length !== 1) throw badRequest('You must upload exactly one file.');
  if (emojiNameToCode(name) !== undefined && !isAdmin(user)) throw badRequest('Only administrators can override built-in emoji.');
  const file = files[0]!;
  if (file.data.length > MAX_EMOJI_FILE_SIZE_MIB * 1024 * 1024) {
    throw badRequest(`Uploaded file is larger than the allowed limit of ${MAX_EMOJI_FILE_SIZE_MIB} MiB`);
  }
  const contentType = sniffImageType(file.data);
  if (!contentType) throw badImage();
  return { name, data: file.data, contentType };
}

/** Every active user: new emoji as `add` for clients with individual_emoji_changes, the whole set for others. */
async function notifyRealmEmoji(
  services: ActionServices,
  tx: Tx,
  afterCommit: (cb: () => void) => void,
  realm: Realm,
  modern: Record<string, unknown>,
): Promise<void> {
  const [all, users] = await Promise.all([fetchRealmEmoji(tx, realm.id), fetchActiveUserIds(tx, realm.id)]);
  const legacy = { type: 'realm_emoji', op: 'update', realm_emoji: formatRealmEmojiMap(all) };
  afterCommit(() => {
    services.events.send(realm.id, { type: 'realm_emoji', ...modern }, users, undefined, { capability: 'individual_emoji_changes', value: true });
    services.events.send(realm.id, legacy, users, undefined, { capability: 'individual_emoji_changes', value: false });
  });
}

export async function doAddRealmEmoji(services: ActionServices, realm: Realm, author: User, e: PreparedRealmEmoji): Promise<RealmEmojiRow> {
  // Not derived from the ID, so custom emoji URLs cannot be enumerated.
  const fileName = `${randomBytes(8).toString('hex')}${IMAGE_EXTENSIONS[e.contentType]}`;
  return transaction(services.db, async (tx, afterCommit) => {
    const row = await insertRealmEmoji(tx, { realm_id: realm.id, name: e.name, file_name: fileName, author_id: author.id });
    await insertStoredFile(tx, {
      path: storedPath.emoji(realm.id, fileName),
      realm_id: realm.id,
      content_type: e.contentType,
      size: e.data.length,
      data: e.data,
      date_created: now(),
    });
    await notifyRealmEmoji(services, tx, afterCommit, realm, { op: 'add', emoji: formatRealmEmoji(row) });
    return row;
  });
}

/**
 * Zulip's delete_emoji view: 404 (code BAD_REQUEST) for no active emoji of that name; only its
 * author or an administrator may deactivate it. Deactivated emoji keep their image: old
 * messages and reactions still show it.
 */
export async function checkRemoveRealmEmoji(services: ActionServices, realm: Realm, user: User, name: string): Promise<RealmEmojiRow> {
  const emoji = await fetchActiveRealmEmojiByName(services.db.kysely, realm.id, name);
  if (!emoji) throw new JsonableError(`Emoji '${name}' does not exist`, 'BAD_REQUEST', 404);
  if (!isAdmin(user) && emoji.author_id !== user.id) throw badRequest('Must be an organization administrator or emoji author');
  return emoji;
}

export async function doRemoveRealmEmoji(services: ActionServices, realm: Realm, emoji: RealmEmojiRow): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await deactivateRealmEmojiRow(tx, emoji.id);
    await notifyRealmEmoji(services, tx, afterCommit, realm, { op: 'update_one', emoji_id: String(emoji.id), data: { deactivated: true } });
  });
}
