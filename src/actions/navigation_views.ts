import { transaction } from '../db/index.js';
import type { User } from '../db/tables.js';
import {
  deleteNavigationViewRow,
  fetchNavigationView,
  insertNavigationView,
  navigationViewNameExists,
  updateNavigationViewRow,
  type NavigationViewRow,
} from '../db/repos/navigation_views.js';
import { badRequest, notFound } from '../errors.js';
import { formatNavigationView } from '../lib/format/navigation_views.js';
import type { ActionServices } from '../services.js';

/**
 * Fragments of the views the clients build in (Zulip's BUILT_IN_VIEW_FRAGMENTS): a user
 * may pin or hide them but not rename them.
 */
export const BUILT_IN_VIEW_FRAGMENTS: readonly string[] = [
  'inbox',
  'recent',
  'feed',
  'drafts',
  'narrow/has/reaction/sender/me',
  'narrow/is/mentioned',
  'narrow/is/starred',
];

const alreadyExists = () => badRequest('Navigation view already exists.');

export async function accessNavigationView(services: ActionServices, user: User, fragment: string): Promise<NavigationViewRow> {
  const row = await fetchNavigationView(services.db.kysely, user.id, fragment);
  if (!row) throw notFound('Navigation view does not exist.');
  return row;
}

/** Zulip's add_navigation_view checks; `fragment` and `name` arrive stripped and non-blank. */
export async function checkAddNavigationView(services: ActionServices, user: User, fragment: string, name: string | null): Promise<void> {
  if (BUILT_IN_VIEW_FRAGMENTS.includes(fragment)) {
    if (name !== null) throw badRequest('Built-in views cannot have a custom name.');
  } else if (name === null) {
    throw badRequest('Custom views must have a valid name.');
  }
  if (await fetchNavigationView(services.db.kysely, user.id, fragment)) throw alreadyExists();
  if (name !== null && (await navigationViewNameExists(services.db.kysely, user.id, name))) throw alreadyExists();
}

/** Zulip's update_navigation_view checks, made before looking the view up. */
export async function checkUpdateNavigationView(services: ActionServices, user: User, fragment: string, name: string | undefined): Promise<void> {
  if (name === undefined) return;
  if (BUILT_IN_VIEW_FRAGMENTS.includes(fragment)) throw badRequest('Built-in views cannot have a custom name.');
  if (await navigationViewNameExists(services.db.kysely, user.id, name)) throw alreadyExists();
}

export async function doAddNavigationView(
  services: ActionServices,
  user: User,
  view: { fragment: string; isPinned: boolean; name: string | null },
): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    const row = await insertNavigationView(tx, {
      user_id: user.id,
      fragment: view.fragment,
      is_pinned: view.isPinned ? 1 : 0,
      name: view.name,
    });
    afterCommit(() =>
      services.events.send(user.realm_id, { type: 'navigation_view', op: 'add', navigation_view: formatNavigationView(row) }, [user.id]),
    );
  });
}

export async function doUpdateNavigationView(
  services: ActionServices,
  user: User,
  view: NavigationViewRow,
  changes: { isPinned?: boolean; name?: string },
): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    // The event's `data` holds exactly the properties the request gave, possibly none.
    const data: { name?: string; is_pinned?: boolean } = {};
    const row: { name?: string; is_pinned?: number } = {};
    if (changes.name !== undefined) row.name = data.name = changes.name;
    if (changes.isPinned !== undefined) {
      data.is_pinned = changes.isPinned;
      row.is_pinned = changes.isPinned ? 1 : 0;
    }
    if (Object.keys(row).length > 0) await updateNavigationViewRow(tx, user.id, view.fragment, row);
    afterCommit(() =>
      services.events.send(user.realm_id, { type: 'navigation_view', op: 'update', fragment: view.fragment, data }, [user.id]),
    );
  });
}

export async function doRemoveNavigationView(services: ActionServices, user: User, view: NavigationViewRow): Promise<void> {
  await transaction(services.db, async (tx, afterCommit) => {
    await deleteNavigationViewRow(tx, user.id, view.fragment);
    afterCommit(() => services.events.send(user.realm_id, { type: 'navigation_view', op: 'remove', fragment: view.fragment }, [user.id]));
  });
}
