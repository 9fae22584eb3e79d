import type { StateFetcher } from './types.js';

/** POST /register keys for: drafts, navigation_views, saved_snippets, realm_playgrounds, realm_domains, has_vidcall_token. */
export const fetchOrgState: StateFetcher = async () => ({});
