import type { StateFetcher } from './types.js';

/** POST /register keys for: realm_user_groups. */
export const fetchGroupsState: StateFetcher = async () => ({});
