import type { Realm, User } from '../db/tables.js';
import { fetchRealmUsers, fetchUserByEmail } from '../db/repos/users.js';
import { doCreateUser } from '../actions/users.js';
import { checkAddSubscriptions, doAddSubscriptions } from '../actions/streams.js';
import { checkSendMessage, doSendMessage } from '../actions/messages.js';
import { ChannelCaller } from '../lib/access/streams.js';
import { ROLE_ADMINISTRATOR, ROLE_GUEST, ROLE_MEMBER, ROLE_MODERATOR, ROLE_OWNER } from '../lib/roles.js';
import type { ActionServices } from '../services.js';

const PEOPLE = [
  { key: 'iago', fullName: 'Iago', role: ROLE_ADMINISTRATOR },
  { key: 'prospero', fullName: 'Prospero from The Tempest', role: ROLE_MODERATOR },
  { key: 'cordelia', fullName: "Cordelia, Lear's daughter", role: ROLE_MEMBER },
  { key: 'hamlet', fullName: 'King Hamlet', role: ROLE_MEMBER },
  { key: 'othello', fullName: 'Othello, the Moor of Venice', role: ROLE_MEMBER },
  { key: 'polonius', fullName: 'Polonius', role: ROLE_GUEST },
] as const;
type Person = (typeof PEOPLE)[number]['key'] | 'owner';

const CHANNELS: { name: string; description: string; inviteOnly: boolean; isDefault: boolean; members: readonly Person[] }[] = [
  { name: 'general', description: 'Everything regarding this organization', inviteOnly: false, isDefault: true, members: ['owner', 'iago', 'prospero', 'cordelia', 'hamlet', 'othello', 'polonius'] },
  { name: 'design', description: 'How things look and feel', inviteOnly: false, isDefault: false, members: ['owner', 'cordelia', 'hamlet', 'prospero'] },
  { name: 'random', description: 'Anything goes', inviteOnly: false, isDefault: false, members: ['owner', 'iago', 'hamlet', 'othello', 'polonius'] },
  { name: 'core team', description: 'Private planning', inviteOnly: true, isDefault: false, members: ['owner', 'iago', 'cordelia'] },
];

const CHANNEL_MESSAGES: [Person, string, string, string][] = [
  ['owner', 'general', 'welcome', 'Welcome to **Parley**! This is a demo organization to try clients with.'],
  ['iago', 'general', 'welcome', 'Glad to be here. Try replying in this topic, or start a new one.'],
  ['hamlet', 'general', 'welcome', 'To be, or not to be, that is the question.'],
  ['polonius', 'general', 'welcome', 'Brevity is the soul of wit.'],
  ['cordelia', 'design', 'new logo', 'Here is a draft of the new logo. Feedback welcome!'],
  ['prospero', 'design', 'new logo', 'I like the colors. Could the font be a little bolder?'],
  ['hamlet', 'design', 'color palette', '```\nprimary: #6492fe\naccent:  #e8a33d\n```'],
  ['othello', 'random', 'lunch', 'Anyone up for lunch at noon?'],
  ['iago', 'random', 'lunch', 'Count me in :smile:'],
  ['cordelia', 'core team', 'roadmap', 'Let us plan the next release here.'],
];

const DIRECT_MESSAGES: [Person, Person[], string][] = [
  ['hamlet', ['othello'], 'Hi Othello, do you have a minute?'],
  ['othello', ['hamlet'], 'Sure, what is up?'],
  ['iago', ['cordelia', 'prospero'], 'A group conversation, to try direct messages with several people.'],
];

export interface DemoResult {
  users: { user_id: number; email: string; full_name: string; role: number; api_key: string }[];
  password: string;
  channels: string[];
  messages: number;
}

/**
 * Adds demo users, channels and messages through the same checks and actions as the API,
 * so every row is consistent and every event is sent. Running it again reuses the users and
 * channels and adds the messages once more.
 */
export async function runDemo(services: ActionServices, realm: Realm, opts: { domain: string; password: string }): Promise<DemoResult> {
  const db = services.db.kysely;
  const owner = (await fetchRealmUsers(db, realm.id)).find((u) => u.role === ROLE_OWNER && !u.is_bot && u.is_active);
  if (!owner) throw new Error('The organization has no active owner');
  const people = new Map<Person, User>([['owner', owner]]);
  for (const p of PEOPLE) {
    const email = `${p.key}@${opts.domain}`;
    const existing = await fetchUserByEmail(db, realm.id, email);
    const user =
      existing ?? (await doCreateUser(services, realm, { email, fullName: p.fullName, password: opts.password, role: p.role, actingUser: owner }));
    people.set(p.key, user);
  }

  for (const c of CHANNELS) {
    const caller = new ChannelCaller(db, realm, owner);
    const { plan } = await checkAddSubscriptions(services, caller, {
      subscriptions: [{ name: c.name, description: c.description }],
      principals: c.members.map((m) => people.get(m)!.id),
      authorizationErrorsFatal: true,
      inviteOnly: c.inviteOnly,
      isWebPublic: false,
      isDefaultStream: c.isDefault,
      messageRetentionDays: null,
      permissions: {},
    });
    await doAddSubscriptions(services, realm, owner, plan);
  }

  let messages = 0;
  for (const [sender, channel, topic, content] of CHANNEL_MESSAGES) {
    const prepared = await checkSendMessage(services, realm, people.get(sender)!, { type: 'stream', to: channel, topic, content, client: 'ParleyDemo' });
    await doSendMessage(services, prepared);
    messages += 1;
  }
  for (const [sender, recipients, content] of DIRECT_MESSAGES) {
    const to = JSON.stringify(recipients.map((r) => people.get(r)!.id));
    const prepared = await checkSendMessage(services, realm, people.get(sender)!, { type: 'private', to, topic: undefined, content, client: 'ParleyDemo' });
    await doSendMessage(services, prepared);
    messages += 1;
  }

  return {
    users: PEOPLE.map((p) => people.get(p.key)!).map((u) => ({ user_id: u.id, email: u.email, full_name: u.full_name, role: u.role, api_key: u.api_key })),
    password: opts.password,
    channels: CHANNELS.map((c) => c.name),
    messages,
  };
}
