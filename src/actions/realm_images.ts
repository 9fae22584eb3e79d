import { now, transaction } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { updateRealmRow } from '../db/repos/realms.js';
import { fetchRealmForUpdate } from '../db/repos/settings.js';
import { insertAuditLog, fetchActiveUserIds } from '../db/repos/users.js';
import { upsertStoredFile } from '../db/repos/stored_files.js';
import { badRequest } from '../errors.js';
import { MAX_ICON_FILE_SIZE_MIB, MAX_LOGO_FILE_SIZE_MIB } from '../lib/format/settings.js';
import { badImage, sniffImageType, storedPath } from '../lib/uploads.js';
import { REALM_IMAGE_FILES, realmIconUrl, realmLogoUrl } from '../lib/urls.js';
import type { UploadedFile } from '../plugins/body.js';
import type { ActionServices } from '../services.js';

export type RealmImage = 'icon' | 'logo' | 'night_logo';

export interface CheckedImage {
  data: Buffer;
  contentType: string;
}

/**
 * Zulip's upload_icon / upload_logo checks: exactly one file, within the size limit, and an
 * image we accept (recognized by its first bytes). Stored as sent, as avatars are.
 */
export function checkRealmImage(kind: 'icon' | 'logo', files: readonly UploadedFile[]): CheckedImage {
  if (files.length !== 1) throw badRequest(`You must upload exactly one ${kind}.`);
  const file = files[0]!;
  const limit = kind === 'icon' ? MAX_ICON_FILE_SIZE_MIB : MAX_LOGO_FILE_SIZE_MIB;
  if (file.data.length > limit * 1024 * 1024) throw badRequest(`Uploaded file is larger than the allowed limit of ${limit} MiB`);
  const contentType = sniffImageType(file.data);
  if (!contentType) throw badImage();
  return { data: file.data, contentType };
}

/**
 * Zulip's do_change_icon_source and do_change_logo_source: the new source ('U' uploaded, or
 * the default: 'G' for the icon, 'D' for logos), the version + 1 so that clients fetch the new
 * URL, an audit entry, and a realm update_dict event with the URL to every active user.
 * With an image, it is stored first, replacing the previous upload. Returns the new URL.
 */
export async function doChangeRealmImage(services: ActionServices, realm: Realm, actor: User, which: RealmImage, image: CheckedImage | null): Promise<string> {
  const source = image ? 'U' : which === 'icon' ? 'G' : 'D';
  return transaction(services.db, async (tx, afterCommit) => {
    if (image) {
      await upsertStoredFile(tx, {
        path: storedPath.avatar(realm.id, REALM_IMAGE_FILES[which]),
        realm_id: realm.id,
        content_type: image.contentType,
        size: image.data.length,
        data: image.data,
        date_created: now(),
      });
    }
    const row = await fetchRealmForUpdate(tx, services.db.dialect, realm.id);
    const after = { ...row };
    let data: Record<string, string>;
    if (which === 'icon') {
      after.icon_source = source;
      after.icon_version = row.icon_version + 1;
      await updateRealmRow(tx, realm.id, { icon_source: source, icon_version: after.icon_version });
      data = { icon_source: source, icon_url: realmIconUrl(services.config, after) };
    } else if (which === 'logo') {
      after.logo_source = source;
      after.logo_version = row.logo_version + 1;
      await updateRealmRow(tx, realm.id, { logo_source: source, logo_version: after.logo_version });
      data = { logo_source: source, logo_url: realmLogoUrl(services.config, after, false) };
    } else {
      after.night_logo_source = source;
      after.night_logo_version = row.night_logo_version + 1;
      await updateRealmRow(tx, realm.id, { night_logo_source: source, night_logo_version: after.night_logo_version });
      data = { night_logo_source: source, night_logo_url: realmLogoUrl(services.config, after, true) };
    }
    await insertAuditLog(tx, {
      realm_id: realm.id,
      acting_user_id: actor.id,
      modified_user_id: null,
      event_type: which === 'icon' ? 'realm_icon_source_changed' : 'realm_logo_changed',
      event_time: now(),
      extra_data: JSON.stringify(which === 'icon' ? { icon_source: source, icon_version: after.icon_version } : { night: which === 'night_logo', source }),
    });
    const recipients = await fetchActiveUserIds(tx, realm.id);
    afterCommit(() => services.events.send(realm.id, { type: 'realm', op: 'update_dict', property: which, data }, recipients));
    return which === 'icon' ? data.icon_url! : which === 'logo' ? data.logo_url! : data.night_logo_url!;
  });
}
