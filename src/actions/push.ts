import { now, transaction } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { deletePushDevice, fetchPushDevice, fetchPushDevicesForUsers, insertPushDevice, type PushDeviceRow } from '../db/repos/push_devices.js';
import { deleteClientDevice, fetchClientDevice, insertClientDevice, type ClientDeviceRow } from '../db/repos/client_devices.js';
import { JsonableError, badRequest } from '../errors.js';
import type { PushDevice, PushDeviceKind } from '../lib/push/sender.js';
import { pushSender } from '../lib/push/notify.js';
import { realmUrl } from '../lib/urls.js';
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

/** A device of the user's, by ID, or Zulip's error for any other ID. */
export async function accessClientDevice(services: ActionServices, user: User, deviceId: number): Promise<ClientDeviceRow> {
  const row = await fetchClientDevice(services.db.kysely, user.id, deviceId);
  if (!row) throw badRequest('Invalid device ID');
  return row;
}

/** Zulip's do_register_client_device: a new device record, announced to the user's clients. */
export async function doRegisterClientDevice(services: ActionServices, realm: Realm, user: User): Promise<ClientDeviceRow> {
  return transaction(services.db, async (tx, afterCommit) => {
    const device = await insertClientDevice(tx, user.id, now());
    afterCommit(() => services.events.send(realm.id, { type: 'device', op: 'add', device_id: device.id }, [user.id]));
    return device;
  });
}

export async function doRemoveClientDevice(services: ActionServices, realm: Realm, user: User, device: ClientDeviceRow): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await deleteClientDevice(tx, device.id);
    afterCommit(() => services.events.send(realm.id, { type: 'device', op: 'remove', device_id: device.id }, [user.id]));
  });
}

/**
 * Zulip's send_test_push_notification_api: a test notification to the device with this
 * token, or to every device of the user's; an unknown token is INVALID_PUSH_DEVICE_TOKEN.
 */
export async function checkSendTestPushNotification(services: ActionServices, user: User, token: string | undefined): Promise<PushDevice[]> {
  const rows = await fetchPushDevicesForUsers(services.db.kysely, [user.id]);
  const chosen = token === undefined ? rows : rows.filter((r) => r.token === token);
  if (token !== undefined && chosen.length === 0) throw new JsonableError('Device not recognized', 'INVALID_PUSH_DEVICE_TOKEN', 400);
  return chosen.map((r) => ({ kind: r.kind as PushDeviceKind, token: r.token, appId: r.app_id }));
}

export async function doSendTestPushNotification(services: ActionServices, realm: Realm, user: User, devices: PushDevice[]): Promise<void> {
  if (devices.length === 0) return;
  const payload = {
    server: new URL(services.config.externalUrl).host,
    realm_id: realm.id,
    realm_name: realm.name,
    realm_url: realmUrl(services.config, realm),
    realm_uri: realmUrl(services.config, realm),
    user_id: user.id,
    event: 'test',
    time: now(),
  };
  await pushSender(services).send({ userId: user.id, devices, payload });
}
