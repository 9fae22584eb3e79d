import type { StateFetcher } from './types.js';

/** POST /register keys for: realm_user, custom_profile_fields. */
export const fetchUsersState: StateFetcher = async () => ({});
