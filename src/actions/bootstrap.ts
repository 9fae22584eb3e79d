import { countRealms } from '../db/repos/realms.js';
import { generatePassword } from '../lib/secrets.js';
import { ROLE_OWNER } from '../lib/roles.js';
import type { ActionServices } from '../services.js';
import { doCreateRealm } from './realms.js';
import { doCreateUser } from './users.js';

/**
 * On an empty database, creates the default organization and its owner, with the email
 * and password from PARLEY_OWNER_EMAIL / PARLEY_OWNER_PASSWORD or generated and announced
 * once. Safe when several processes start together: the realm's unique string_id decides.
 */
export async function ensureDefaultRealm(services: ActionServices, announce: (line: string) => void): Promise<void> {
  if ((await countRealms(services.db.kysely)) > 0) return;
  let realm;
  try {
    realm = await doCreateRealm(services, { stringId: '', name: services.config.realmName });
  } catch (e) {
    if ((await countRealms(services.db.kysely)) > 0) return;
    throw e;
  }
  const host = new URL(services.config.externalUrl).hostname;
  const email = services.config.ownerEmail ?? `owner@${host.includes('.') ? host : `${host}.localdomain`}`;
  const generated = services.config.ownerPassword === null;
  const password = services.config.ownerPassword ?? generatePassword();
  const owner = await doCreateUser(services, realm, {
    email,
    fullName: 'Owner',
    password,
    role: ROLE_OWNER,
    actingUser: null,
  });
  const url = services.config.externalUrl;
  announce('');
  announce(`  A new organization, "${realm.name}", was created. Log in at ${url} as its owner:`);
  announce(`    email:     ${owner.delivery_email}`);
  if (generated) announce(`    password:  ${password}   (shown only this once)`);
  announce(`    API key:   npx parley api-key --email ${owner.delivery_email}`);
  if (generated) announce(`  Change the password with: npx parley change-password --email ${owner.delivery_email} --password NEW`);
  announce('');
}
