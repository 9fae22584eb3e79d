import { now, transaction, type Tx } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import {
  channelFolderHasActiveChannels,
  channelFolderNameInUse,
  fetchChannelFolder,
  fetchRealmChannelFolders,
  insertChannelFolder,
  setChannelFolderOrder,
  updateChannelFolderRow,
  type ChannelFolderRow,
} from '../db/repos/channel_folders.js';
import { fetchActiveUserIds, insertAuditLog } from '../db/repos/users.js';
import { badRequest } from '../errors.js';
import { formatChannelFolder } from '../lib/format/channel_folders.js';
import { renderStreamDescription } from '../lib/format/streams.js';
import { firstUnprintablePosition } from '../lib/topics.js';
import { realmUrl } from '../lib/urls.js';
import type { Services } from '../services.js';
import type { ZulipEvent } from '../events/bus.js';

/** Zulip's get_channel_folder_by_id: a folder of the caller's organization, archived or not. */
export async function accessChannelFolder(db: Tx, realm: Pick<Realm, 'id'>, id: number): Promise<ChannelFolderRow> {
  const folder = await fetchChannelFolder(db, realm.id, id);
  if (!folder) throw badRequest('Invalid channel folder ID');
  return folder;
}

/** Zulip's check_channel_folder_name: not blank, printable, and unused in the organization (ignoring case). */
export async function checkChannelFolderName(db: Tx, realm: Pick<Realm, 'id'>, name: string): Promise<void> {
  if (name.trim() === '') throw badRequest("Channel folder name can't be empty.");
  const pos = firstUnprintablePosition(name);
  if (pos !== null) throw badRequest(`Invalid character in channel folder name, at position ${pos}.`);
  if (await channelFolderNameInUse(db, realm.id, name)) throw badRequest(`Channel folder '${name}' already exists`);
}

/** Every channel-folder event goes to every active user of the organization, as in Zulip. */
async function notifyAll(services: Services, tx: Tx, afterCommit: (cb: () => void) => void, realm: Realm, events: ZulipEvent[]): Promise<void> {
  const users = await fetchActiveUserIds(tx, realm.id);
  afterCommit(() => {
    for (const event of events) services.events.send(realm.id, event, users);
  });
}

function audit(tx: Tx, realm: Realm, actor: User, eventType: string, extra: Record<string, unknown>): Promise<void> {
  return insertAuditLog(tx, {
    realm_id: realm.id,
    acting_user_id: actor.id,
    modified_user_id: null,
    event_type: eventType,
    event_time: now(),
    extra_data: JSON.stringify(extra),
  });
}

/** Preconditions: checkChannelFolderName passed; description within the length limit. */
export async function doCreateChannelFolder(services: Services, realm: Realm, actor: User, name: string, description: string): Promise<ChannelFolderRow> {
  return transaction(services.db, async (tx, afterCommit) => {
    const folder = await insertChannelFolder(tx, {
      realm_id: realm.id,
      name,
      name_lc: name.toLowerCase(),
      description,
      rendered_description: renderStreamDescription(description, realmUrl(services.config, realm)),
      creator_id: actor.id,
      date_created: now(),
    });
    await audit(tx, realm, actor, 'channel_folder_created', { channel_folder_id: folder.id });
    await notifyAll(services, tx, afterCommit, realm, [{ type: 'channel_folder', op: 'add', channel_folder: formatChannelFolder(folder) }]);
    return folder;
  });
}

export interface ChannelFolderChanges {
  name?: string;
  description?: string;
  isArchived?: boolean;
}

/**
 * Zulip's update_channel_folder: each given value that differs is changed, with its own update
 * event (name, then description, then archival). Archiving needs the folder to hold no active channel.
 */
export async function checkUpdateChannelFolder(services: Services, realm: Realm, folder: ChannelFolderRow, requested: ChannelFolderChanges): Promise<ChannelFolderChanges> {
  const db = services.db.kysely;
  const changes: ChannelFolderChanges = {};
  if (requested.name !== undefined && requested.name !== folder.name) {
    await checkChannelFolderName(db, realm, requested.name);
    changes.name = requested.name;
  }
  if (requested.description !== undefined && requested.description !== folder.description) changes.description = requested.description;
  if (requested.isArchived !== undefined && requested.isArchived !== !!folder.is_archived) {
    if (requested.isArchived && (await channelFolderHasActiveChannels(db, folder.id))) {
      throw badRequest('You need to remove all the channels from this folder to archive it.');
    }
    changes.isArchived = requested.isArchived;
  }
  return changes;
}

export async function doUpdateChannelFolder(services: Services, realm: Realm, actor: User, folder: ChannelFolderRow, changes: ChannelFolderChanges): Promise<void> {
  if (Object.keys(changes).length === 0) return;
  await transaction(services.db, async (tx, afterCommit) => {
    const events: ZulipEvent[] = [];
    const update = (data: Record<string, unknown>) => events.push({ type: 'channel_folder', op: 'update', channel_folder_id: folder.id, data });
    if (changes.name !== undefined) {
      await updateChannelFolderRow(tx, folder.id, { name: changes.name, name_lc: changes.name.toLowerCase() });
      await audit(tx, realm, actor, 'channel_folder_name_changed', { channel_folder_id: folder.id, old_value: folder.name, new_value: changes.name });
      update({ name: changes.name });
    }
    if (changes.description !== undefined) {
      const rendered = renderStreamDescription(changes.description, realmUrl(services.config, realm));
      await updateChannelFolderRow(tx, folder.id, { description: changes.description, rendered_description: rendered });
      await audit(tx, realm, actor, 'channel_folder_description_changed', {
        channel_folder_id: folder.id,
        old_value: folder.description,
        new_value: changes.description,
      });
      update({ description: changes.description, rendered_description: rendered });
    }
    if (changes.isArchived !== undefined) {
      await updateChannelFolderRow(tx, folder.id, { is_archived: changes.isArchived ? 1 : 0 });
      await audit(tx, realm, actor, changes.isArchived ? 'channel_folder_archived' : 'channel_folder_unarchived', { channel_folder_id: folder.id });
      update({ is_archived: changes.isArchived });
    }
    await notifyAll(services, tx, afterCommit, realm, events);
  });
}

/** Zulip's try_reorder_realm_channel_folders: `order` must list every folder of the organization, archived ones too, once. */
export async function checkReorderChannelFolders(services: Services, realm: Realm, order: readonly number[]): Promise<void> {
  const ids = new Set((await fetchRealmChannelFolders(services.db.kysely, realm.id, true)).map((f) => f.id));
  const given = new Set(order);
  if (given.size !== order.length || given.size !== ids.size || order.some((id) => !ids.has(id))) throw badRequest('Invalid order mapping.');
}

export async function doReorderChannelFolders(services: Services, realm: Realm, order: readonly number[]): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    for (const [i, id] of order.entries()) await setChannelFolderOrder(tx, id, i);
    await notifyAll(services, tx, afterCommit, realm, [{ type: 'channel_folder', op: 'reorder', order: [...order] }]);
  });
}
