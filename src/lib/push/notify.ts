import type { Realm } from '../../db/tables.js';
import { fetchPushDevicesForUsers } from '../../db/repos/push_devices.js';
import { fetchUsersByIds } from '../../db/repos/users.js';
import type { ActionServices } from '../../services.js';
import { userSettings } from '../user_settings.js';
import { formatPushPayload, type PushMessage, type PushTrigger } from './payload.js';
import { logPushSender, type PushDevice, type PushDeviceKind, type PushSender } from './sender.js';

export function pushSender(services: ActionServices): PushSender {
  return services.push ?? logPushSender(services.log);
}

export interface OfflineRecipient {
  userId: number;
  trigger: PushTrigger;
}

/**
 * Hands a just-sent message to the push sender for recipients who will not see it live:
 * call it after the message's transaction commits, with the direct-message recipients and
 * mentioned users that have no active event queue (the sender excluded). Users who are
 * deactivated, are bots, turned off enable_offline_push_notifications or registered no
 * device are skipped. Never throws: a failing sender is logged, the message stays sent.
 */
export async function notifyOfflineRecipients(
  services: ActionServices,
  realm: Realm,
  message: PushMessage,
  recipients: readonly OfflineRecipient[],
): Promise<void> {
  try {
    // One notification per user: the first trigger listed for them wins.
    const seen = new Set<number>([message.sender.id]);
    const wanted = recipients.filter((r) => !seen.has(r.userId) && seen.add(r.userId));
    if (wanted.length === 0) return;
    const db = services.db.kysely;
    const users = await fetchUsersByIds(db, realm.id, wanted.map((r) => r.userId));
    const eligible = new Set(
      users.filter((u) => u.is_active && !u.is_bot && userSettings(u).enable_offline_push_notifications).map((u) => u.id),
    );
    const devices = new Map<number, PushDevice[]>();
    for (const d of await fetchPushDevicesForUsers(db, [...eligible])) {
      const list = devices.get(d.user_id) ?? [];
      list.push({ kind: d.kind as PushDeviceKind, token: d.token, appId: d.app_id });
      devices.set(d.user_id, list);
    }
    const sender = pushSender(services);
    for (const r of wanted) {
      const userDevices = devices.get(r.userId);
      if (!userDevices) continue;
      const payload = formatPushPayload(services.config, realm, r.userId, message, r.trigger);
      await sender.send({ userId: r.userId, devices: userDevices, payload });
    }
  } catch (err) {
    services.log.error({ err }, 'push notification failed');
  }
}
