import type { StateFetcher } from './types.js';

/** POST /register keys for: subscription, stream. */
export const fetchStreamsState: StateFetcher = async () => ({});
