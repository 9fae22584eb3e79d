import type { StateFetcher } from './types.js';

/** POST /register keys for: invites_changed. */
export const fetchInvitesState: StateFetcher = async () => ({});
