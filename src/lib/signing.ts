import { createHmac, randomBytes } from 'node:crypto';
import type { Database } from '../db/index.js';
import { fetchOrCreateServerSecret } from '../db/repos/server_secrets.js';
import { safeEqual } from '../plugins/auth.js';

const keys = new WeakMap<Database, Promise<string>>();

/** The installation's signing key: one per database, so every process of a scaled-out install agrees. */
export function signingKey(db: Database): Promise<string> {
  let key = keys.get(db);
  if (!key) {
    key = fetchOrCreateServerSecret(db.kysely, 'signing_key', () => randomBytes(32).toString('base64url'));
    keys.set(db, key);
  }
  return key;
}

/** Serializes `value` with an HMAC so it can travel through a browser and come back untampered. */
export async function signObject(db: Database, purpose: string, value: unknown): Promise<string> {
  const payload = Buffer.from(JSON.stringify(value)).toString('base64url');
  const mac = createHmac('sha256', await signingKey(db)).update(`${purpose}:${payload}`).digest('base64url');
  return `${payload}.${mac}`;
}

/** The value signed by signObject for the same purpose, or null if it was altered. */
export async function unsignObject<T>(db: Database, purpose: string, signed: string): Promise<T | null> {
  const dot = signed.lastIndexOf('.');
  if (dot < 0) return null;
  const payload = signed.slice(0, dot);
  const mac = createHmac('sha256', await signingKey(db)).update(`${purpose}:${payload}`).digest('base64url');
  if (!safeEqual(mac, signed.slice(dot + 1))) return null;
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as T;
  } catch {
    return null;
  }
}
