import { now, transaction } from '../db/index.js';
import type { Message, Subscription, User } from '../db/tables.js';
import {
  claimDueNotificationJobs,
  claimOutboxRows,
  deleteClaimedNotificationJobs,
  deleteClaimedOutboxRows,
  fetchDueOutboxUserIds,
  fetchLastActiveTimes,
  fetchUnreadAmong,
  insertNotificationOutboxRows,
  setActivePushFlag,
  type NotificationOutboxRow,
} from '../db/repos/notifications.js';
import { fetchMessagesByIds, fetchRecipientRows } from '../db/repos/messages.js';
import { fetchMutingUserIdsCached } from '../db/cached.js';
import { deletePushDevicesByToken, fetchPushDevicesForUsers } from '../db/repos/push_devices.js';
import { fetchRealmById } from '../db/repos/realms.js';
import { fetchStreamById } from '../db/repos/streams.js';
import { fetchSubscriptionRows } from '../db/repos/subscriptions.js';
import { fetchUserTopicsForTopic } from '../db/repos/user_topics.js';
import { fetchUserById, fetchUsersByIds } from '../db/repos/users.js';
import type { Mailer } from '../lib/email.js';
import { FLAG_BITS } from '../lib/message_flags.js';
import { mentionedUserGroup, sendMissedMessageEmails } from '../lib/missed_message_email.js';
import { loadGroupMembership } from '../lib/group_settings.js';
import { isIdle, notificationTriggers, type NotificationTrigger, type RecipientFacts } from '../lib/notification_data.js';
import { pushSender } from '../lib/push/notify.js';
import { formatApnsPayload, formatPushPayload, formatRemovePayloads } from '../lib/push/payload.js';
import { e2eePushRequests, formatE2eeMessagePayload, formatE2eeRemovePayload } from '../lib/push/e2ee.js';
import { fetchE2eePushDevices } from '../db/repos/client_devices.js';
import { doExpireE2eeTokens, e2eeDevice } from './push.js';
import type { PushDeviceKind } from '../lib/push/sender.js';
import { userSettings } from '../lib/user_settings.js';
import { VISIBILITY_INHERIT } from '../lib/topics.js';
import type { Services } from '../services.js';

/** How long a process holds a job or outbox rows while it works on them; another may retry after. */
export const NOTIFICATION_CLAIM_SECONDS = 60;

class ClaimLost extends Error {}

/** A push, the removal of pushes (messages read since), or a missed-message email. */
type OutboxKind = 'push' | 'remove' | 'email';

const flag = (v: number | null): boolean | null => (v === null ? null : v !== 0);

/** Jobs claimed and finished together. */
const JOB_BATCH = 100;

/**
 * Works out who is notified of sent messages (Zulip's get_recipient_info and
 * process_message_event, lib/notification_data.ts) and turns their jobs into outbox rows: a
 * push due now, a missed-message email due after the recipient's
 * email_notifications_batching_period_seconds. Idleness is judged now, when the job runs,
 * which is right after the send unless no process was running. Jobs are claimed and finished
 * a batch at a time, in two writes whatever the batch's size: a write (and, on SQLite, the
 * receipts it makes the first read of user_messages insert) per message had cost a send
 * five times its own CPU. Returns the number of jobs this process did.
 */
export async function processDueNotificationJobs(services: Services): Promise<number> {
  const db = services.db.kysely;
  let done = 0;
  for (;;) {
    const at = now();
    const until = at + NOTIFICATION_CLAIM_SECONDS;
    const ids = await claimDueNotificationJobs(db, services.db.dialect, at, until, JOB_BATCH);
    if (ids.length === 0) return done;
    const rows = await planNotifications(services, ids, at);
    try {
      await transaction(services.db, async (tx) => {
        await insertNotificationOutboxRows(tx, rows);
        // A claim that lapsed meanwhile belongs to another process now: it does the batch's jobs again.
        if ((await deleteClaimedNotificationJobs(tx, ids, until)) !== ids.length) throw new ClaimLost();
      });
    } catch (e) {
      if (e instanceof ClaimLost) return done;
      throw e;
    }
    done += ids.length;
    if (ids.length < JOB_BATCH) return done;
  }
}

interface PlannedRow {
  user_id: number;
  message_id: number;
  kind: 'push' | 'email';
  trigger: NotificationTrigger;
  due_at: number;
}

/**
 * Plans a batch of sent messages' notifications. What consecutive messages share (their
 * recipients' accounts, subscriptions to the channel, topic settings, who mutes the sender)
 * is read once per batch, and idleness once for everyone the batch could notify: per message,
 * those reads had been a millisecond of a 50-recipient message's CPU.
 */
async function planNotifications(services: Services, messageIds: readonly number[], at: number): Promise<PlannedRow[]> {
  const db = services.db.kysely;
  const found = await db.selectFrom('messages').select(['id', 'realm_id']).where('id', 'in', [...messageIds]).execute();
  const messages: Message[] = [];
  for (const realmId of new Set(found.map((f) => f.realm_id))) {
    messages.push(...(await fetchMessagesByIds(db, realmId, found.filter((f) => f.realm_id === realmId).map((f) => f.id))));
  }
  messages.sort((a, b) => a.id - b.id);
  const receipts = services.db.receipts;
  // Active accounts (null: not active), subscriptions by channel (null: none active), and
  // topic visibility policies by channel and topic, filled as the batch's messages need them.
  const users = new Map<number, User | null>();
  const subsByChannel = new Map<number, Map<number, Subscription | null>>();
  const policiesByTopic = new Map<string, { read: Set<number>; policies: Map<number, number> }>();
  const candidates: { messageId: number; m: Parameters<typeof notificationTriggers>[0]; f: RecipientFacts }[] = [];

  for (const message of messages) {
    const recipients = (receipts ? receipts.recipients(message.id) : await fetchRecipientRows(db, [message.id])).filter((r) => r.user_id !== message.sender_id);
    if (recipients.length === 0) continue;
    const ids = recipients.map((r) => r.user_id);
    const newUsers = ids.filter((id) => !users.has(id));
    if (newUsers.length) {
      for (const id of newUsers) users.set(id, null);
      for (const u of await fetchUsersByIds(db, message.realm_id, newUsers)) if (u.is_active) users.set(u.id, u);
    }
    const isPrivate = message.type === 'private';
    let subs: Map<number, Subscription | null> | undefined;
    let policies: Map<number, number> | undefined;
    if (!isPrivate) {
      const channel = message.stream_id!;
      subs = subsByChannel.get(channel);
      if (!subs) subsByChannel.set(channel, (subs = new Map()));
      const newSubs = ids.filter((id) => !subs!.has(id));
      if (newSubs.length) {
        for (const id of newSubs) subs.set(id, null);
        for (const sub of await fetchSubscriptionRows(db, newSubs, [channel])) if (sub.active) subs.set(sub.user_id, sub);
      }
      const topicKey = `${channel}\u0000${message.topic_lc}`;
      let topic = policiesByTopic.get(topicKey);
      if (!topic) policiesByTopic.set(topicKey, (topic = { read: new Set(), policies: new Map() }));
      const unasked = ids.filter((id) => !topic!.read.has(id));
      if (unasked.length) {
        for (const id of unasked) topic.read.add(id);
        for (const r of await fetchUserTopicsForTopic(db, unasked, channel, message.topic_lc)) topic.policies.set(r.user_id, r.visibility_policy);
      }
      policies = topic.policies;
    }
    const muting = await fetchMutingUserIdsCached(db, message.sender_id);
    const m = { senderId: message.sender_id, isPrivate, disableExternalNotifications: false };
    for (const r of recipients) {
      const u = users.get(r.user_id);
      if (!u) continue;
      const sub = subs?.get(r.user_id);
      if (!isPrivate && !sub) continue;
      const f: RecipientFacts = {
        userId: u.id,
        isBot: !!u.is_bot,
        flags: r.flags,
        settings: userSettings(u),
        subscription: sub
          ? { is_muted: !!sub.is_muted, push_notifications: flag(sub.push_notifications), email_notifications: flag(sub.email_notifications), wildcard_mentions_notify: flag(sub.wildcard_mentions_notify) }
          : null,
        visibilityPolicy: policies?.get(r.user_id) ?? VISIBILITY_INHERIT,
        mutesSender: muting.has(r.user_id),
      };
      // As Zulip does, idleness is looked up only for those the message could notify at all.
      const d = notificationTriggers(m, f, true);
      if (d.push !== null || d.email !== null) candidates.push({ messageId: message.id, m, f });
    }
  }
  if (candidates.length === 0) return [];
  const candidateIds = [...new Set(candidates.map((c) => c.f.userId))];
  const [withQueues, lastActive] = await Promise.all([services.queues.usersWithMessageQueues(candidateIds), fetchLastActiveTimes(db, candidateIds)]);
  const out: PlannedRow[] = [];
  for (const { messageId, m, f } of candidates) {
    const idle = isIdle(withQueues.has(f.userId), lastActive.get(f.userId) ?? null, at, false);
    const d = notificationTriggers(m, f, idle);
    if (d.push) out.push({ user_id: f.userId, message_id: messageId, kind: 'push', trigger: d.push, due_at: at });
    if (d.email) {
      const u = users.get(f.userId)!;
      if (u.delivery_email) out.push({ user_id: f.userId, message_id: messageId, kind: 'email', trigger: d.email, due_at: at + userSettings(u).email_notifications_batching_period_seconds });
    }
  }
  return out;
}

/**
 * Delivers one user's due rows of `kind`. Messages the user has read by now (or that were
 * deleted) are left out, as Zulip's workers skip them. The rows are deleted once delivered;
 * a process killed between the peer's acceptance and that deletion delivers them again after
 * the claim lapses.
 */
async function deliverOutbox(services: Services, mailer: Mailer, userId: number, kind: OutboxKind): Promise<void> {
  const db = services.db.kysely;
  const at = now();
  const until = at + NOTIFICATION_CLAIM_SECONDS;
  const rows = await claimOutboxRows(db, userId, kind, at, until);
  if (rows.length === 0) return;
  if (kind === 'remove') {
    await deliverRemoval(services, userId, rows);
  } else {
    const unread = await fetchUnreadAmong(db, userId, rows.map((r) => r.message_id), FLAG_BITS.read);
    const wanted = rows.filter((r) => unread.has(r.message_id));
    if (wanted.length && kind === 'push') await deliverPush(services, userId, wanted);
    else if (wanted.length) await sendMissedMessageEmails(services, mailer, userId, wanted);
  }
  await deleteClaimedOutboxRows(db, rows.map((r) => r.id), until);
}

async function deliverPush(services: Services, userId: number, rows: readonly NotificationOutboxRow[]): Promise<void> {
  const db = services.db.kysely;
  const sender = pushSender(services);
  const devices = (await fetchPushDevicesForUsers(db, [userId])).map((d) => ({ kind: d.kind as PushDeviceKind, token: d.token, appId: d.app_id }));
  const e2ee = sender.sendE2ee ? await fetchE2eePushDevices(db, [userId]) : [];
  if (devices.length === 0 && e2ee.length === 0) return;
  const realmId = (await db.selectFrom('users').select(['realm_id']).where('id', '=', userId).executeTakeFirstOrThrow()).realm_id;
  const user = (await fetchUserById(db, realmId, userId))!;
  const realm = (await fetchRealmById(db, realmId))!;
  const messages = new Map((await fetchMessagesByIds(db, realm.id, rows.map((r) => r.message_id))).map((m) => [m.id, m]));
  const peopleIds = new Set<number>();
  for (const m of messages.values()) {
    peopleIds.add(m.sender_id);
    for (const id of (m.dm_key ?? '').split(',').filter(Boolean)) peopleIds.add(Number(id));
  }
  const people = new Map((await fetchUsersByIds(db, realm.id, [...peopleIds])).map((u) => [u.id, u]));
  const groups = rows.some((r) => r.trigger === 'mentioned') ? await loadGroupMembership(db, realm.id) : null;
  for (const row of rows) {
    const message: Message | undefined = messages.get(row.message_id);
    const from = message && people.get(message.sender_id);
    if (!message || !from) continue;
    const streamName = message.stream_id === null ? null : ((await fetchStreamById(db, realm.id, message.stream_id))?.name ?? null);
    const groupNames = message.dm_key === null ? null : message.dm_key.split(',').map((id) => people.get(Number(id))?.full_name ?? '');
    const trigger = row.trigger as NotificationTrigger;
    const mentionedGroup = trigger === 'mentioned' && groups ? mentionedUserGroup([message], userId, groups) : null;
    const pm = { message, sender: from, streamName, groupNames, mentionedGroup };
    const payload = formatPushPayload(services.config, realm, userId, pm);
    if (devices.length) {
      const result = await sender.send({ userId, realmId: realm.id, devices, payload, apns: formatApnsPayload(services.config, realm, userId, pm, trigger), gcmOptions: { priority: 'high' } });
      if (result?.droppedTokens.length) await deletePushDevicesByToken(db, result.droppedTokens);
    }
    if (e2ee.length) {
      const data = formatE2eeMessagePayload(services.config, realm, userId, pm, String(payload.content));
      const { deletedTokenIds } = await sender.sendE2ee!(realm.id, e2eePushRequests(e2ee.map(e2eeDevice), data, false));
      if (deletedTokenIds.length) await doExpireE2eeTokens(services, realm, user, e2ee, deletedTokenIds);
    }
    // Zulip's active_mobile_push_notification: reading the message later takes the notification back.
    await setActivePushFlag(db, userId, [message.id], true);
  }
}

/**
 * Zulip's handle_remove_push_notification: the user read messages whose push notification is
 * still showing, so their devices take it back (the `remove` event).
 */
async function deliverRemoval(services: Services, userId: number, rows: readonly NotificationOutboxRow[]): Promise<void> {
  const db = services.db.kysely;
  const ids = rows.map((r) => r.message_id);
  const sender = pushSender(services);
  const devices = (await fetchPushDevicesForUsers(db, [userId])).map((d) => ({ kind: d.kind as PushDeviceKind, token: d.token, appId: d.app_id }));
  const e2ee = sender.sendE2ee ? await fetchE2eePushDevices(db, [userId]) : [];
  if (devices.length || e2ee.length) {
    const realmId = (await db.selectFrom('users').select(['realm_id']).where('id', '=', userId).executeTakeFirstOrThrow()).realm_id;
    const user = (await fetchUserById(db, realmId, userId))!;
    const realm = (await fetchRealmById(db, realmId))!;
    if (devices.length) {
      const { gcm, apns } = formatRemovePayloads(services.config, realm, userId, ids);
      const result = await sender.send({ userId, realmId: realm.id, devices, payload: gcm, apns, gcmOptions: { priority: 'normal' } });
      if (result?.droppedTokens.length) await deletePushDevicesByToken(db, result.droppedTokens);
    }
    if (e2ee.length) {
      const data = formatE2eeRemovePayload(services.config, realm, userId, [...ids].sort((a, b) => a - b));
      const { deletedTokenIds } = await sender.sendE2ee!(realm.id, e2eePushRequests(e2ee.map(e2eeDevice), data, true));
      if (deletedTokenIds.length) await doExpireE2eeTokens(services, realm, user, e2ee, deletedTokenIds);
    }
  }
  await setActivePushFlag(db, userId, ids, false);
}

/** Delivers every user's due push notifications and missed-message emails. */
export async function deliverDueNotifications(services: Services, mailer: Mailer): Promise<void> {
  for (const kind of ['push', 'remove', 'email'] as const) {
    for (;;) {
      const users = await fetchDueOutboxUserIds(services.db.kysely, kind, now(), 100);
      for (const userId of users) {
        try {
          await deliverOutbox(services, mailer, userId, kind);
        } catch (e) {
          services.log.error({ err: e, userId, kind }, 'notification delivery failed');
        }
      }
      if (users.length < 100) break;
    }
  }
}
