import { transaction, type Tx } from '../db/index.js';
import type { Realm } from '../db/tables.js';
import {
  deleteLinkifierRow,
  fetchLinkifierById,
  insertLinkifier,
  linkifierPatternExists,
  setLinkifierOrder,
  updateLinkifierRow,
  type LinkifierRow,
} from '../db/repos/linkifiers.js';
import { fetchLinkifiers } from '../db/repos/settings.js';
import { fetchActiveUserIds } from '../db/repos/users.js';
import { badRequest } from '../errors.js';
import { compileLinkifierPattern } from '../lib/markdown/index.js';
import { parseUriTemplate } from '../lib/uri_template.js';
import type { ActionServices } from '../services.js';

export interface LinkifierInput {
  pattern: string;
  urlTemplate: string;
}

const FIELD_BLANK = 'This field cannot be blank.';

/** The named groups of a Python-style pattern: (?P<name>...) or (?<name>...). */
function namedGroups(pattern: string): Set<string> {
  return new Set([...pattern.matchAll(/\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>/g)].map((m) => m[1]!));
}

/**
 * Zulip validates a linkifier as a Django model (full_clean): field errors first (blank
 * fields, an invalid URL template), then clean(): the pattern must compile and its named
 * groups must be exactly the template's variables, then uniqueness of the pattern. `msg` is
 * the first error and `errors` maps each field (or `__all__`) to its messages.
 */
export async function checkLinkifier(services: ActionServices, realm: Realm, l: LinkifierInput, exceptId?: number): Promise<void> {
  const errors: Record<string, string[]> = {};
  const add = (field: string, msg: string) => (errors[field] ??= []).push(msg);
  if (l.pattern === '') add('pattern', FIELD_BLANK);
  const template = l.urlTemplate === '' ? null : parseUriTemplate(l.urlTemplate);
  if (l.urlTemplate === '') add('url_template', FIELD_BLANK);
  else if (!template) add('url_template', 'Invalid URL template.');
  if (l.pattern !== '') {
    // Patterns must run in the Markdown renderer: what JavaScript cannot compile is refused.
    if (compileLinkifierPattern(l.pattern) === null) {
      add('__all__', 'Bad regular expression: invalid pattern');
    } else if (template) {
      const groups = namedGroups(l.pattern);
      const variables = new Set(template.variables);
      const missingInPattern = [...variables].filter((v) => !groups.has(v)).sort();
      const missingInTemplate = [...groups].filter((g) => !variables.has(g)).sort();
      if (missingInPattern.length) add('__all__', `Group '${missingInPattern[0]}' in URL template is not present in linkifier pattern.`);
      else if (missingInTemplate.length) add('__all__', `Group '${missingInTemplate[0]}' in linkifier pattern is not present in URL template.`);
    }
  }
  if (!errors.pattern && !errors.__all__ && (await linkifierPatternExists(services.db.kysely, realm.id, l.pattern, exceptId))) {
    add('__all__', 'Realm filter with this Realm and Pattern already exists.');
  }
  const first = Object.values(errors)[0]?.[0];
  if (first !== undefined) throw badRequest(first, { errors });
}

export async function accessLinkifier(services: ActionServices, realm: Realm, id: number): Promise<LinkifierRow> {
  const row = await fetchLinkifierById(services.db.kysely, realm.id, id);
  if (!row) throw badRequest('Linkifier not found.');
  return row;
}

/**
 * Zulip's notify_linkifiers: every active user gets the ordered list as `realm_linkifiers`
 * (empty for clients without linkifier_url_template, which could not use URL templates). The
 * legacy `realm_filters` event is not sent since feature level 176: its format cannot express
 * templates, and an empty one would clear the linkifiers of a client that still applies it.
 */
async function notifyLinkifiers(services: ActionServices, tx: Tx, afterCommit: (cb: () => void) => void, realm: Realm): Promise<void> {
  const [linkifiers, users] = await Promise.all([fetchLinkifiers(tx, realm.id), fetchActiveUserIds(tx, realm.id)]);
  afterCommit(() => {
    const send = (list: unknown[], value: boolean) =>
      services.events.send(realm.id, { type: 'realm_linkifiers', realm_linkifiers: list }, users, undefined, { capability: 'linkifier_url_template', value });
    send(linkifiers, true);
    send([], false);
  });
}

export async function doAddLinkifier(services: ActionServices, realm: Realm, l: LinkifierInput): Promise<number> {
  return transaction(services.db, async (tx, afterCommit) => {
    const id = await insertLinkifier(tx, realm.id, l.pattern, l.urlTemplate);
    await notifyLinkifiers(services, tx, afterCommit, realm);
    return id;
  });
}

export async function doUpdateLinkifier(services: ActionServices, realm: Realm, row: LinkifierRow, l: LinkifierInput): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await updateLinkifierRow(tx, row.id, l.pattern, l.urlTemplate);
    await notifyLinkifiers(services, tx, afterCommit, realm);
  });
}

export async function doRemoveLinkifier(services: ActionServices, realm: Realm, row: LinkifierRow): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await deleteLinkifierRow(tx, row.id);
    await notifyLinkifiers(services, tx, afterCommit, realm);
  });
}

/** Zulip's check_reorder_linkifiers: the list must name every linkifier of the realm exactly once. */
export async function checkReorderLinkifiers(services: ActionServices, realm: Realm, ids: readonly number[]): Promise<void> {
  if (new Set(ids).size !== ids.length) throw badRequest('The ordered list must not contain duplicated linkifiers');
  const existing = new Set((await fetchLinkifiers(services.db.kysely, realm.id)).map((l) => l.id));
  if (ids.length !== existing.size || ids.some((id) => !existing.has(id))) {
    throw badRequest('The ordered list must enumerate all existing linkifiers exactly once');
  }
}

export async function doReorderLinkifiers(services: ActionServices, realm: Realm, ids: readonly number[]): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    for (const [order, id] of ids.entries()) await setLinkifierOrder(tx, id, order);
    await notifyLinkifiers(services, tx, afterCommit, realm);
  });
}
