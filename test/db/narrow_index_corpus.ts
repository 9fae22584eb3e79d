import type { Kysely } from 'kysely';
import type { DB } from '../../src/db/tables.js';
import { FLAG_BITS } from '../../src/lib/message_flags.js';

/**
 * A synthetic organization for query-plan tests, written with multi-row inserts (no
 * rendering, no events): 40 users, 20 channels (the reader subscribed to half), 200
 * topics, 12,000 channel messages and 2,000 direct messages, with user_messages rows for
 * every recipient and a sprinkling of starred, unread and mentioned flags. Channel traffic
 * comes in bursts, as real conversations do, and channel 0 is a quiet channel.
 */
export interface Corpus {
  realmId: number;
  readerId: number;
  otherId: number;
  /** A user who sends one message in 200. */
  quietSenderId: number;
  userIds: number[];
  streamIds: number[];
  subscribedStreamIds: number[];
  messageCount: number;
}

const CHUNK = 500;

async function insertChunked<T extends keyof DB>(db: Kysely<DB>, table: T, rows: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    await db.insertInto(table).values(rows.slice(i, i + CHUNK) as never).execute();
  }
}

const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima'];

export async function buildCorpus(db: Kysely<DB>, channelMessages = 12_000, directMessages = 2_000): Promise<Corpus> {
  const now = 1_700_000_000;
  const realm = await db
    .insertInto('realms')
    .values({ string_id: 'corpus', name: 'Corpus', date_created: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  const userRows = Array.from({ length: 40 }, (_, i) => ({
    realm_id: realm.id,
    email: `user${i}@corpus.test`,
    email_lc: `user${i}@corpus.test`,
    delivery_email: `user${i}@corpus.test`,
    full_name: `User ${i}`,
    api_key: `corpus-key-${i}`,
    date_joined: now,
  }));
  await insertChunked(db, 'users', userRows);
  const userIds = (await db.selectFrom('users').select('id').where('realm_id', '=', realm.id).orderBy('id').execute()).map((r) => r.id);
  const streamRows = Array.from({ length: 20 }, (_, i) => ({
    realm_id: realm.id,
    name: `channel ${i}`,
    name_lc: `channel ${i}`,
    date_created: now,
    invite_only: i % 5 === 4 ? 1 : 0,
  }));
  // Multi-row inserts need every row to name the same columns.
  await insertChunked(db, 'streams', streamRows);
  const streamIds = (await db.selectFrom('streams').select('id').where('realm_id', '=', realm.id).orderBy('id').execute()).map((r) => r.id);
  const readerId = userIds[0]!;
  const otherId = userIds[1]!;
  const quietSenderId = userIds[userIds.length - 1]!;
  const busySenders = userIds.slice(0, -1);
  // Each channel has a quarter of the users; the reader is in the even channels.
  const subscribers = new Map<number, number[]>();
  streamIds.forEach((sid, i) => {
    const members = userIds.filter((_, j) => (j + i) % 4 === 0 || (j === 0 && i % 2 === 0));
    subscribers.set(sid, [...new Set(members)]);
  });
  const subs: Record<string, unknown>[] = [];
  for (const [sid, members] of subscribers) for (const uid of members) subs.push({ user_id: uid, stream_id: sid, realm_id: realm.id });
  await insertChunked(db, 'subscriptions', subs);

  const messages: Record<string, unknown>[] = [];
  const recipients: number[][] = [];
  let dmCount = 0;
  for (let i = 0; i < channelMessages + directMessages; i++) {
    const sender = i % 200 === 11 ? quietSenderId : busySenders[i % busySenders.length]!;
    const text = `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} number ${i}`;
    if ((i % 7 === 3 && dmCount < directMessages) || i - dmCount >= channelMessages) {
      dmCount++;
      // One in 32 is the reader's 1:1 conversation with otherId; the rest are spread around.
      const ours = dmCount % 32 === 0;
      const peer = ours ? (sender === readerId ? otherId : readerId) : busySenders[(i * 13) % busySenders.length]!;
      const first = ours ? (sender === readerId ? readerId : otherId) : sender;
      const participants = [...new Set([first, peer, ...(i % 3 === 0 && !ours ? [readerId] : [])])].sort((a, b) => a - b);
      messages.push({
        realm_id: realm.id, sender_id: first, type: 'private', stream_id: null, topic: '', topic_lc: '', dm_key: participants.join(','),
        content: text, rendered_content: `<p>${text}</p>`, date_sent: now + i,
      });
      recipients.push(participants);
    } else {
      // Conversations come in bursts of 25 messages to one channel; the first channel is a
      // quiet one (one burst in 200), the others share the rest of the traffic.
      const burst = Math.floor(i / 25);
      const sid = burst % 200 === 7 ? streamIds[0]! : streamIds[1 + (burst % (streamIds.length - 1))]!;
      const topic = `topic ${(i * 31) % 200}`;
      messages.push({
        realm_id: realm.id, sender_id: sender, type: 'stream', stream_id: sid, topic, topic_lc: topic, dm_key: null,
        content: text, rendered_content: `<p>${text}</p>`, date_sent: now + i,
      });
      recipients.push(subscribers.get(sid)!);
    }
  }
  await insertChunked(db, 'messages', messages);
  const ids = (await db.selectFrom('messages').select('id').where('realm_id', '=', realm.id).orderBy('id').execute()).map((r) => r.id);
  const ums: Record<string, unknown>[] = [];
  ids.forEach((id, i) => {
    const isPrivate = messages[i]!.type === 'private';
    for (const uid of recipients[i]!) {
      let flags = i % 10 === 0 ? 0 : FLAG_BITS.read;
      if (i % 50 === 0) flags |= FLAG_BITS.starred;
      if (i % 97 === 0) flags |= FLAG_BITS.mentioned;
      if (isPrivate) flags |= FLAG_BITS.is_private;
      ums.push({ user_id: uid, message_id: id, flags });
    }
  });
  await insertChunked(db, 'user_messages', ums);
  return {
    realmId: realm.id,
    readerId,
    otherId,
    quietSenderId,
    userIds,
    streamIds,
    subscribedStreamIds: streamIds.filter((sid) => subscribers.get(sid)!.includes(readerId)),
    messageCount: ids.length,
  };
}
