import { randomBytes } from 'node:crypto';
import { now, transaction, type Tx } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import {
  claimPendingRealmExport,
  countRealmExportsSince,
  fetchConsentRows,
  fetchHumanAdminIds,
  fetchRealmExports,
  insertRealmExport,
  updateRealmExport,
  type RealmExportRow,
} from '../db/repos/realm_exports.js';
import { fetchRealmById } from '../db/repos/realms.js';
import { deleteStoredFiles, insertStoredFile } from '../db/repos/stored_files.js';
import { badRequest, ownerRequired } from '../errors.js';
import { isOwner } from '../lib/roles.js';
import { realmSettings } from '../lib/realm_settings.js';
import { userSettings } from '../lib/user_settings.js';
import { realmUrl } from '../lib/urls.js';
import { zulipExportTarball } from '../lib/zulip_export/archive.js';
import { buildZulipExport, type ExportType } from '../lib/zulip_export/export.js';
import type { ActionServices } from '../services.js';

/** Zulip's limit on exports requested through the API: 5 in 7 days. */
const EXPORT_LIMIT = 5;
const EXPORT_LIMIT_WINDOW = 7 * 24 * 60 * 60;
/** How long a process holds an export it writes before another may take it over. */
const EXPORT_LEASE_SECONDS = 30 * 60;

/** The stored_files key of an export's tarball; also its URL path after /user_avatars/. */
export const exportStoredPath = (relative: string): string => `exports/${relative}`;

/** Zulip's RealmExport dict (get_realm_exports_serialized). */
export function formatRealmExport(config: ActionServices['config'], realm: Realm, row: RealmExportRow): Record<string, unknown> {
  const url = row.export_path && row.date_deleted === null && row.date_succeeded !== null ? `${realmUrl(config, realm)}/user_avatars/exports/${row.export_path}` : null;
  return {
    id: row.id,
    export_time: row.date_requested,
    acting_user_id: row.acting_user_id,
    export_url: url,
    deleted_timestamp: row.date_deleted,
    failed_timestamp: row.date_failed,
    pending: row.date_succeeded === null && row.date_failed === null && row.date_deleted === null,
    export_type: row.export_type,
  };
}

/** Zulip's notify_realm_export: every administrator gets the whole list. */
async function notifyRealmExport(services: ActionServices, tx: Tx, realm: Realm, afterCommit: (cb: () => void) => void): Promise<void> {
  const exports = (await fetchRealmExports(tx, realm.id)).map((r) => formatRealmExport(services.config, realm, r));
  const admins = await fetchHumanAdminIds(tx, realm.id);
  afterCommit(() => services.events.send(realm.id, { type: 'realm_export', exports }, admins));
}

/**
 * Zulip's export_realm view checks. Administrators may ask for a public export; the exports
 * with private data are for owners, and the one without consent only where the organization
 * has owner_full_content_access.
 */
export async function checkCreateRealmExport(services: ActionServices, realm: Realm, user: User, exportType: ExportType): Promise<void> {
  if (exportType !== 'public' && !isOwner(user)) throw ownerRequired();
  if (exportType === 'full_without_consent' && !realmSettings(realm).owner_full_content_access) {
    throw badRequest('Full export without member consent is not allowed in this organization.');
  }
  if ((await countRealmExportsSince(services.db.kysely, realm.id, now() - EXPORT_LIMIT_WINDOW)) >= EXPORT_LIMIT) throw badRequest('Exceeded rate limit.');
}

/** Queues an export (the worker writes it) and tells the administrators. */
export async function doCreateRealmExport(services: ActionServices, realm: Realm, actingUser: User | null, exportType: ExportType): Promise<RealmExportRow> {
  const row = await transaction(services.db, async (tx, afterCommit) => {
    const inserted = await insertRealmExport(tx, { realm_id: realm.id, acting_user_id: actingUser?.id ?? null, export_type: exportType, date_requested: Date.now() / 1000 });
    await notifyRealmExport(services, tx, realm, afterCommit);
    return inserted;
  });
  services.realmExports?.wake();
  return row;
}

export async function accessRealmExport(services: ActionServices, realm: Realm, id: number): Promise<RealmExportRow> {
  const row = (await fetchRealmExports(services.db.kysely, realm.id)).find((r) => r.id === id);
  if (!row || row.date_deleted !== null) throw badRequest('Invalid data export ID');
  if (row.date_succeeded === null && row.date_failed === null) throw badRequest('Export still in progress');
  return row;
}

/** Zulip's do_delete_realm_export: the tarball goes, the record stays with its deletion time. */
export async function doDeleteRealmExport(services: ActionServices, realm: Realm, row: RealmExportRow): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    if (row.export_path) await deleteStoredFiles(tx, [exportStoredPath(row.export_path)]);
    await updateRealmExport(tx, row.id, { date_deleted: Date.now() / 1000 });
    await notifyRealmExport(services, tx, realm, afterCommit);
  });
}

export async function fetchRealmExportsFormatted(services: ActionServices, realm: Realm): Promise<Record<string, unknown>[]> {
  return (await fetchRealmExports(services.db.kysely, realm.id)).map((r) => formatRealmExport(services.config, realm, r));
}

/** GET /export/realm/consents: every active person, whether they consented, and their email visibility. */
export async function fetchExportConsents(services: ActionServices, realm: Realm): Promise<{ user_id: number; consented: boolean; email_address_visibility: number }[]> {
  return (await fetchConsentRows(services.db.kysely, realm.id)).map((u) => {
    const s = userSettings(u);
    return { user_id: u.id, consented: s.allow_private_data_export, email_address_visibility: s.email_address_visibility };
  });
}

/** Zulip's realm_export_consent event, to the administrators, when a user's consent changes. */
export async function notifyRealmExportConsent(services: ActionServices, tx: Tx, realm: Realm, userId: number, consented: boolean, afterCommit: (cb: () => void) => void): Promise<void> {
  const admins = await fetchHumanAdminIds(tx, realm.id);
  afterCommit(() => services.events.send(realm.id, { type: 'realm_export_consent', user_id: userId, consented }, admins));
}

/** The tarball's name, as Zulip's: zulip-export-<string_id>-<time>-<random>.tar.gz. */
function tarballName(realm: Realm): { top: string; file: string } {
  const stamp = new Date().toISOString().replace(/[-:T]/g, '-').slice(0, 19);
  const top = `zulip-export-${realm.string_id || 'realm'}-${stamp}-${randomBytes(4).toString('hex')}`;
  return { top, file: `${top}.tar.gz` };
}

/**
 * Writes one export to a tarball in stored_files (Zulip's export_realm_wrapper) and returns its
 * path after /user_avatars/. Used by the worker and by `parley export`.
 */
export async function writeRealmExport(services: ActionServices, realm: Realm, exportType: ExportType): Promise<{ path: string; data: Buffer }> {
  const exported = await buildZulipExport(services.db.kysely, realm.id, exportType);
  const { top, file } = tarballName(realm);
  const data = zulipExportTarball(exported, top, now());
  return { path: `exports/${realm.id}/${randomBytes(18).toString('base64url')}/${file}`, data };
}

/**
 * Takes the oldest pending export, writes it, and records the outcome (the worker's one step).
 * Returns false when there was nothing to do.
 */
export async function doRunNextRealmExport(services: ActionServices): Promise<boolean> {
  const db = services.db.kysely;
  const row = await claimPendingRealmExport(db, now(), now() + EXPORT_LEASE_SECONDS);
  if (!row) return false;
  const realm = await fetchRealmById(db, row.realm_id);
  if (!realm) {
    await updateRealmExport(db, row.id, { date_failed: Date.now() / 1000, failure_message: 'organization gone', claimed_until: null });
    return true;
  }
  await updateRealmExport(db, row.id, { date_started: Date.now() / 1000 });
  try {
    const written = await writeRealmExport(services, realm, row.export_type as ExportType);
    const relative = written.path.slice('exports/'.length);
    await transaction(services.db, async (tx, afterCommit) => {
      await insertStoredFile(tx, { path: written.path, realm_id: realm.id, content_type: 'application/gzip', size: written.data.length, data: written.data, date_created: now() });
      await updateRealmExport(tx, row.id, { date_succeeded: Date.now() / 1000, export_path: relative, claimed_until: null });
      await notifyRealmExport(services, tx, realm, afterCommit);
    });
  } catch (e) {
    services.log.error({ err: e, export_id: row.id }, 'Data export failed');
    await transaction(services.db, async (tx, afterCommit) => {
      await updateRealmExport(tx, row.id, { date_failed: Date.now() / 1000, failure_message: e instanceof Error ? e.message : String(e), claimed_until: null });
      await notifyRealmExport(services, tx, realm, afterCommit);
    });
  }
  return true;
}
