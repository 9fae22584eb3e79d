import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../services.js';
import { adminRequired } from '../../errors.js';
import type { User } from '../../db/tables.js';
import { fetchRealmChannelFolders } from '../../db/repos/channel_folders.js';
import { formatChannelFolder } from '../../lib/format/channel_folders.js';
import { MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH, MAX_CHANNEL_FOLDER_NAME_LENGTH } from '../../lib/format/settings.js';
import { isAdmin } from '../../lib/roles.js';
import {
  accessChannelFolder,
  checkChannelFolderName,
  checkReorderChannelFolders,
  checkUpdateChannelFolder,
  doCreateChannelFolder,
  doReorderChannelFolders,
  doUpdateChannelFolder,
} from '../../actions/channel_folders.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';

/** Zulip's require_realm_admin. */
const requireAdmin = (user: User): void => {
  if (!isAdmin(user)) throw adminRequired();
};

const name = () => p.str(z.string().max(MAX_CHANNEL_FOLDER_NAME_LENGTH));
const description = () => p.str(z.string().max(MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH));

/** Channel folders (Zulip's views/channel_folders.py): everyone reads them, administrators manage them. */
export function registerChannelFolderRoutes(app: FastifyInstance, services: Services): void {
  const db = services.db.kysely;

  endpoint(app, services, {
    method: 'POST',
    path: '/channel_folders/create',
    authorize: requireAdmin,
    params: { name: name(), description: description() },
    handler: async ({ realm, user, params }) => {
      await checkChannelFolderName(db, realm, params.name);
      const folder = await doCreateChannelFolder(services, realm, user, params.name, params.description);
      return { channel_folder_id: folder.id };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/channel_folders',
    params: { include_archived: p.bool().default(false) },
    handler: async ({ realm, params }) => ({
      channel_folders: (await fetchRealmChannelFolders(db, realm.id, params.include_archived)).map(formatChannelFolder),
    }),
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/channel_folders',
    authorize: requireAdmin,
    params: { order: p.intList() },
    handler: async ({ realm, params }) => {
      await checkReorderChannelFolders(services, realm, params.order);
      await doReorderChannelFolders(services, realm, params.order);
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/channel_folders/:channel_folder_id',
    authorize: requireAdmin,
    params: {
      channel_folder_id: p.int(),
      name: name().optional(),
      description: description().optional(),
      is_archived: p.bool().optional(),
    },
    handler: async ({ realm, user, params }) => {
      const folder = await accessChannelFolder(db, realm, params.channel_folder_id);
      const changes = await checkUpdateChannelFolder(services, realm, folder, { name: params.name, description: params.description, isArchived: params.is_archived });
      await doUpdateChannelFolder(services, realm, user, folder, changes);
    },
  });
}
