import { sql, type Kysely } from 'kysely';
import { loadConfig, type Config } from '../../src/config.js';
import { buildApp, type App } from '../../src/app.js';
import type { DB } from '../../src/db/tables.js';
import type { Realm, User } from '../../src/db/tables.js';
import { fetchRealmByStringId } from '../../src/db/repos/realms.js';
import { fetchSystemGroups } from '../../src/db/repos/user_groups.js';
import { chunks } from '../../src/db/repos/streams.js';
import { insertSubscriptions } from '../../src/db/repos/subscriptions.js';
import { doCreateRealm } from '../../src/actions/realms.js';
import { doAddSubscriptions, type StreamCreationSpec } from '../../src/actions/streams.js';
import { apiEmailFor } from '../../src/lib/access/users.js';
import { generateApiKey } from '../../src/lib/secrets.js';
import { initialUserSettingsJson, realmUserSettingsDefaults } from '../../src/lib/user_settings.js';
import { transaction } from '../../src/db/index.js';
import { basicAuth } from './util.js';
import type { QueueUser } from '../load/jobs.js';
import type { OrgChannel, OrgPerson } from '../load/people.js';

export interface SeedSizes {
  /** Members of the default organization, all subscribed to the fan-out channel. */
  fanoutUsers: number;
  /** The first this many of them are the send channel's subscribers. */
  sendSubscribers: number;
  historyMessages: number;
  historyChannels: number;
  historyTopics: number;
  historySenders: number;
  registerUsers: number;
  registerChannels: number;
  registerMessages: number;
}

export interface Seeded {
  host: string;
  /** Default organization: fan-out members (the first ones also in the send channel). */
  users: QueueUser[];
  reader: QueueUser;
  sendStream: string;
  fanoutStream: string;
  historyChannels: { id: number; name: string }[];
  topicsPerChannel: number;
  topicName: (channelIndex: number, topicIndex: number) => string;
  searchWord: string;
  register: QueueUser;
  registerHost: string;
  timings: Record<string, number>;
}

/** The words message content is made of: search for one of them matches about 1 message in 997. */
const SEARCH_WORD = 'w123';

async function timed<T>(timings: Record<string, number>, name: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const r = await fn();
  timings[name] = Math.round(performance.now() - t0);
  return r;
}

interface Created {
  id: number;
  email: string;
  apiKey: string;
}

/**
 * Members created in bulk, as doCreateUser would leave them (row, API email, role system
 * groups) without its per-user events, which cost O(organization) each.
 */
async function createMembers(app: App, realm: Realm, prefix: string, count: number): Promise<Created[]> {
  const { config, db } = app.services;
  const settings = initialUserSettingsJson(realmUserSettingsDefaults(realm));
  const out: Created[] = [];
  await transaction(db, async (tx) => {
    const groups = new Map((await fetchSystemGroups(tx, realm.id)).map((g) => [g.name, g.id]));
    const now = Math.floor(Date.now() / 1000);
    const all = Array.from({ length: count }, (_, i) => i);
    for (const part of chunks(all, 500)) {
      const rows = part.map((i) => {
        const email = `${prefix}${i}@bench.example.com`;
        return {
          realm_id: realm.id,
          email,
          email_lc: email,
          delivery_email: email,
          full_name: `${prefix} ${i}`,
          password_hash: null,
          api_key: generateApiKey(),
          role: 400,
          date_joined: now,
          settings,
        };
      });
      const inserted = await tx.insertInto('users').values(rows).returning(['id', 'api_key', 'delivery_email']).execute();
      for (const r of inserted) out.push({ id: r.id, email: r.delivery_email, apiKey: r.api_key });
      for (const gid of [groups.get('role:members')!, groups.get('role:fullmembers')!]) {
        await tx.insertInto('group_members').values(inserted.map((r) => ({ group_id: gid, user_id: r.id }))).execute();
      }
    }
    for (const u of out) {
      const email = apiEmailFor(config, realm, { id: u.id, is_bot: 0, settings, timezone: '', delivery_email: u.email });
      if (email !== u.email) await tx.updateTable('users').set({ email, email_lc: email.toLowerCase() }).where('id', '=', u.id).execute();
    }
  });
  return out.sort((a, b) => a.id - b.id);
}

function channelSpec(name: string): StreamCreationSpec {
  return {
    name,
    description: `Benchmark channel ${name}`,
    inviteOnly: false,
    isWebPublic: false,
    historyPublicToSubscribers: true,
    messageRetentionDays: null,
    topicsPolicy: 'inherit',
    permissions: {},
    isDefault: false,
  };
}

async function createChannels(app: App, realm: Realm, actor: User | null, names: string[]): Promise<{ id: number; name: string }[]> {
  const out: { id: number; name: string }[] = [];
  for (const part of chunks(names, 50)) {
    const r = await doAddSubscriptions(app.services, realm, actor, { create: part.map(channelSpec), streams: [], users: [] });
    out.push(...r.created.map((s) => ({ id: s.id, name: s.name })));
  }
  return out.sort((a, b) => a.id - b.id);
}

async function subscribe(app: App, realmId: number, pairs: { user_id: number; stream_id: number }[]): Promise<void> {
  await transaction(app.services.db, async (tx) => {
    await insertSubscriptions(tx, pairs.map((p) => ({ ...p, realm_id: realmId, color: '#76ce90' })));
  });
}

/** `(VALUES (0, a), (1, b) ...)`: maps an index computed in SQL to an ID. */
function indexTable(ids: readonly number[]) {
  return sql.raw(`(VALUES ${ids.map((id, i) => `(${i}, ${id})`).join(', ')})`);
}

/**
 * Channel messages generated inside the database in one statement: message i goes to
 * channel i % C, topic (i / C) % T of that channel, from sender (i / 7) % S, one second
 * apart, with words from a 1,000-word vocabulary; then each message's sender and reader
 * rows in user_messages (read).
 */
async function generateMessages(
  db: Kysely<DB>,
  dialect: 'sqlite' | 'postgres',
  o: { realmId: number; count: number; channelIds: number[]; topicsPerChannel: number; senderIds: number[]; readerId: number; unreadEvery: number },
): Promise<void> {
  const C = o.channelIds.length;
  const series =
    dialect === 'postgres'
      ? sql`generate_series(0, ${sql.lit(o.count - 1)}) AS s(i)`
      : sql`(WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < ${sql.lit(o.count - 1)}) SELECT i FROM r) AS s`;
  const t0 = Math.floor(Date.now() / 1000) - o.count;
  const words = sql.raw(
    [13, 31, 57, 101, 173, 211].map((k, j) => `'w' || ((s.i * ${k} + ${j * 7}) % 997)`).join(` || ' ' || `),
  );
  const topic = sql.raw(`'topic ' || ((s.i % ${C}) * ${o.topicsPerChannel} + ((s.i / ${C}) % ${o.topicsPerChannel}))`);
  await sql`
    INSERT INTO messages (realm_id, sender_id, type, stream_id, topic, topic_lc, content, rendered_content, date_sent, sending_client)
    SELECT ${o.realmId}, snd.column2, 'stream', ch.column2, ${topic}, ${topic}, ${words}, '<p>' || ${words} || '</p>', ${t0} + s.i, 'bench'
    FROM ${series}
    JOIN ${indexTable(o.channelIds)} AS ch ON ch.column1 = s.i % ${sql.lit(C)}
    JOIN ${indexTable(o.senderIds)} AS snd ON snd.column1 = (s.i / 7) % ${sql.lit(o.senderIds.length)}
    ORDER BY s.i
  `.execute(db);
  const streamList = sql.join(o.channelIds.map((id) => sql.lit(id)));
  await sql`
    INSERT INTO user_messages (user_id, message_id, flags)
    SELECT sender_id, id, 1 FROM messages WHERE realm_id = ${o.realmId} AND stream_id IN (${streamList})
  `.execute(db);
  await sql`
    INSERT INTO user_messages (user_id, message_id, flags)
    SELECT ${o.readerId}, id, CASE WHEN id % ${sql.lit(o.unreadEvery)} = 0 THEN 0 ELSE 1 END
    FROM messages WHERE realm_id = ${o.realmId} AND stream_id IN (${streamList})
  `.execute(db);
  await sql`
    UPDATE streams SET first_message_id = (SELECT min(id) FROM messages WHERE messages.stream_id = streams.id)
    WHERE id IN (${streamList})
  `.execute(db);
}

/**
 * Fills a database the server has already initialized (migrations, default organization):
 * the default organization gets the fan-out members, the send and fan-out channels, and the
 * history channels with their messages; a second organization ("reg") gets the members,
 * channels and messages the register scenario needs.
 */
export async function seed(env: NodeJS.ProcessEnv, sizes: SeedSizes, log: (line: string) => void): Promise<Seeded> {
  const config: Config = loadConfig({}, env);
  const app = await buildApp(config, { announce: () => undefined });
  const timings: Record<string, number> = {};
  try {
    const { db } = app.services;
    const realm = (await fetchRealmByStringId(db.kysely, ''))!;
    const port = new URL(config.externalUrl).port;
    const host = `localhost:${port}`;

    const members = await timed(timings, 'users', () => createMembers(app, realm, 'member', sizes.fanoutUsers));
    const [sendStream, fanoutStream] = await createChannels(app, realm, null, ['bench send', 'bench fanout']);
    await timed(timings, 'subscriptions', async () => {
      await subscribe(app, realm.id, members.slice(0, sizes.sendSubscribers).map((u) => ({ user_id: u.id, stream_id: sendStream!.id })));
      await subscribe(app, realm.id, members.map((u) => ({ user_id: u.id, stream_id: fanoutStream!.id })));
    });
    log(`  ${members.length} members, channels "bench send" (${sizes.sendSubscribers}) and "bench fanout" (${members.length}) in ${timings.users! + timings.subscriptions!} ms`);

    const [reader, ...senders] = await createMembers(app, realm, 'historian', 1 + sizes.historySenders);
    const historyChannels = await createChannels(
      app,
      realm,
      null,
      Array.from({ length: sizes.historyChannels }, (_, i) => `history ${i}`),
    );
    await subscribe(
      app,
      realm.id,
      [reader!, ...senders].flatMap((u) => historyChannels.map((c) => ({ user_id: u.id, stream_id: c.id }))),
    );
    const topicsPerChannel = Math.max(1, Math.round(sizes.historyTopics / sizes.historyChannels));
    await timed(timings, 'messages', () =>
      generateMessages(db.kysely, db.dialect, {
        realmId: realm.id,
        count: sizes.historyMessages,
        channelIds: historyChannels.map((c) => c.id),
        topicsPerChannel,
        senderIds: senders.map((s) => s.id),
        readerId: reader!.id,
        unreadEvery: 1000,
      }),
    );
    log(`  ${sizes.historyMessages} messages in ${sizes.historyChannels} channels x ${topicsPerChannel} topics in ${timings.messages} ms`);

    const reg = await doCreateRealm(app.services, { stringId: 'reg', name: 'Register bench' });
    const regMembers = await timed(timings, 'registerUsers', () => createMembers(app, reg, 'regular', sizes.registerUsers));
    const regChannels = await createChannels(
      app,
      reg,
      null,
      Array.from({ length: sizes.registerChannels }, (_, i) => `channel ${i}`),
    );
    // Each member is in a tenth of the channels; each channel has a tenth of the members.
    const pairs: { user_id: number; stream_id: number }[] = [];
    regMembers.forEach((u, ui) => regChannels.forEach((c, ci) => ci % 10 === ui % 10 && pairs.push({ user_id: u.id, stream_id: c.id })));
    await subscribe(app, reg.id, pairs);
    const member = regMembers[0]!;
    const memberChannels = regChannels.filter((_, ci) => ci % 10 === 0).map((c) => c.id);
    if (sizes.registerMessages > 0) {
      await generateMessages(db.kysely, db.dialect, {
        realmId: reg.id,
        count: sizes.registerMessages,
        channelIds: memberChannels,
        topicsPerChannel: 10,
        senderIds: regMembers.filter((_, ui) => ui % 10 === 0).slice(1, 11).map((u) => u.id),
        readerId: member.id,
        unreadEvery: 10,
      });
    }
    log(`  organization "reg": ${regMembers.length} members, ${regChannels.length} channels, ${sizes.registerMessages} messages (the member has a tenth unread)`);

    // The state autovacuum keeps a long-running database in: statistics, visibility map and
    // hint bits set. Measured right after the bulk load instead, the first scenarios shared the
    // machine with autovacuum reading the new rows (millions of search-word entries among them).
    if (db.dialect === 'postgres') {
      const started = Date.now();
      await sql`VACUUM ANALYZE`.execute(db.kysely);
      log(`  VACUUM ANALYZE in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
    const user = (u: Created, h: string): QueueUser => ({ host: h, auth: basicAuth(u.email, u.apiKey) });
    return {
      host,
      users: members.map((u) => user(u, host)),
      reader: user(reader!, host),
      sendStream: sendStream!.name,
      fanoutStream: fanoutStream!.name,
      historyChannels,
      topicsPerChannel,
      topicName: (c, t) => `topic ${c * topicsPerChannel + t}`,
      searchWord: SEARCH_WORD,
      register: user(member, `reg.${host}`),
      registerHost: `reg.${host}`,
      timings,
    };
  } finally {
    await app.close();
  }
}

export interface SeededOrg {
  host: string;
  people: OrgPerson[];
  channels: OrgChannel[];
  subscriptions: number;
}

/**
 * An organization of `count` people (subdomain `stringId`) for the simulated-day scenarios:
 * channel k (k = 1, 2, ...) has count/k members, down to 5 (a long tail: one channel of
 * everyone, many small ones), each channel a different window of the people.
 */
export async function seedOrg(env: NodeJS.ProcessEnv, count: number, stringId: string, log: (line: string) => void): Promise<SeededOrg> {
  const config: Config = loadConfig({}, env);
  const app = await buildApp(config, { announce: () => undefined });
  try {
    const t0 = performance.now();
    const realm = await doCreateRealm(app.services, { stringId, name: `Organization of ${count}` });
    const members = await createMembers(app, realm, `person${stringId}-`, count);
    const sizes: number[] = [];
    for (let k = 1; sizes.length === 0 || sizes[sizes.length - 1]! > 5; k++) sizes.push(Math.max(Math.min(5, count), Math.floor(count / k)));
    const created = await createChannels(app, realm, null, sizes.map((_, k) => `team ${k + 1}`));
    const channels: OrgChannel[] = created.map((c, k) => {
      const start = (k * 7919) % count;
      return { id: c.id, members: Array.from({ length: sizes[k]! }, (_, j) => (start + j) % count) };
    });
    const pairs = channels.flatMap((c) => c.members.map((m) => ({ user_id: members[m]!.id, stream_id: c.id })));
    for (const part of chunks(pairs, 20_000)) await subscribe(app, realm.id, part);
    const port = new URL(config.externalUrl).port;
    const host = `${stringId}.localhost:${port}`;
    log(`  organization "${stringId}": ${count} people, ${channels.length} channels (${sizes[0]} down to ${sizes[sizes.length - 1]} members), ${pairs.length} subscriptions in ${Math.round(performance.now() - t0)} ms`);
    if (app.services.db.dialect === 'postgres') await sql`VACUUM ANALYZE`.execute(app.services.db.kysely);
    return {
      host,
      people: members.map((u) => ({ host, auth: basicAuth(u.email, u.apiKey), userId: u.id })),
      channels,
      subscriptions: pairs.length,
    };
  } finally {
    await app.close();
  }
}
