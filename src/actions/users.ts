import { now, transaction, type Tx } from '../db/index.js';
import type { Realm, User } from '../db/tables.js';
import { insertUser } from '../db/repos/users.js';
import { fetchSystemGroups, insertGroupMembers } from '../db/repos/user_groups.js';
import { generateApiKey, hashPassword } from '../lib/secrets.js';
import { ROLE_MEMBER } from '../lib/roles.js';
import { SYSTEM_GROUP_FOR_ROLE } from '../lib/system_groups.js';
import type { Services } from '../services.js';

export interface CreateUserOptions {
  email: string;
  fullName: string;
  password?: string | null;
  role?: number;
  isBot?: boolean;
  botType?: number | null;
  botOwnerId?: number | null;
  timezone?: string;
  actingUser: User | null;
}

/** Adds a user to the system groups of their role (members are also full members). */
export async function addToRoleSystemGroups(tx: Tx, realmId: number, userId: number, role: number): Promise<void> {
  const groups = await fetchSystemGroups(tx, realmId);
  const byName = new Map(groups.map((g) => [g.name, g.id]));
  const names = [SYSTEM_GROUP_FOR_ROLE[role]!];
  if (role === ROLE_MEMBER) names.push('role:fullmembers');
  for (const n of names) await insertGroupMembers(tx, byName.get(n)!, [userId]);
}

/**
 * Creates an account. Preconditions (checked by callers): the email is valid and unused
 * in the realm, the role is one of ROLES.
 */
export async function doCreateUser(services: Services, realm: Realm, opts: CreateUserOptions): Promise<User> {
  const passwordHash = opts.password ? await hashPassword(opts.password) : null;
  const role = opts.role ?? ROLE_MEMBER;
  return transaction(services.db, async (tx) => {
    const user = await insertUser(tx, {
      realm_id: realm.id,
      email: opts.email,
      email_lc: opts.email.toLowerCase(),
      delivery_email: opts.email,
      full_name: opts.fullName,
      password_hash: passwordHash,
      api_key: generateApiKey(),
      role,
      is_bot: opts.isBot ? 1 : 0,
      bot_type: opts.isBot ? (opts.botType ?? 1) : null,
      bot_owner_id: opts.isBot ? (opts.botOwnerId ?? null) : null,
      timezone: opts.timezone ?? '',
      date_joined: now(),
    });
    await addToRoleSystemGroups(tx, realm.id, user.id, role);
    await tx
      .insertInto('audit_log')
      .values({
        realm_id: realm.id,
        acting_user_id: opts.actingUser?.id ?? null,
        modified_user_id: user.id,
        event_type: 'user_created',
        event_time: now(),
        extra_data: '{}',
      })
      .execute();
    return user;
  });
}
