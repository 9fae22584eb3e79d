import type { Config } from '../config.js';
import { now, type Tx } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { fetchUserByEmailCached } from '../db/cached.js';
import { fetchUserByEmail } from '../db/repos/users.js';
import { generateApiKey } from './secrets.js';
import { realmHost } from './urls.js';
import { ROLE_MEMBER, BOT_GENERIC } from './roles.js';

export const SYSTEM_BOTS = {
  notification: { localPart: 'notification-bot', fullName: 'Notification Bot' },
  welcome: { localPart: 'welcome-bot', fullName: 'Welcome Bot' },
  /** Zulip's EMAIL_GATEWAY_BOT: the default sender of mail to a channel's address. */
  emailGateway: { localPart: 'emailgateway', fullName: 'Email Gateway' },
} as const;
export type SystemBotName = keyof typeof SYSTEM_BOTS;

export function systemBotEmail(config: Config, realm: Pick<Realm, 'string_id'>, name: SystemBotName): string {
  return `${SYSTEM_BOTS[name].localPart}@${realmHost(config, realm)}`;
}

/**
 * The realm's system bot, created the first time it is needed (so organizations created
 * before it existed get one too). It belongs to no group and has no usable password.
 */
export async function fetchSystemBot(db: Tx, config: Config, realm: Realm, name: SystemBotName): Promise<User> {
  const email = systemBotEmail(config, realm, name);
  const existing = await fetchUserByEmailCached(db, realm.id, email);
  if (existing) return existing;
  await db
    .insertInto('users')
    .values({
      realm_id: realm.id,
      email,
      email_lc: email.toLowerCase(),
      delivery_email: email,
      full_name: SYSTEM_BOTS[name].fullName,
      password_hash: null,
      api_key: generateApiKey(),
      role: ROLE_MEMBER,
      is_bot: 1,
      bot_type: BOT_GENERIC,
      bot_owner_id: null,
      date_joined: now(),
      is_system_bot: 1,
    })
    .onConflict((oc) => oc.doNothing())
    .execute();
  return (await fetchUserByEmail(db, realm.id, email))!;
}
