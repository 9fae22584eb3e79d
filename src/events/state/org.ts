import {
  fetchRealmDomainsCached,
  fetchRealmPlaygroundsCached,
  fetchUserDraftsCached,
  fetchUserNavigationViewsCached,
  fetchUserSavedSnippetsCached,
} from '../../db/cached.js';
import { formatDraft } from '../../lib/format/drafts.js';
import { formatNavigationView } from '../../lib/format/navigation_views.js';
import { formatRealmDomain } from '../../lib/format/realm_domains.js';
import { formatRealmPlayground } from '../../lib/format/realm_playgrounds.js';
import { formatSavedSnippet } from '../../lib/format/saved_snippets.js';
import { userSettings } from '../../lib/user_settings.js';
import type { StateFetcher } from './types.js';

/**
 * POST /register keys for the fetch types drafts, navigation_views, saved_snippets,
 * realm_playgrounds and realm_domains. `drafts` is empty while the user has draft
 * synchronization turned off, as in Zulip.
 */
export const fetchOrgState: StateFetcher = async ({ services, realm, user, want }) => {
  const db = services.db.kysely;
  const state: Record<string, unknown> = {};
  if (want('drafts')) {
    state.drafts = userSettings(user).enable_drafts_synchronization ? (await fetchUserDraftsCached(db, user.id)).map(formatDraft) : [];
  }
  if (want('navigation_views')) state.navigation_views = (await fetchUserNavigationViewsCached(db, user.id)).map(formatNavigationView);
  if (want('saved_snippets')) state.saved_snippets = (await fetchUserSavedSnippetsCached(db, user.id)).map(formatSavedSnippet);
  if (want('realm_playgrounds')) state.realm_playgrounds = (await fetchRealmPlaygroundsCached(db, realm.id)).map(formatRealmPlayground);
  if (want('realm_domains')) state.realm_domains = (await fetchRealmDomainsCached(db, realm.id)).map(formatRealmDomain);
  return state;
};
