import type { NavigationViewRow } from '../../db/repos/navigation_views.js';

export interface NavigationViewDict {
  fragment: string;
  is_pinned: boolean;
  name: string | null;
}

/** A NavigationView object; built-in views carry `name: null`, as in Zulip. */
export function formatNavigationView(row: NavigationViewRow): NavigationViewDict {
  return { fragment: row.fragment, is_pinned: !!row.is_pinned, name: row.name };
}
