import { createHash } from 'node:crypto';
import { now, transaction } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { deletePushDevice, fetchPushDevice, fetchPushDevicesForUsers, insertPushDevice, type PushDeviceRow } from '../db/repos/push_devices.js';
import { deleteClientDevice, fetchClientDevice, fetchE2eePushDevices, insertClientDevice, updateClientDevicePush, type ClientDevicePushUpdate, type ClientDeviceRow } from '../db/repos/client_devices.js';
import { JsonableError, badRequest, missingParam } from '../errors.js';
import type { E2eeRegistration, PushDevice, PushDeviceKind } from '../lib/push/sender.js';
import { checkPushKey, checkTokenId, e2eePushRequests, formatE2eeTestPayload, type E2eeDevice } from '../lib/push/e2ee.js';
import { PushBouncerError } from '../lib/push/bouncer.js';
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

export interface PushDeviceRegistration {
  pushKey: { pushKey: string; pushKeyId: number } | null;
  token: (E2eeRegistration & { tokenKind: PushDeviceKind }) | null;
}

/**
 * Zulip's register_push_device checks: the service must take encrypted registrations (the
 * token inside is sealed to its key: only Zulip's push notification service can use it); the
 * push key fields and the token fields each come complete; a first registration needs both.
 */
export function checkRegisterPushDevice(
  services: ActionServices,
  device: ClientDeviceRow,
  p: { push_key_id?: number; push_key?: string; token_kind?: string; token_id?: string; bouncer_public_key?: string; encrypted_push_registration?: string },
): PushDeviceRegistration {
  if (!pushSender(services).registerE2eeDevice) throw new JsonableError('Server is not configured to use push notification service.', 'PUSH_SERVICE_NOT_CONFIGURED', 400);
  const keyFields = { push_key_id: p.push_key_id, push_key: p.push_key };
  const tokenFields = { token_kind: p.token_kind, token_id: p.token_id, bouncer_public_key: p.bouncer_public_key, encrypted_push_registration: p.encrypted_push_registration };
  const given = (fields: Record<string, unknown>) => Object.values(fields).some((v) => v !== undefined);
  const complete = (fields: Record<string, unknown>) => {
    const missing = Object.entries(fields).find(([, v]) => v === undefined);
    if (missing) throw missingParam(missing[0]);
  };
  const withKey = given(keyFields) || device.push_key === null;
  const withToken = given(tokenFields) || device.push_key === null;
  // A registered device sends one group or both: a request with neither changes nothing.
  if (!withKey && !withToken) throw missingParam('push_key');
  if (withKey) complete(keyFields);
  if (withToken) complete(tokenFields);
  if (withKey) {
    checkPushKey(p.push_key!);
    if (p.push_key_id! < 0 || p.push_key_id! > 0xffffffff) throw badRequest('Invalid push_key_id');
  }
  if (withToken) checkTokenId(p.token_id!);
  return {
    pushKey: withKey ? { pushKey: p.push_key!, pushKeyId: p.push_key_id! } : null,
    token: withToken ? { tokenKind: p.token_kind as PushDeviceKind, tokenId: p.token_id!, bouncerPublicKey: p.bouncer_public_key!, encryptedPushRegistration: p.encrypted_push_registration! } : null,
  };
}

async function updateDevicePush(services: ActionServices, realm: Realm, user: User, deviceId: number, fields: ClientDevicePushUpdate, event: Record<string, unknown>): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await updateClientDevicePush(tx, deviceId, fields);
    afterCommit(() => services.events.send(realm.id, { type: 'device', op: 'update', device_id: deviceId, ...event }, [user.id]));
  });
}

/**
 * Zulip's do_register_push_device: a new key is kept at once; a new token is pending until the
 * push service accepts its sealed registration, which then makes it the device's token (or
 * records the service's error code for the app to act on). A service that cannot be reached
 * leaves the token pending, for the app to register again.
 */
export async function doRegisterPushDevice(services: ActionServices, realm: Realm, user: User, device: ClientDeviceRow, reg: PushDeviceRegistration): Promise<void> {
  if (reg.pushKey) await updateDevicePush(services, realm, user, device.id, { push_key: reg.pushKey.pushKey, push_key_id: reg.pushKey.pushKeyId }, { push_key_id: reg.pushKey.pushKeyId });
  if (!reg.token) return;
  const at = now();
  await updateDevicePush(
    services,
    realm,
    user,
    device.id,
    { pending_push_token_id: reg.token.tokenId, push_token_kind: reg.token.tokenKind, push_token_last_updated_timestamp: at, push_registration_error_code: null },
    { pending_push_token_id: reg.token.tokenId, push_token_last_updated_timestamp: at, push_registration_error_code: null },
  );
  try {
    await pushSender(services).registerE2eeDevice!(realm.id, reg.token);
  } catch (err) {
    if (!(err instanceof PushBouncerError) || err.code === null) {
      services.log.warn({ err }, 'push service E2EE registration failed');
      return;
    }
    await updateDevicePush(services, realm, user, device.id, { push_registration_error_code: err.code }, { push_registration_error_code: err.code });
    return;
  }
  await updateDevicePush(services, realm, user, device.id, { push_token_id: reg.token.tokenId, pending_push_token_id: null }, { push_token_id: reg.token.tokenId, pending_push_token_id: null });
  await removeLegacyRegistrations(services, user, reg.token.tokenId);
}

/**
 * Zulip (feature level 483): once a token is registered for encrypted notifications, the
 * user's older registration of the same token (its token_id is the first 8 bytes of the
 * token's SHA-256) is removed, here and at the push service, so the phone is not told twice.
 * The service not answering leaves its copy; the local one is gone either way.
 */
async function removeLegacyRegistrations(services: ActionServices, user: User, tokenId: string): Promise<void> {
  const rows = (await fetchPushDevicesForUsers(services.db.kysely, [user.id])).filter((r) => createHash('sha256').update(r.token).digest().subarray(0, 8).toString('base64') === tokenId);
  for (const row of rows) {
    await transaction(services.db, (tx) => deletePushDevice(tx, row.id));
    const sender = pushSender(services);
    if (!sender.unregisterDevice) continue;
    try {
      await sender.unregisterDevice(user.realm_id, user.id, { kind: row.kind as PushDeviceKind, token: row.token });
    } catch (err) {
      services.log.warn({ err }, 'push service did not remove a legacy registration');
    }
  }
}

export function e2eeDevice(row: ClientDeviceRow): E2eeDevice {
  return { pushKey: row.push_key!, pushKeyId: Number(row.push_key_id), tokenId: row.push_token_id!, tokenKind: row.push_token_kind as PushDeviceKind };
}

/** Zulip's send_e2ee_test_push_notification_api: the chosen device, or all, when registered; else NO_ACTIVE_PUSH_DEVICE. */
export async function checkSendE2eeTestPushNotification(services: ActionServices, user: User, deviceId: number | undefined): Promise<ClientDeviceRow[]> {
  const rows = (await fetchE2eePushDevices(services.db.kysely, [user.id])).filter((d) => deviceId === undefined || d.id === deviceId);
  if (rows.length === 0 || !pushSender(services).sendE2ee) throw new JsonableError('No active registered push device', 'NO_ACTIVE_PUSH_DEVICE', 400);
  return rows;
}

export async function doSendE2eeTestPushNotification(services: ActionServices, realm: Realm, user: User, rows: ClientDeviceRow[]): Promise<void> {
  const data = formatE2eeTestPayload(services.config, realm, user.id, now());
  const { deletedTokenIds } = await pushSender(services).sendE2ee!(realm.id, e2eePushRequests(rows.map(e2eeDevice), data, false));
  if (deletedTokenIds.length) await doExpireE2eeTokens(services, realm, user, rows, deletedTokenIds);
}

/**
 * The push service reported these token IDs expired (Zulip deletes the PushDevice rows): the
 * devices keep their key but lose the token until the app registers a new one.
 */
export async function doExpireE2eeTokens(services: ActionServices, realm: Realm, user: User, rows: readonly ClientDeviceRow[], tokenIds: readonly string[]): Promise<void> {
  for (const row of rows.filter((r) => r.push_token_id !== null && tokenIds.includes(r.push_token_id))) {
    await updateDevicePush(services, realm, user, row.id, { push_token_id: null }, { push_token_id: null });
  }
}
