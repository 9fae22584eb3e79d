import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';
import { badRequest, unauthorized } from '../../errors.js';
import { endpoint, requestRealm } from '../endpoint.js';
import { p } from '../params.js';
import {
  accessRealmExport,
  checkCreateRealmExport,
  doCreateRealmExport,
  doDeleteRealmExport,
  exportStoredPath,
  fetchExportConsents,
  fetchRealmExportsFormatted,
} from '../../actions/realm_export.js';
import { EXPORT_TYPES, type ExportType } from '../../lib/zulip_export/export.js';
import { fetchStoredFile } from '../../db/repos/stored_files.js';
import { isAdmin } from '../../lib/roles.js';
import { authenticateFileRequest } from '../features/file_auth.js';
import { sendFileNotFound, sendStoredFile } from '../features/files.js';
import { requireAdministrator } from './params.js';

/** export_type: a plain string since Zulip 12.0 (feature level 449); a JSON-quoted one is taken too. */
const exportType = p.custom((raw, name): ExportType => {
  let value = raw;
  if (raw.startsWith('"')) {
    try {
      value = JSON.parse(raw) as string;
    } catch {
      value = raw;
    }
  }
  if (!(EXPORT_TYPES as readonly string[]).includes(value)) throw badRequest(`Invalid ${name}`);
  return value as ExportType;
});

/** Data exports (Zulip's zerver/views/realm_export.py), and the download of a finished one. */
export function registerRealmExportRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'POST',
    path: '/export/realm',
    authorize: requireAdministrator,
    params: { export_type: exportType.default('public') },
    handler: async ({ realm, user, params }) => {
      await checkCreateRealmExport(services, realm, user, params.export_type);
      const row = await doCreateRealmExport(services, realm, user, params.export_type);
      return { id: row.id };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/export/realm',
    authorize: requireAdministrator,
    params: {},
    handler: async ({ realm }) => ({ exports: await fetchRealmExportsFormatted(services, realm) }),
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/export/realm/:export_id',
    authorize: requireAdministrator,
    params: { export_id: p.int() },
    handler: async ({ realm, params }) => {
      const row = await accessRealmExport(services, realm, params.export_id);
      await doDeleteRealmExport(services, realm, row);
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/export/realm/consents',
    authorize: requireAdministrator,
    params: {},
    handler: async ({ realm }) => ({ export_consents: await fetchExportConsents(services, realm) }),
  });

  // The export_url of a finished export. Zulip serves it to anyone with the (unguessable) URL;
  // here it also takes an administrator of the organization (session, Basic or ?api_key=).
  app.get('/user_avatars/exports/:realm_id/:random/:file_name', async (req: FastifyRequest<{ Params: { realm_id: string; random: string; file_name: string } }>, reply) => {
    const realm = await requestRealm(services, req);
    const caller = await authenticateFileRequest(services, realm, req);
    if (!caller) throw unauthorized('Not logged in: API authentication or user session required');
    const { realm_id, random, file_name } = req.params;
    if (!isAdmin(caller) || String(realm.id) !== realm_id) return sendFileNotFound(reply);
    const file = await fetchStoredFile(services.db.kysely, exportStoredPath(`${realm_id}/${random}/${file_name}`));
    if (!file) return sendFileNotFound(reply);
    return sendStoredFile(reply, file, { fileName: file_name, cache: 'private', download: true });
  });
}
