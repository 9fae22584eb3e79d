import { fetchActiveUserIds } from '../db/repos/users.js';
import { transaction, type Tx } from '../db/index.js';
import type { Realm } from '../db/tables.js';
import {
  deleteRealmPlaygroundRow,
  fetchRealmPlayground,
  fetchRealmPlaygrounds,
  insertRealmPlayground,
  realmPlaygroundExists,
  type RealmPlaygroundRow,
} from '../db/repos/realm_playgrounds.js';
import { badRequest } from '../errors.js';
import { formatRealmPlayground } from '../lib/format/realm_playgrounds.js';
import { parseUriTemplate } from '../lib/uri_template.js';
import type { ActionServices } from '../services.js';

export interface NewPlayground {
  name: string;
  pygmentsLanguage: string;
  urlTemplate: string;
}

const FIELD_BLANK = 'This field cannot be blank.';

/**
 * Zulip validates a playground as a Django model (full_clean): every field error is
 * collected, `msg` is the first one and `errors` maps each field (or `__all__`) to its
 * messages. Fields are checked in model order: url_template, name, pygments_language.
 */
export async function checkAddRealmPlayground(services: ActionServices, realm: Realm, pg: NewPlayground): Promise<void> {
  const errors: Record<string, string[]> = {};
  const add = (field: string, msg: string) => (errors[field] ??= []).push(msg);
  const template = pg.urlTemplate === '' ? null : parseUriTemplate(pg.urlTemplate);
  if (pg.urlTemplate === '') add('url_template', FIELD_BLANK);
  else if (!template) add('url_template', 'Invalid URL template.');
  if (pg.name === '') add('name', FIELD_BLANK);
  if (pg.pygmentsLanguage === '') add('pygments_language', FIELD_BLANK);
  if (template) {
    if (!template.variables.includes('code')) add('__all__', 'Missing the required variable "code" in the URL template');
    else if (template.variables.length !== 1) add('__all__', '"code" should be the only variable present in the URL template');
  }
  // Uniqueness is checked only for fields that passed their own validation.
  if (!errors.name && !errors.pygments_language && (await realmPlaygroundExists(services.db.kysely, realm.id, pg.pygmentsLanguage, pg.name))) {
    add('__all__', 'Realm playground with this Realm, Pygments language and Name already exists.');
  }
  const first = Object.values(errors)[0]?.[0];
  if (first !== undefined) throw badRequest(first, { errors });
}

export async function accessRealmPlayground(services: ActionServices, realm: Realm, id: number): Promise<RealmPlaygroundRow> {
  const row = await fetchRealmPlayground(services.db.kysely, realm.id, id);
  if (!row) throw badRequest('Invalid playground');
  return row;
}

/** Every active user of the realm gets the whole new list, as in Zulip. */
async function notifyRealmPlaygrounds(services: ActionServices, tx: Tx, realm: Realm, afterCommit: (cb: () => void) => void): Promise<void> {
  const playgrounds = (await fetchRealmPlaygrounds(tx, realm.id)).map(formatRealmPlayground);
  const userIds = await fetchActiveUserIds(tx, realm.id);
  afterCommit(() => services.events.send(realm.id, { type: 'realm_playgrounds', realm_playgrounds: playgrounds }, userIds));
}

/** Preconditions: checkAddRealmPlayground passed; the caller is an administrator. */
export async function doAddRealmPlayground(services: ActionServices, realm: Realm, pg: NewPlayground): Promise<RealmPlaygroundRow> {
  return transaction(services.db, async (tx, afterCommit) => {
    const row = await insertRealmPlayground(tx, {
      realm_id: realm.id,
      name: pg.name,
      pygments_language: pg.pygmentsLanguage,
      url_template: pg.urlTemplate,
    });
    await notifyRealmPlaygrounds(services, tx, realm, afterCommit);
    return row;
  });
}

export async function doRemoveRealmPlayground(services: ActionServices, realm: Realm, playground: RealmPlaygroundRow): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await deleteRealmPlaygroundRow(tx, playground.id);
    await notifyRealmPlaygrounds(services, tx, realm, afterCommit);
  });
}
