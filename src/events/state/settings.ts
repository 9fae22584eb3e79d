import type { StateFetcher } from './types.js';

/** POST /register keys for: realm, user_settings, realm_domains-independent realm keys. */
export const fetchSettingsState: StateFetcher = async () => ({});
