import { now, transaction } from '../db/index.js';
import type { User } from '../db/tables.js';
import { deletePushDevice, fetchPushDevice, insertPushDevice, type PushDeviceRow } from '../db/repos/push_devices.js';
import { badRequest } from '../errors.js';
import type { PushDeviceKind } from '../lib/push/sender.js';
import type { ActionServices } from '../services.js';

/** Zulip's validate_token: a bounded, non-empty token; APNs tokens must be hexadecimal. */
export function checkPushToken(token: string, kind: PushDeviceKind): void {
  if (token === '' || token.length > 4096) throw badRequest('Empty or invalid length token');
  // Python's bytes.fromhex: pairs of hex digits, whitespace allowed between pairs.
  if (kind === 'apns' && !/^\s*(?:[0-9A-Fa-f]{2}\s*)*$/.test(token)) throw badRequest('Invalid APNS token');
}

/** Registers a device; the same token again is a no-op. Precondition: checkPushToken passed. */
export async function doAddPushDeviceToken(services: ActionServices, user: User, kind: PushDeviceKind, token: string, appId: string | null): Promise<void> {
  await transaction(services.db, async (tx) => {
    await insertPushDevice(tx, { user_id: user.id, kind, token, app_id: appId, date_created: now() });
  });
}

export async function accessPushDevice(services: ActionServices, user: User, kind: PushDeviceKind, token: string): Promise<PushDeviceRow> {
  const row = await fetchPushDevice(services.db.kysely, user.id, kind, token);
  if (!row) throw badRequest('Token does not exist');
  return row;
}

export async function doRemovePushDeviceToken(services: ActionServices, device: PushDeviceRow): Promise<void> {
  await transaction(services.db, (tx) => deletePushDevice(tx, device.id));
}
