import { now, transaction } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { deletePushDevice, fetchPushDevice, fetchPushDevicesForUsers, insertPushDevice, type PushDeviceRow } from '../db/repos/push_devices.js';
import { deleteClientDevice, fetchClientDevice, insertClientDevice, type ClientDeviceRow } from '../db/repos/client_devices.js';
import { JsonableError, badRequest } from '../errors.js';
import type { PushDevice, PushDeviceKind } from '../lib/push/sender.js';
import { pushSender } from '../lib/push/notify.js';
import { basePushPayload } from '../lib/push/payload.js';
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
  const sender = pushSender(services);
  if (sender.registerDevice) await forward(services, () => sender.registerDevice!(user.realm_id, user.id, { kind, token, appId }));
}

/**
 * A call to the push service for a device change (Zulip's add_push_device_token and
 * remove_push_device_token): the local record is kept either way, and a service that cannot be
 * reached is Zulip's 502 so that the app registers again later.
 */
async function forward(services: ActionServices, call: () => Promise<void>): Promise<void> {
  try {
    await call();
  } catch (err) {
    services.log.warn({ err }, 'push service registration failed');
    throw new JsonableError('Network error while connecting to Zulip push notification service.', 'BAD_REQUEST', 502);
  }
}

export async function accessPushDevice(services: ActionServices, user: User, kind: PushDeviceKind, token: string): Promise<PushDeviceRow> {
  const row = await fetchPushDevice(services.db.kysely, user.id, kind, token);
  if (!row) throw badRequest('Token does not exist');
  return row;
}

export async function doRemovePushDeviceToken(services: ActionServices, user: User, device: PushDeviceRow): Promise<void> {
  await transaction(services.db, (tx) => deletePushDevice(tx, device.id));
  const sender = pushSender(services);
  if (sender.unregisterDevice) await forward(services, () => sender.unregisterDevice!(user.realm_id, user.id, { kind: device.kind as PushDeviceKind, token: device.token }));
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
  // Zulip's send_test_push_notification payloads.
  const payload = { ...basePushPayload(services.config, realm, user.id), event: 'test', time: now() };
  const apns = {
    alert: { title: 'Test notification', body: `This is a test notification from ${realm.name} (${realmUrl(services.config, realm)}).` },
    sound: 'default',
    custom: { zulip: payload },
  };
  await pushSender(services).send({ userId: user.id, realmId: realm.id, devices, payload, apns, gcmOptions: { priority: 'high' } });
}
