import { claimDigest, fetchActiveRealms, fetchChannelMessagesSince, fetchChannelsCreatedSince, fetchDigestCandidates, fetchUnmutedSubscribedStreamIds } from '../db/repos/digests.js';
import { fetchStreamsByIds } from '../db/repos/streams.js';
import { fetchUsersByIds } from '../db/repos/users.js';
import type { Message, Realm, Stream, User } from '../db/tables.js';
import type { Services } from '../services.js';
import { avatarUrl } from './avatar.js';
import type { Mailer } from './email.js';
import { encodeHashComponent, eta, unsubscribeUrl } from './missed_message_email.js';
import { realmSettings } from './realm_settings.js';
import { ROLE_GUEST } from './roles.js';
import { realmIconUrl, realmUrl } from './urls.js';
import { userSettings } from './user_settings.js';

/**
 * Digest emails (Zulip's zerver/lib/digest.py): on its organization's digest weekday, each
 * user who has not been active for DIGEST_CUTOFF days is sent the hottest conversations of
 * their unmuted channels and the channels created since, when there is any of either.
 */

/** Zulip's DIGEST_CUTOFF: the days of inactivity before a digest, and the days it looks back. */
export const DIGEST_CUTOFF_DAYS = 5;
const MAX_HOT_TOPICS = 4;
/** One digest per digest day, however often the worker looks (Zulip's cron runs daily). */
const RESEND_AFTER_SECONDS = 24 * 3600;

/** The weekday of a Unix time in UTC, Monday 0 to Sunday 6, as Python's weekday() and digest_weekday count. */
export function zulipWeekday(at: number): number {
  return (new Date(at * 1000).getUTCDay() + 6) % 7;
}

/** Zulip's display_list: "A", "A and B", "A, B and C", or the first `limit` and "N others". */
export function displayList(values: readonly string[], limit: number): string {
  if (values.length === 1) return values[0]!;
  if (values.length <= limit) return `${values.slice(0, -1).join(', ')} and ${values[values.length - 1]}`;
  return `${values.slice(0, limit).join(', ')} and ${values.length - limit} others`;
}

type DigestMessage = Message & { sender_name: string; sender_is_bot: number };

/** Zulip's DigestTopic: the first two messages of a topic since the cutoff, and who (humans) wrote how much. */
interface DigestTopic {
  streamId: number;
  topic: string;
  samples: DigestMessage[];
  humanSenders: Set<string>;
  humanMessages: number;
}

function topicsOf(messages: readonly DigestMessage[]): DigestTopic[] {
  const topics = new Map<string, DigestTopic>();
  for (const m of messages) {
    const key = `${m.stream_id}:${m.topic_lc}`;
    let t = topics.get(key);
    if (!t) topics.set(key, (t = { streamId: m.stream_id!, topic: m.topic, samples: [], humanSenders: new Set(), humanMessages: 0 }));
    if (t.samples.length < 2) t.samples.push(m);
    if (!m.sender_is_bot) {
      t.humanSenders.add(m.sender_name);
      t.humanMessages++;
    }
  }
  return [...topics.values()];
}

/** Zulip's get_hot_topics: the two with the most human senders, then the longest, four in all. */
function hotTopics(topics: readonly DigestTopic[]): DigestTopic[] {
  const byDiversity = [...topics].sort((a, b) => b.humanSenders.size - a.humanSenders.size);
  const hot = byDiversity.slice(0, 2);
  for (const t of [...topics].sort((a, b) => b.humanMessages - a.humanMessages).slice(0, MAX_HOT_TOPICS)) {
    if (hot.length >= MAX_HOT_TOPICS) break;
    if (!hot.includes(t)) hot.push(t);
  }
  return hot;
}

function channelUrl(base: string, stream: Pick<Stream, 'id' | 'name'>): string {
  return `${base}/#narrow/channel/${stream.id}-${encodeHashComponent(stream.name.replace(/ /g, '-'))}`;
}

async function sendDigest(services: Services, mailer: Mailer, realm: Realm, user: User, hot: DigestTopic[], newChannels: Stream[], streams: Map<number, Stream>): Promise<void> {
  const base = realmUrl(services.config, realm);
  const unsubscribe = await unsubscribeUrl(services, realm, user.id, 'digest');
  const senders = new Map((await fetchUsersByIds(services.db.kysely, realm.id, [...new Set(hot.flatMap((t) => t.samples.map((m) => m.sender_id)))])).map((u) => [u.id, u]));
  const subject = `Zulip digest for ${realm.name}`;
  const data = {
    subject,
    realm: { name: realm.name, url: base, iconUrl: realmIconUrl(services.config, realm) },
    settingsUrl: `${base}/#settings/notifications`,
    unsubscribeUrl: unsubscribe,
    hotConversations: hot.map((t) => {
      const stream = streams.get(t.streamId)!;
      return {
        header: `#${stream.name} > ${t.topic}`,
        narrowUrl: `${channelUrl(base, stream)}/topic/${encodeHashComponent(t.topic)}`,
        messages: t.samples.map((m) => ({
          senderName: m.sender_name,
          avatarUrl: senders.has(m.sender_id) ? avatarUrl(base, senders.get(m.sender_id)!) : '',
          html: m.rendered_content.replace(/\b(href|src)="\//g, `$1="${base}/`),
          text: m.content,
        })),
        more: t.humanMessages - t.samples.length,
        participants: displayList([...t.humanSenders].sort(), 4),
      };
    }),
    newChannels: newChannels.map((s) => ({ name: s.name, url: channelUrl(base, s) })),
    newChannelsText: displayList(newChannels.map((s) => s.name), 1000),
  };
  await mailer.send({
    to: user.delivery_email,
    subject,
    text: eta.render('./digest.txt', data).replace(/\n{3,}/g, '\n\n').trim() + '\n',
    html: eta.render('./digest.html', data),
    headers: { 'List-Unsubscribe': `<${unsubscribe}>` },
  });
}

/**
 * Zulip's enqueue_emails and bulk_handle_digest_email for the time `at`: every organization
 * whose digest day it is. Each user's digest is claimed in the database just before it is
 * sent, so a user gets at most one per digest day whichever processes run this.
 * Returns how many digests this call sent.
 */
export async function sendDueDigests(services: Services, mailer: Mailer, at: number): Promise<number> {
  // Without SMTP, register reports digests off (realm_digest_emails_enabled), and none are made.
  if (services.config.smtpUrl === null) return 0;
  const db = services.db.kysely;
  const cutoff = at - DIGEST_CUTOFF_DAYS * 86400;
  const sentAfter = at - RESEND_AFTER_SECONDS;
  let sent = 0;
  for (const realm of await fetchActiveRealms(db)) {
    const settings = realmSettings(realm);
    if (!settings.digest_emails_enabled || settings.digest_weekday !== zulipWeekday(at)) continue;
    const users = (await fetchDigestCandidates(db, realm.id, cutoff, sentAfter)).filter((u) => userSettings(u).enable_digest_emails);
    if (users.length === 0) continue;
    const created = await fetchChannelsCreatedSince(db, realm.id, cutoff);
    const topicsByStream = new Map<number, DigestTopic[]>();
    const streams = new Map<number, Stream>();
    for (const user of users) {
      const streamIds = (await fetchUnmutedSubscribedStreamIds(db, user.id)).sort((a, b) => a - b);
      const missing = streamIds.filter((id) => !topicsByStream.has(id));
      if (missing.length) {
        const messages = await fetchChannelMessagesSince(db, realm.id, missing, cutoff);
        for (const id of missing) topicsByStream.set(id, topicsOf(messages.filter((m) => m.stream_id === id)));
        for (const s of await fetchStreamsByIds(db, realm.id, missing)) streams.set(s.id, s);
      }
      const hot = hotTopics(streamIds.flatMap((id) => (streams.get(id)?.deactivated ? [] : (topicsByStream.get(id) ?? []))));
      // Zulip's gather_new_streams: guests, who cannot see public channels, hear only of web-public ones.
      const newChannels = created.filter((s) => (user.role === ROLE_GUEST ? !!s.is_web_public : !s.invite_only));
      if (hot.length === 0 && newChannels.length === 0) continue;
      if (!(await claimDigest(db, user.id, at, sentAfter))) continue;
      await sendDigest(services, mailer, realm, user, hot, newChannels, streams);
      sent++;
    }
  }
  return sent;
}
