import { randomBytes } from 'node:crypto';
import type { Config } from '../../config.js';
import type { Realm } from '../../db/tables.js';
import { badRequest } from '../../errors.js';
import { lazyRequire } from '../lazy.js';
import { avatarUrl } from '../avatar.js';
import { realmUrl } from '../urls.js';
import type { PushMessage } from './payload.js';
import type { PushDeviceKind } from './sender.js';

const nacl = lazyRequire<typeof import('tweetnacl')>('tweetnacl');

/**
 * End-to-end encrypted push notifications (Zulip 11+, api_docs/mobile-notifications.md): the
 * device registers a symmetric key with the server, and every notification's JSON is sealed
 * with it before it leaves, so the push service and FCM/APNs see only ciphertext.
 */

/** The push_key prefix byte for libsodium's crypto_secretbox (XSalsa20-Poly1305), the one cryptosystem Zulip defines. */
const SECRETBOX = 0x31;

/** Zulip's validation of `push_key`: Base64 of the prefix byte and a 32-byte secretbox key. */
export function checkPushKey(b64: string): void {
  const raw = Buffer.from(b64, 'base64');
  if (raw.toString('base64') !== b64 || raw.length !== 1 + nacl().secretbox.keyLength || raw[0] !== SECRETBOX) throw badRequest('Invalid push_key');
}

/** A `token_id`: Base64 of the first 8 bytes of the token's SHA-256. */
export function checkTokenId(b64: string): void {
  const raw = Buffer.from(b64, 'base64');
  if (raw.toString('base64') !== b64 || raw.length !== 8) throw badRequest('Invalid token_id');
}

/**
 * crypto_secretbox_easy of the JSON under the device's key, sent as Base64 of the nonce
 * followed by the box (MAC then ciphertext), as the apps open it.
 * Precondition: checkPushKey passed for `pushKey`.
 */
export function encryptPushPayload(pushKey: string, data: Record<string, unknown>): string {
  const key = Buffer.from(pushKey, 'base64').subarray(1);
  const nonce = randomBytes(nacl().secretbox.nonceLength);
  const box = nacl().secretbox(Buffer.from(JSON.stringify(data), 'utf8'), nonce, key);
  return Buffer.concat([nonce, box]).toString('base64');
}

function base(config: Config, realm: Realm, userId: number): Record<string, unknown> {
  return { realm_name: realm.name, realm_url: realmUrl(config, realm), user_id: userId };
}

/** The encrypted JSON of a new-message notification (Zulip's E2EE message payload). */
export function formatE2eeMessagePayload(config: Config, realm: Realm, userId: number, m: PushMessage, content: string): Record<string, unknown> {
  const data: Record<string, unknown> = {
    ...base(config, realm, userId),
    type: 'message',
    message_id: m.message.id,
    time: m.message.date_sent,
    content,
    sender_id: m.sender.id,
    sender_full_name: m.sender.full_name,
    sender_avatar_url: avatarUrl(realmUrl(config, realm), m.sender),
  };
  if (m.message.type === 'stream') {
    data.recipient_type = 'channel';
    data.channel_id = m.message.stream_id;
    data.channel_name = m.streamName;
    data.topic = m.message.topic;
  } else {
    data.recipient_type = 'direct';
    const participants = (m.message.dm_key ?? '').split(',').filter(Boolean).map(Number);
    if (participants.length > 2) data.pm_users = participants.sort((a, b) => a - b).join(',');
  }
  if (m.mentionedGroup) {
    data.mentioned_user_group_id = m.mentionedGroup.id;
    data.mentioned_user_group_name = m.mentionedGroup.name;
  }
  return data;
}

export function formatE2eeRemovePayload(config: Config, realm: Realm, userId: number, messageIds: readonly number[]): Record<string, unknown> {
  return { ...base(config, realm, userId), type: 'remove', message_ids: [...messageIds] };
}

export function formatE2eeTestPayload(config: Config, realm: Realm, userId: number, time: number): Record<string, unknown> {
  return { ...base(config, realm, userId), type: 'test', time };
}

export interface E2eeDevice {
  pushKey: string;
  pushKeyId: number;
  tokenId: string;
  tokenKind: PushDeviceKind;
}

/**
 * The push service's push_requests for one notification: per device, its token ID, the
 * ciphertext under its key with the key's ID, and how urgently FCM or APNs should deliver it
 * (messages at once and shown to the user; removals in the background).
 */
export function e2eePushRequests(devices: readonly E2eeDevice[], data: Record<string, unknown>, isRemoval: boolean): Record<string, unknown>[] {
  return devices.map((d) => {
    const payload = { push_key_id: d.pushKeyId, encrypted_data: encryptPushPayload(d.pushKey, data) };
    if (d.tokenKind === 'fcm') return { token_id: d.tokenId, fcm_priority: isRemoval ? 'normal' : 'high', payload };
    return {
      token_id: d.tokenId,
      http_headers: { apns_priority: isRemoval ? 5 : 10, apns_push_type: isRemoval ? 'background' : 'alert' },
      // The app's notification service extension decrypts and replaces the placeholder alert.
      payload: { ...payload, aps: isRemoval ? { 'content-available': 1 } : { 'mutable-content': 1, alert: { title: 'New notification' }, sound: 'default' } },
    };
  });
}
